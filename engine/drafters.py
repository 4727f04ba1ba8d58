"""Drafters propose the next few tokens; the target decides. One small interface, three kinds:

- `ModelDrafter`: a small same-family model. Its KV cache keeps every accepted token: before each
  draft only the tokens it has not seen are decoded, and only rejected ones are removed, so nothing
  accepted is decoded twice (llama.cpp's common_speculative does the same with its prompt reuse).
  It reads lazily: a prompt, or text generated while drafting was off, is decoded only when a draft
  is asked for, and then at most a window of recent context. A draft that is a requantized copy of
  its target copies the target's KV cache instead (the target has read the whole text already).
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

# A draft model that is far behind the text (a new prompt, a long stretch generated while drafting
# was off) reads only the first few tokens (BOS, a FIM marker) and the last CATCHUP_WINDOW tokens:
# a small draft predicts the next tokens from recent context, and catching up on a whole file
# costs more than drafting on it ever saves. On FIM tasks with long prompts (demo target, its
# Q4_0 copy as draft) a 512-token window accepted as well as reading everything, at a fraction
# of the catch-up, and 256 or 128 clearly worse. So 512: less is too little context.
CATCHUP_WINDOW = 512
CATCHUP_HEAD = 4
PROBE_REACH = 4  # a probe with window w extends a view that is at most 4 w tokens behind
# A draft sharing its target's cache copies it rather than decode more than this many tokens: the
# copy costs a few milliseconds for any length, where decoding hundreds of tokens costs the draft
# a large share of a second on a CPU; one or two tokens are cheaper to decode.
SHARE_ABOVE = 4


@dataclass
class Draft:
    tokens: list[int] = field(default_factory=list)
    # Proposal distributions for rejection sampling (dense, one per token); None means the
    # proposals are deterministic (point masses), as for prompt lookup or greedy drafting.
    q: list[np.ndarray] | None = None
    time_s: float = 0.0  # all the time the drafter took, catching up included
    # Of time_s: decoding text the drafter had not seen yet, and how many tokens that was. One or
    # two tokens (what the last pass emitted) is the steady cost of every draft; more is the lag
    # after drafting was off or a new prompt, a cost of turning drafting on.
    catchup_s: float = 0.0
    catchup_tokens: int = 0
    # One-token draft-model decodes while drafting, after the read: every drafted token but the
    # last of a full-length draft (its logits give the next one), and the last too when the draft
    # stopped at p_min (its logits said to stop). With the read, all the model work a draft did.
    decodes: int = 0
    # Which drafter proposed each token (a hybrid mixes them); None: the drafter's own kind.
    sources: list[str] | None = None
    # How many tokens the text agreed with a free draft's source (its n-gram match, extended back;
    # 0: a draft model's guess). The policy keeps acceptance per such length and cuts the
    # draft to what pays.
    match: int = 0
    # Positions copied from the target's KV cache instead of read (a derived draft); catchup_s
    # includes the copy, catchup_tokens counts only what was decoded.
    adopted_tokens: int = 0
    # Leading proposals that cost nothing (a hybrid's session guess before the model's tokens):
    # the policy learns the draft model's cost and acceptance from the rest only.
    free_tokens: int = 0
    # Other continuations a free drafter found at this point (other occurrences of the match),
    # best first, each from the same position as `tokens`, with its own match length. The policy
    # may send some of them beside `tokens` as a token tree (engine/token_tree.py).
    branches: list[list[int]] = field(default_factory=list)
    branch_matches: list[int] = field(default_factory=list)

    def cut(self, n: int) -> "Draft":
        """The first n proposals (timings kept: they were spent either way)."""
        return Draft(self.tokens[:n], None if self.q is None else self.q[:n], self.time_s,
                     self.catchup_s, self.catchup_tokens, self.decodes,
                     None if self.sources is None else self.sources[:n], self.match, self.adopted_tokens,
                     min(self.free_tokens, n), self.branches, self.branch_matches)


@dataclass
class TreeOutcome:
    """What a pass that verified a token tree found (engine/token_tree.py): the draft's own path
    and the branches sent beside it."""

    rows: int  # nodes decoded, the pending token included
    main_held: int  # tokens of the draft's own path the target kept (a branch taken: fewer than accepted)
    branches: int  # paths beside the draft's own


@dataclass
class PassRecord:
    """One pass of the loop as the stats and the draft policy both learn from it."""

    draft: Draft  # what was sent (its timings are all the drafting this pass did)
    asked: int  # the draft length the policy asked for (0: a plain pass)
    accepted: int  # of the draft's tokens, how many the target kept
    verify_s: float  # the target's pass
    device_s: float  # of that, time inside the backend's decode calls
    rows: int  # rows the target decoded (padding included)
    padded: bool  # the loop pads passes to one shape
    same_shape: bool  # the pass had the shape of the one before (a GPU replays its graph)
    source: str  # whose match evidence a free draft feeds (policy.evidence_source)
    probing: bool  # the policy forced this draft to learn something
    drafting: bool  # the policy had drafting on
    tree: TreeOutcome | None = None  # the pass verified a tree (accepted: along the path taken)
    at: int = 0  # the text's length when the draft was made (where its first token would go)


class Drafter(Protocol):
    """What the loop asks of a drafter. The verbs mirror llama.cpp's common_speculative: callers
    never touch a drafter's cache, they tell it what happened."""

    kind: str  # a label for the stats ("lookup", "session", "model", "none")
    name: str
    # Its guesses, when not sent, are still judged against what the target wrote there (an edit's
    # copy of its original: usually right where the rewrite copies, so worth the bookkeeping).
    judge_unsent: bool

    def parts(self) -> "tuple[Drafter | None, Drafter | None]":
        """(the free proposer, the draft model) this drafter is: prompt lookup and the session
        drafter are free, a draft model is paid; the loop asks each as the policy plans."""

    def begin(self, prompt: list[int]) -> None:
        """A new request: the target has decoded `prompt`. Nothing is read now; a draft model
        catches up lazily, at the first draft that is actually asked for."""

    def lag(self, history: list[int], window: int | None = None) -> int:
        """Tokens the drafter would have to decode before it can draft after `history`;
        `window`: as for `draft`."""

    def draft(self, history: list[int], n_max: int, sampling: SamplingSettings,
              rng: np.random.Generator, window: int | None = None) -> Draft:
        """Propose up to n_max tokens to follow `history` (prompt + everything emitted so far).
        `window` bounds how much recent text a draft model catches up on for this draft (a
        probe: learning whether it pays must not cost a whole prompt's catch-up)."""

    def truncate(self, n: int) -> None:
        """Only the first `n` tokens of the latest draft go to the target (the rest never count
        as drafted)."""

    def accept(self, n_accepted: int) -> None:
        """The target kept the first `n_accepted` tokens of the latest draft; the rest are gone."""

    def rewind(self, n_keep: int) -> None:
        """Keep only what the drafter read of the first `n_keep` tokens of the text."""

    def forget(self) -> None:
        """The drafter's state no longer matches its model (someone else used the context)."""

    def close(self) -> None: ...


