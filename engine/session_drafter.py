"""The session drafter: prompt lookup that remembers the session.

Two n-gram indexes (engine/session_index.py): one over the current request's prompt and output
(rebuilt when a new request does not extend the last one: prompt lookup), and one over what the
session saw before: files the user opened, earlier chat answers and completions. Each draft takes
the occurrences of the text's tail in both and follows the continuation they agree on most
(frequency weighted by match length, recency breaking ties). How far it drafts follows the match
length and the drafter's own measured acceptance (SuffixDecoding's max_spec = factor * match_len,
the factor growing with acceptance); the policy still picks the length it asks for. (With this
cap lifted, the policy's per-match-length evidence alone cut the guesses less well where
verification is cheap: the memory-bound built-in tasks ran slower, compute-bound the same.)

It is free to run (microseconds of numpy), so the policy treats it as prompt lookup. The
session index lives in memory, bounded by `memory_bytes`; feeding it (`remember`) happens on the
engine's worker thread, between requests, never on a keystroke. With a `SessionStore` (a user
asked for it in config) the memory is read back at start and written at `close`.
"""

from __future__ import annotations

import math
import time
from typing import Sequence

import numpy as np

from .drafters import Draft, Drafter, common_prefix, distinct_branches
from .session_index import NgramIndex, best_continuation
from .session_store import SessionStore

DEFAULT_MEMORY_MB = 32
_REQUEST_MEMORY = 4 << 20  # the request's own index: prompt + output fit a context window
_REQUEST_NGRAMS = (1, 2, 3, 4, 6, 8)
_SESSION_NGRAMS = (2, 3, 4, 6, 8)  # a 1-token match across a whole session is noise
_DECAY = 0.9  # weight of older drafts in the drafter's own acceptance figure
_FACTOR_MIN = 1.0  # draft up to factor * match length tokens; factor grows with acceptance ...
_FACTOR_SPAN = 4.0  # ... up to _FACTOR_MIN + _FACTOR_SPAN at full acceptance


class SessionDrafter:
    """Drafts from the request's text and the session's memory (see the module docstring)."""

    kind = "session"
    name = "session"
    judge_unsent = False

    def parts(self) -> tuple[Drafter | None, Drafter | None]:
        return self, None

    def __init__(self, memory_mb: float = DEFAULT_MEMORY_MB, store: SessionStore | None = None) -> None:
        if memory_mb <= 0:
            raise ValueError(f"the session index needs a positive memory cap, got {memory_mb} MB")
        session_bytes = max(int(memory_mb * (1 << 20)) - _REQUEST_MEMORY, 1 << 16)
        self.memory = NgramIndex(session_bytes, ngrams=_SESSION_NGRAMS)
        self.request = NgramIndex(_REQUEST_MEMORY, ngrams=_REQUEST_NGRAMS)
        self._seen: list[int] = []  # the request text the request index holds
        self._drafted = 0.0  # decayed draft tokens / accepted tokens: the drafter's acceptance
        self._accepted = 0.0
        self._last = 0
        self.last_source = ""
        self.store = store
        self.store_note = ""  # what loading the store did, for the user
        self.save_error: str | None = None  # why the store could not be written at `close`
        if store is not None:
            tokens, self.store_note = store.load()
            if tokens is not None:
                self.memory.add_text(tokens)

    @property
    def nbytes(self) -> int:
        return self.memory.nbytes + self.request.nbytes

    @property
    def acceptance(self) -> float:
        return (self._accepted + 1.0) / (self._drafted + 2.0)

    # -- the session's memory ---------------------------------------------------------------------
    def remember(self, tokens: Sequence[int] | np.ndarray) -> None:
        """Index a text the session saw (a file, an answer, a completion) as its own document."""
        if len(tokens):
            self.memory.add_document(tokens)

    def clear_memory(self) -> None:
        """Forget everything the session fed (bench: each task starts from its own context; the
        app's "Forget session memory"; a replay's headless re-runs)."""
        self.memory.clear()

    # -- drafter verbs ----------------------------------------------------------------------------
    def begin(self, prompt: list[int]) -> None:
        pass  # the request index catches up at the first draft (numpy: microseconds per token)

    def lag(self, history: list[int], window: int | None = None) -> int:
        return 0

    def _sync(self, history: list[int]) -> None:
        keep = common_prefix(self._seen, history)
        if keep < len(self._seen) or not self._seen:
            self.request.clear()
            self.request.add_document(history)
        else:
            self.request.extend(history[keep:])
        self._seen = list(history)

    def draft(self, history, n_max, sampling, rng, window=None) -> Draft:
        t0 = time.perf_counter()
        out = Draft()
        if n_max <= 0 or not history:
            return out
        self._sync(history)
        cands = self.request.lookup(history, n_max) + self.memory.lookup(history, n_max, min_n=2)
        if cands:
            tokens, match = best_continuation(cands, n_max)
            factor = _FACTOR_MIN + _FACTOR_SPAN * self.acceptance
            out.tokens = tokens[: max(1, math.ceil(factor * match))]
            out.match = match
            out.branches, out.branch_matches = distinct_branches(
                out.tokens, [(c.match_len, c.position, c.continuation[: len(out.tokens)]) for c in cands])
        self._last = len(out.tokens)
        out.time_s = time.perf_counter() - t0
        return out

    def accept(self, n_accepted: int) -> None:
        self._drafted = self._drafted * _DECAY + self._last
        self._accepted = self._accepted * _DECAY + n_accepted
        self._last = 0

    def truncate(self, n: int) -> None:
        self._last = min(self._last, n)  # tokens not sent are neither accepted nor rejected

    def rewind(self, n_keep: int) -> None:
        if n_keep < len(self._seen):
            self._seen = []

    def forget(self) -> None:
        self._seen = []  # the session's memory is text, not a model's cache: it stays

    def close(self) -> None:
        if self.store is not None:
            self.save_error = self.store.save(self.memory.held_text())
            self.store = None  # once: a closed drafter's memory is what was saved
