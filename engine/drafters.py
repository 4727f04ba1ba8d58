"""Drafters propose the next few tokens; the target decides. One small interface, three kinds:

- `ModelDrafter`: a small same-family model. Its KV cache keeps every accepted token: before each
  draft only the tokens it has not seen are decoded, and only rejected ones are removed, so nothing
  accepted is decoded twice (llama.cpp's common_speculative does the same with its prompt reuse).
- `LookupDrafter`: prompt-lookup decoding: find the latest earlier occurrence of the last n tokens
  in the prompt or the text so far, and propose what followed it. No model; free to run; strong on
  edits that repeat their input.
- `NoDrafter`: plain decoding.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .model import Model
from .sampling import distribution, is_greedy, sample, top_probability
from .settings import SamplingSettings


@dataclass
class Draft:
    tokens: list[int] = field(default_factory=list)
    # Proposal distributions for rejection sampling (dense, one per token); None means the
    # proposals are deterministic (point masses), as for prompt lookup or greedy drafting.
    q: list[np.ndarray] | None = None
    time_s: float = 0.0  # all the time the drafter took, catching up included
    # Of time_s, the part spent catching the draft's KV cache up with tokens it had not seen (after
    # drafting was off for a while). Not a cost of drafting itself: the controller leaves it out.
    sync_s: float = 0.0


class Drafter(Protocol):
    kind: str
    name: str

    def draft(self, history: list[int], n_max: int, sampling: SamplingSettings,
              rng: np.random.Generator) -> Draft:
        """Propose up to n_max tokens to follow `history` (prompt + everything emitted so far)."""

    def prefill(self, prompt: list[int]) -> None:
        """A new prompt was decoded by the target: read it now, alongside (draft models)."""

    def close(self) -> None: ...


class NoDrafter:
    kind = "none"
    name = "none"

    def draft(self, history, n_max, sampling, rng) -> Draft:
        return Draft()

    def prefill(self, prompt: list[int]) -> None:
        pass

    def close(self) -> None:
        pass


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the shared prefix. The usual case (one list extends the other) is a single
    C-level comparison; only a real divergence pays for a numpy scan."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    diff = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(diff[0])


class ModelDrafter:
    """Drafts with a small model; stops early when its confidence drops below p_min."""

    kind = "model"

    def __init__(self, model: Model, p_min: float) -> None:
        self.model = model
        self.name = model.name
        self.p_min = p_min
        self.cached: list[int] = []  # tokens whose KV entries the draft context holds
        self.decoded_tokens = 0  # every token ever decoded by the draft (tests check reuse)

    def _sync(self, history: list[int]) -> None:
        """Make the draft's KV hold history[:-1] and compute logits after history[-1]."""
        keep = common_prefix(self.cached, history)
        if keep == len(history):
            keep -= 1  # the last token must be decoded again to get its logits
        if keep < len(self.cached):
            if not self.model.trim(keep):
                self.model.clear()
                keep = 0
        todo = history[keep:]
        self.model.decode_prompt(todo, keep)
        self.decoded_tokens += len(todo)
        self.cached = list(history)

    def draft(self, history, n_max, sampling, rng) -> Draft:
        t0 = time.perf_counter()
        out = Draft()
        if n_max <= 0:
            return out
        # Never let the draft's context overflow: leave room for the tokens it will decode.
        if len(history) + n_max + 1 > self.model.n_ctx:
            n_max = self.model.n_ctx - len(history) - 1
            if n_max <= 0:
                return out
        self._sync(history)
        out.sync_s = time.perf_counter() - t0
        greedy = is_greedy(sampling)
        qs: list[np.ndarray] = []
        for i in range(n_max):
            logits = self.model.logits()
            if greedy:
                tok = int(logits.argmax())
                if top_probability(logits) < self.p_min:
                    break
            else:
                q = distribution(logits, sampling)
                if float(q.max()) < self.p_min:
                    break
                tok = sample(q, rng)
                qs.append(q)
            out.tokens.append(tok)
            if i + 1 < n_max:  # the last drafted token needs no logits
                pos = len(self.cached)
                self.model.decode([tok], pos)
                self.decoded_tokens += 1
                self.cached.append(tok)
        out.q = None if greedy else qs
        out.time_s = time.perf_counter() - t0
        return out

    def prefill(self, prompt: list[int]) -> None:
        if prompt and len(prompt) < self.model.n_ctx:
            self._sync(prompt)

    def close(self) -> None:
        self.model.close()


class LookupDrafter:
    """Prompt-lookup drafting with an incrementally maintained n-gram index."""

    kind = "lookup"
    name = "lookup"

    def __init__(self, ngram_min: int = 1, ngram_max: int = 4) -> None:
        self.ngram_min = max(1, ngram_min)
        self.ngram_max = max(self.ngram_min, ngram_max)
        self._seen: list[int] = []
        self._index: list[dict[tuple[int, ...], int]] = []
        self._reset()

    def _reset(self) -> None:
        self._seen = []
        self._index = [dict() for _ in range(self.ngram_max + 1)]

    def _update(self, history: list[int]) -> None:
        """Index every n-gram whose continuation is known: key -> position of the next token."""
        if common_prefix(self._seen, history) < len(self._seen):  # a new request: rebuild
            self._reset()
        # An n-gram ending at j-1 is indexed once token j exists, i.e. for j < len(history).
        first_j = max(1, len(self._seen))
        for j in range(first_j, len(history)):
            for n in range(self.ngram_min, self.ngram_max + 1):
                if j - n < 0:
                    break
                self._index[n][tuple(history[j - n : j])] = j
        self._seen = list(history)

    def prefill(self, prompt: list[int]) -> None:
        pass  # indexing is incremental and cheap: it happens at the first draft

    def draft(self, history, n_max, sampling, rng) -> Draft:
        t0 = time.perf_counter()
        out = Draft()
        if n_max <= 0 or not history:
            return out
        self._update(history)
        for n in range(min(self.ngram_max, len(history)), self.ngram_min - 1, -1):
            j = self._index[n].get(tuple(history[-n:]))
            if j is not None:
                out.tokens = history[j : j + n_max]
                break
        out.time_s = time.perf_counter() - t0
        return out

    def close(self) -> None:
        pass