class NoDrafter:
    kind = "none"
    name = "none"
    judge_unsent = False

    def parts(self) -> tuple[Drafter | None, Drafter | None]:
        return None, None

    def begin(self, prompt: list[int]) -> None:
        pass

    def lag(self, history: list[int], window: int | None = None) -> int:
        return 0

    def draft(self, history, n_max, sampling, rng, window=None) -> Draft:
        return Draft()

    def truncate(self, n: int) -> None:
        pass

    def accept(self, n_accepted: int) -> None:
        pass

    def rewind(self, n_keep: int) -> None:
        pass

    def forget(self) -> None:
        pass

    def close(self) -> None:
        pass


BRANCHES_MAX = 3  # other continuations a free drafter offers beside its draft


def distinct_branches(main: list[int], found: list[tuple[int, int, list[int]]],
                      limit: int = BRANCHES_MAX) -> tuple[list[list[int]], list[int]]:
    """Continuations other than `main`, best first: `found` holds (match length, position,
    tokens) of each occurrence; the longer match first, then the more recent. A continuation that
    `main` or an earlier one already covers (equal, or a prefix of it) adds nothing to a tree.
    Returns (branches, their match lengths)."""
    kept: list[list[int]] = [main]
    out: list[list[int]] = []
    matches: list[int] = []
    for match, _, tokens in sorted(found, key=lambda f: (-f[0], -f[1])):
        if len(out) >= limit:
            break
        if tokens and all(common_prefix(tokens, k) < len(tokens) for k in kept):
            kept.append(tokens)
            out.append(tokens)
            matches.append(match)
    return out, matches


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the shared prefix. The usual case (one list extends the other) is a single
    C-level comparison; only a real divergence pays for a numpy scan."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    diff = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(diff[0])


