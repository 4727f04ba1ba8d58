"""Drafting an edit from the code it replaces: the region is the prediction.

An edit's answer copies most of its region, so the best guess for the next tokens is the region's
continuation at the place the rewrite has reached. `OriginalFollower` keeps that place: a pointer
into the region's tokens that advances while what the target writes agrees with it. Where the
rewrite changes something (a token replaced, a stretch inserted or deleted) it finds its place
again by aligning the last tokens written with the region: near the pointer first (the usual
small change), then anywhere in the region (a moved or deleted block). Its drafts say how long the
text has agreed with the region there (`Draft.match`), so the policy prices them as it prices
prompt lookup's (engine/policy.py: per match length).

`EditDrafter` puts the follower in front of the free drafter the engine has (the session drafter
or prompt lookup, alone or a hybrid's free part): the follower's guess when it has one, the free
drafter's otherwise; in a hybrid the draft model continues where the copy stops agreeing, as it
does after any free guess. The loop puts it in front for a request that carries a prediction.
The target still decides every token: this changes only what is drafted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

from .drafters import Draft, Drafter

AGREEMENT_MAX = 32  # how far back agreement with the region is counted (as prompt lookup's)
NEAR = 48  # a lost pointer is looked for this many tokens either side of where it would be first
NEAR_MIN = 2  # there two agreeing tokens are a place to go on from, ...
CLOSE = 8  # ... one where it is within this many tokens (a replaced word: the copy resumes at once),
FAR_MIN = 3  # and anywhere else it takes three (a common token alone is noise)


@dataclass(frozen=True)
class Prediction:
    """The prompt's `tokens`, of which tokens[start:end] are the original the answer rewrites
    (the region, and the fence that closes it: the answer ends the same way)."""

    tokens: Sequence[int]
    start: int
    end: int


class OriginalFollower:
    """Follows the original as the rewrite advances (see the module docstring)."""

    def __init__(self, prediction: Prediction, written_from: int) -> None:
        self.source = list(prediction.tokens)
        self.start, self.end = prediction.start, prediction.end
        self._ptr = self.start  # where in `source` the next written token is expected
        self._at = written_from  # len(history) when _ptr was set
        self._lost = False  # the last tokens written did not follow the original
        # positions p (start < p <= end) by the token at p - 1, and by the two tokens before p
        self._by_last: dict[int, list[int]] = {}
        self._by_pair: dict[tuple[int, int], list[int]] = {}
        for p in range(self.start + 1, self.end + 1):
            self._by_last.setdefault(self.source[p - 1], []).append(p)
            if p - 2 >= 0:
                self._by_pair.setdefault((self.source[p - 2], self.source[p - 1]), []).append(p)

    @property
    def pointer(self) -> int | None:
        """The index into the original (0: its first token) where the rewrite is; None while lost."""
        return None if self._lost else self._ptr - self.start

    def agreement(self, history: Sequence[int], p: int) -> int:
        """How many of the last tokens written equal those before source position p."""
        n = 0
        while (n < AGREEMENT_MAX and n < p and n < len(history)
               and history[-1 - n] == self.source[p - 1 - n]):
            n += 1
        return n

    def locate(self, history: Sequence[int]) -> tuple[int, int] | None:
        """(position, agreement) of the place in the original that the text has reached, or None."""
        grown = len(history) - self._at
        expected = self._ptr + max(grown, 0)
        if not self._lost and grown >= 0 and expected <= self.end and \
                list(history[len(history) - grown:]) == self.source[self._ptr:expected]:
            return expected, self.agreement(history, expected)  # still copying
        if not history:
            return None
        best: tuple[int, int] | None = None  # (agreement, -distance)
        where = None
        for p in self._by_last.get(history[-1], ()):
            if abs(p - expected) <= NEAR:
                a = self.agreement(history, p)
                key = (a, -abs(p - expected))
                enough = NEAR_MIN if abs(p - expected) > CLOSE else 1
                if a >= enough and (best is None or key > best):
                    best, where = key, p
        if where is None and len(history) >= 2:
            for p in self._by_pair.get((history[-2], history[-1]), ()):
                a = self.agreement(history, p)
                key = (a, -abs(p - expected))
                if a >= FAR_MIN and (best is None or key > best):
                    best, where = key, p
        return None if where is None or best is None else (where, best[0])

    def propose(self, history: Sequence[int], n_max: int) -> tuple[list[int], int]:
        """(tokens, agreement): the original's next tokens after `history`, up to n_max."""
        found = self.locate(history)
        if found is None:
            # lost: expected to move on as fast as the text does
            self._ptr = min(self._ptr + max(len(history) - self._at, 0), self.end)
            self._at, self._lost = len(history), True
            return [], 0
        self._ptr, self._at, self._lost = found[0], len(history), False
        return self.source[found[0]: min(found[0] + max(n_max, 0), self.end)], found[1]


class EditDrafter:
    """The follower's guess first, then the free drafter's (`inner`); the Drafter verbs of a free
    drafter, forwarded to `inner` for its own drafts. Its guesses cost nothing and are usually right
    where the rewrite copies: the loop judges those it did not send (`judge_unsent`)."""

    judge_unsent = True

    def __init__(self, follower: OriginalFollower, inner: Drafter) -> None:
        self.follower = follower
        self.inner = inner
        self.kind = inner.kind
        self.name = inner.name
        self._inner_drafted = False

    def begin(self, prompt: list[int]) -> None:
        self.inner.begin(prompt)

    def lag(self, history, window=None) -> int:
        return self.inner.lag(history, window)

    def draft(self, history, n_max, sampling, rng, window=None) -> Draft:
        t0 = time.perf_counter()
        tokens, match = self.follower.propose(history, n_max)
        if tokens:
            self._inner_drafted = False
            return Draft(tokens=tokens, match=max(match, 1), sources=["original"] * len(tokens),
                         time_s=time.perf_counter() - t0)
        self._inner_drafted = True
        return self.inner.draft(history, n_max, sampling, rng, window)

    def parts(self) -> tuple[Drafter | None, Drafter | None]:
        return self, None

    def truncate(self, n: int) -> None:
        if self._inner_drafted:
            self.inner.truncate(n)

    def accept(self, n_accepted: int) -> None:
        if self._inner_drafted:
            self.inner.accept(n_accepted)
        self._inner_drafted = False

    def rewind(self, n_keep: int) -> None:
        self.inner.rewind(n_keep)

    def forget(self) -> None:
        self.inner.forget()

    def close(self) -> None:
        pass  # the inner drafter belongs to the engine