class ModelDrafter:
    """Drafts with a small model; stops early when its confidence drops below p_min.

    Its KV cache holds a view of the text: every token, or (after a catch-up longer than the
    window) the first `head` tokens followed by the text from `base` on. Accepted tokens are
    never decoded twice; only rejected drafts are removed.

    With `source` (the target, when the draft is a derived copy of it: same tensors, other types)
    a long catch-up is a copy of the target's cache, which holds every token but the last at the
    time of a draft: then the view is the whole text, for probes too."""

    kind = "model"
    judge_unsent = False

    def parts(self) -> tuple[Drafter | None, Drafter | None]:
        return None, self

    def __init__(self, model: Model, p_min: float, *, window: int = CATCHUP_WINDOW,
                 head: int = CATCHUP_HEAD, source: Model | None = None) -> None:
        self.model = model
        self.source = source
        self.name = model.name
        self.p_min = p_min
        self.window = max(16, window)
        self.head = max(0, head)
        self._text: list[int] = []  # the text the view was taken from (drafts included)
        self._head = 0  # leading text tokens in the view
        self._base = 0  # text index where the rest of the view starts (== _head: no gap)
        self._drafted_from = 0  # len(history) at the latest draft
        self._read = 0  # the window the view was last built with (a probe's is short)
        self._adopted = 0  # positions the latest sync copied from the target

    # -- the view --------------------------------------------------------------------------------
    def _view_len(self) -> int:
        return self._head + len(self._text) - self._base

    def _plan(self, history: list[int], window: int) -> tuple[bool, int]:
        """(rebuild, keep): rebuild the view from scratch, or keep text[:keep] and decode the rest.
        A view built by a probe with a shorter window than `window` is rebuilt: drafting for
        real wants the whole window's context."""
        keep = common_prefix(self._text, history)
        if keep == len(history):
            keep -= 1  # the last token must be decoded again to get its logits
        # A probe (a short window) still extends a view it can reach cheaply, rather than
        # throwing away a full one.
        reach = window if window >= self.window else PROBE_REACH * window
        if keep < self._base or len(history) - keep > reach:
            return True, 0
        if self._base > 0 and self._read < window:
            return True, 0
        return False, keep

    def lag(self, history: list[int], window: int | None = None) -> int:
        if not history:
            return 0
        window = self.window if window is None else max(1, min(window, self.window))
        rebuild, keep = self._plan(history, window)
        todo = min(len(history), self.head + window) if rebuild else len(history) - keep
        if todo > SHARE_ABOVE and self._can_share(history):
            return 1  # a copy of the target's cache, then the last token
        return todo

    @property
    def prior(self) -> tuple[float, float]:
        """Acceptance evidence (accepted tokens, rejections) to start from: a derived copy agrees
        with its target on most tokens (a Q4_0 copy nearly always, a Q2_K copy a little less), so it
        starts from 9/11 instead of 1/2 and short drafts go out at once where they can pay; any
        other draft starts from nothing."""
        return (8.0, 1.0) if self.source is not None else (0.0, 0.0)

    def _can_share(self, history: list[int]) -> bool:
        """The target has read history[:-1] (the loop's invariant at a draft) and the draft's
        context holds it with room for a draft."""
        return (self.source is not None and len(history) + 1 < self.model.n_ctx // 4 * 3
                and self.source.cache_length() >= len(history) - 1)

    def _share(self, history: list[int]) -> bool:
        """Take the target's cache (history[:-1]) and decode the last token; False: not possible."""
        if self.source is None or not self._can_share(history):
            return False
        if not self.model.adopt_cache(self.source, len(history) - 1):
            self.source = None  # the caches differ in shape: read the text from now on
            self.forget()
            return False
        self._head, self._base, self._read = 0, 0, self.window
        self.model.decode(history[-1:], len(history) - 1)
        self._text = list(history)
        self._adopted = len(history) - 1
        return True

    def _sync(self, history: list[int], room: int, window: int) -> int:
        """Make the view end with history[-1] decoded (logits after it); returns tokens decoded.
        `room` is what must stay free in the draft's context for the draft itself."""
        rebuild, keep = self._plan(history, window)
        if rebuild or len(history) - keep > SHARE_ABOVE:
            if self._share(history):
                return 1
            rebuild, keep = self._plan(history, window)  # a refused copy leaves the cache empty
        n_ctx = self.model.n_ctx
        if not rebuild and self._head + keep - self._base + (len(history) - keep) + room > n_ctx:
            rebuild = True  # the view would overflow the draft's context: slide the window
        if rebuild:
            self.model.clear()
            win = min(window, n_ctx - room - self.head - 1)
            self._read = window
            if len(history) <= self.head + win:
                self._head, self._base = 0, 0
                todo = list(history)
            else:
                self._head, self._base = self.head, len(history) - win
                todo = history[: self.head] + history[self._base :]
            self.model.decode_prompt(todo, 0)
            self._text = list(history)
            return len(todo)
        pos = self._head + keep - self._base
        if keep < len(self._text) and not self.model.trim(pos):
            self.forget()
            return self._sync(history, room, window)
        todo = history[keep:]
        self.model.decode_prompt(todo, pos)
        self._text = list(history)
        return len(todo)

    # -- verbs -----------------------------------------------------------------------------------
    def begin(self, prompt: list[int]) -> None:
        # Lazily: the first draft catches up (`lag` says how much that will cost). A copy of the
        # target's cache needs a buffer as large as that cache: sized now, outside timed drafts.
        if self.source is not None:
            self.model.reserve_adoption(self.source)

    def draft(self, history, n_max, sampling, rng, window=None) -> Draft:
        t0 = time.perf_counter()
        out = Draft()
        if n_max <= 0 or not history:
            return out
        n_max = min(n_max, self.model.n_ctx // 4)  # the rest of the context holds the view
        window = self.window if window is None else max(1, min(window, self.window))
        self._adopted = 0
        out.catchup_tokens = self._sync(history, n_max + 1, window)
        out.catchup_s = time.perf_counter() - t0
        out.adopted_tokens = self._adopted
        self._drafted_from = len(history)
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
                self.model.decode([tok], self._view_len())
                self._text.append(tok)
                out.decodes += 1
        out.q = None if greedy else qs
        out.time_s = time.perf_counter() - t0
        return out

    def truncate(self, n: int) -> None:
        pass  # `accept` removes whatever the target did not keep, sent or not

    def accept(self, n_accepted: int) -> None:
        keep = self._drafted_from + n_accepted
        if keep < len(self._text):
            self.rewind(keep)

    def rewind(self, n_keep: int) -> None:
        if n_keep >= len(self._text):
            return
        if n_keep < self._base or not self.model.trim(self._head + n_keep - self._base):
            self.forget()
            return
        del self._text[n_keep:]

    def forget(self) -> None:
        self.model.clear()
        self._text, self._head, self._base = [], 0, 0

    def close(self) -> None:
        self.model.close()


_OCCURRENCES = 8  # positions kept per n-gram: the latest, and others a tree may branch to
_AGREEMENT_MAX = 32  # how far back a lookup draft's agreement with its source is counted


class LookupDrafter:
    """Prompt-lookup drafting with an incrementally maintained n-gram index."""

    kind = "lookup"
    name = "lookup"
    judge_unsent = False

    def parts(self) -> tuple[Drafter | None, Drafter | None]:
        return self, None

    def __init__(self, ngram_min: int = 1, ngram_max: int = 4) -> None:
        self.ngram_min = max(1, ngram_min)
        self.ngram_max = max(self.ngram_min, ngram_max)
        self._seen: list[int] = []
        # n -> n-gram -> the positions that followed it, oldest first (the last _OCCURRENCES)
        self._index: list[dict[tuple[int, ...], list[int]]] = []
        self._copy = (-1, -1)  # (where the last draft copied from, the history length then)
        self._reset()

    def _reset(self) -> None:
        self._seen = []
        self._index = [dict() for _ in range(self.ngram_max + 1)]
        self._copy = (-1, -1)

    def _follow(self, history: list[int]) -> int | None:
        """Where the text the last draft copied continues, when everything written since followed
        it. Why: an edit copies its input run by run, and within a run the n-gram index knows only
        the latest place a short n-gram occurred (in code, `        return self.` occurs
        everywhere): it re-anchors on another occurrence and drafts that one's continuation."""
        src, at = self._copy
        grown = len(history) - at
        if src < 0 or grown <= 0 or src + grown >= len(history):
            return None
        return src + grown if history[at:] == history[src:src + grown] else None

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
                at = self._index[n].setdefault(tuple(history[j - n : j]), [])
                at.append(j)
                if len(at) > _OCCURRENCES:
                    del at[0]
        self._seen = list(history)

    @staticmethod
    def _match_at(history: list[int], j: int) -> int:
        """How many of the last tokens (at most _AGREEMENT_MAX) equal those before position j:
        how long the text has agreed with the draft's source, as the policy weighs evidence
        by it (a copy that has held for 20 tokens is a far surer guess than a fresh 4-gram)."""
        n = 0
        while n < _AGREEMENT_MAX and n < j and history[-1 - n] == history[j - 1 - n]:
            n += 1
        return n

    def begin(self, prompt: list[int]) -> None:
        pass  # indexing is incremental and cheap: it happens at the first draft

    def lag(self, history: list[int], window: int | None = None) -> int:
        return 0  # no model to catch up (indexing costs microseconds)

    def truncate(self, n: int) -> None:
        pass  # nothing is kept per draft

    def accept(self, n_accepted: int) -> None:
        pass

    def rewind(self, n_keep: int) -> None:
        if n_keep < len(self._seen):
            self._reset()

    def forget(self) -> None:
        self._reset()

    def draft(self, history, n_max, sampling, rng, window=None) -> Draft:
        t0 = time.perf_counter()
        out = Draft()
        if n_max <= 0 or not history:
            return out
        self._update(history)
        j = None
        found: list[int] = []  # occurrences, the longest n-gram's first, each n's latest first
        for n in range(min(self.ngram_max, len(history)), self.ngram_min - 1, -1):
            at = self._index[n].get(tuple(history[-n:]))
            if at:
                if j is None:
                    j = at[-1]
                found.extend(p for p in reversed(at) if p not in found)
                if len(found) >= _OCCURRENCES:
                    break
        follow = self._follow(history)
        if follow is not None:
            j = follow
        if j is not None:
            out.match = self._match_at(history, j)
            out.tokens = history[j : j + n_max]
            self._copy = (j, len(history))
            others = [(self._match_at(history, p), p, history[p : p + n_max]) for p in found if p != j]
            out.branches, out.branch_matches = distinct_branches(out.tokens, others)
        else:
            self._copy = (-1, -1)
        out.time_s = time.perf_counter() - t0
        return out

    def close(self) -> None:
        pass
