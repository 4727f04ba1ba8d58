"""Drafting an edit from the code it replaces: the region is the prediction.

An edit's answer copies most of its region, so the best guess for the next tokens is the region's
continuation at the place the rewrite has reached. `OriginalFollower` keeps that place: a pointer
into the region's tokens that advances while what the target writes agrees with it. Where the
rewrite changes something (a token replaced, a stretch inserted or deleted) it finds its place
again by aligning the last tokens written with the region: near the pointer first (the usual
small change), then anywhere in the region (a moved or deleted block). Its drafts say how long the
text has agreed with the region there (`Draft.match`), so the policy prices them as it prices
prompt lookup's (engine/policy.py: per match length).

What the rewrite wrote in place of a short stretch of the original (a few tokens: a renamed
name, a changed call) is learned as a `Replacement` when the follower finds its place after it:
where that original comes again, the copy drafts the replacement and goes on past it, instead of
guessing the old name at every use. A replacement is drafted while the target writes it at least
as often as it keeps the original; once it held at a second place, text that went through it
counts as agreeing with the region.

`EditDrafter` puts the follower in front of the free drafter the engine has (the session drafter
or prompt lookup, alone or a hybrid's free part): the follower's guess where the rewrite has agreed
with the region for a few tokens, else whichever guess agrees longer with its source (the rewrite
may have left the region for text found elsewhere, which the free drafter follows); in a hybrid
the draft model continues where the copy stops agreeing, as it does after any free guess. The
loop puts it in front for a request that carries a prediction. The target still decides every
token: this changes only what is drafted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import NamedTuple, Sequence

from .drafters import Draft, Drafter

AGREEMENT_MAX = 32  # how far back agreement with the region is counted (as prompt lookup's)
NEAR = 48  # a lost pointer is looked for this many tokens either side of where it would be first
NEAR_MIN = 2  # there two agreeing tokens are a place to go on from, ...
CLOSE = 8  # ... one where it is within this many tokens (a replaced word: the copy resumes at once),
FAR_MIN = 3  # and anywhere else it takes three (a common token alone is noise)
SUB_ORIG_MAX = 4  # a replacement is learned where at most this many original tokens ...
SUB_REPL_MAX = 8  # ... gave way to at most this many new ones (a renamed name, a changed call)
WEAK_AGREEMENT = 4  # a copy that agreed for fewer tokens yields to a free guess that agreed longer


@dataclass(frozen=True)
class Prediction:
    """The prompt's `tokens`, of which tokens[start:end] are the original the answer rewrites
    (the region, and the fence that closes it: the answer ends the same way)."""

    tokens: Sequence[int]
    start: int
    end: int


@dataclass
class Replacement:
    """Original tokens the rewrite replaced by others once: where they come again, the copy
    drafts the replacement (a rename changes every use of the name). Counted each time it is
    drafted and the target agrees or writes the original instead; drafted while it holds at least
    as often as it fails."""

    orig: tuple[int, ...]
    repl: tuple[int, ...]
    held: int = 1
    failed: int = 0

    @property
    def trusted(self) -> bool:
        return self.failed <= self.held

    @property
    def confirmed(self) -> bool:
        """It held at a second place: a pattern of the rewrite (a rename), not a one-off change,
        so text that went through it still agrees with the original (Draft.match)."""
        return self.held >= 2 and self.trusted


class Place(NamedTuple):
    """Where the rewrite is in the original: `position` (a source index), how many of the last
    tokens written agree with the text before it, and whether it was found again after the
    text had left the original (what was written in between may then be learned)."""

    position: int
    agreement: int
    found_again: bool


class OriginalFollower:
    """Follows the original as the rewrite advances (see the module docstring)."""

    def __init__(self, prediction: Prediction, written_from: int) -> None:
        self.source = list(prediction.tokens)
        self.start, self.end = prediction.start, prediction.end
        self._ptr = self.start  # where in `source` the next written token is expected
        self._at = written_from  # len(history) when _ptr was set
        self._lost = False  # the last tokens written did not follow the original
        self._anchor = (self._ptr, self._at)  # the last place known good (kept while lost)
        # positions p (start < p <= end) by the token at p - 1, and by the two tokens before p
        self._by_last: dict[int, list[int]] = {}
        self._by_pair: dict[tuple[int, int], list[int]] = {}
        for p in range(self.start + 1, self.end + 1):
            self._by_last.setdefault(self.source[p - 1], []).append(p)
            if p - 2 >= 0:
                self._by_pair.setdefault((self.source[p - 2], self.source[p - 1]), []).append(p)
        self.replacements: dict[tuple[int, ...], Replacement] = {}
        self._by_first: dict[int, list[Replacement]] = {}  # by the original's first token
        self._by_repl_end: dict[int, list[Replacement]] = {}  # by the replacement's last token
        # the last proposal: its tokens, the source position after each (-1 inside a
        # replacement), the history length it followed, and the replacements in it (index, which)
        self._proposed: list[int] = []
        self._ends: list[int] = []
        self._proposed_at = -1
        self._used: list[tuple[int, Replacement]] = []

    @property
    def pointer(self) -> int | None:
        """The index into the original (0: its first token) where the rewrite is; None while lost."""
        return None if self._lost else self._ptr - self.start

    def _orig_at(self, r: Replacement, start: int) -> bool:
        """The replacement's original is the source's text from `start`."""
        return 0 <= start and tuple(self.source[start:start + len(r.orig)]) == r.orig

    def _replaced_before(self, history: Sequence[int], i: int, q: int) -> Replacement | None:
        """A confirmed replacement whose new tokens end history[:i] where its original ends source[:q]."""
        for r in self._by_repl_end.get(history[i - 1], ()):
            n = len(r.repl)
            if r.confirmed and n <= i and tuple(history[i - n:i]) == r.repl and self._orig_at(r, q - len(r.orig)):
                return r
        return None

    def agreement(self, history: Sequence[int], p: int) -> int:
        """How many of the last tokens written equal those before source position p (a confirmed
        replacement counts as agreeing: it is what the rewrite does to that original)."""
        n, i, q = 0, len(history), p
        while n < AGREEMENT_MAX and i > 0 and q > 0:
            if history[i - 1] == self.source[q - 1]:
                n, i, q = n + 1, i - 1, q - 1
                continue
            r = self._replaced_before(history, i, q)
            if r is None:
                break
            n, i, q = n + len(r.repl), i - len(r.repl), q - len(r.orig)
        return min(n, AGREEMENT_MAX)

    def _judge(self, history: Sequence[int]) -> None:
        """Count each replacement in the last proposal that the target has now decided: it wrote
        the replacement there (held), or the original (failed)."""
        written = history[self._proposed_at:] if self._proposed_at >= 0 else []
        for j, r in self._used:
            if j < len(written) and list(written[:j]) == self._proposed[:j]:
                if written[j] == r.repl[0]:
                    r.held += 1
                elif written[j] == r.orig[0]:
                    r.failed += 1
        self._used = [(j, r) for j, r in self._used if j >= len(written)]

    def _followed_proposal(self, history: Sequence[int]) -> int | None:
        """Where the source is after the history followed the last proposal (with its
        replacements) this far; None where it did not, or stopped inside a replacement."""
        grown = len(history) - self._proposed_at
        if self._proposed_at < 0 or grown <= 0:
            return None
        written = history[self._proposed_at:]
        if grown > len(self._proposed) or list(written) != self._proposed[:grown]:
            return None
        p = self._ends[grown - 1]
        return p if p >= 0 else None

    def locate(self, history: Sequence[int]) -> Place | None:
        """The place in the original that the text has reached, or None."""
        grown = len(history) - self._at
        expected = self._ptr + max(grown, 0)
        if not self._lost and grown >= 0 and expected <= self.end and \
                list(history[len(history) - grown:]) == self.source[self._ptr:expected]:
            return Place(expected, self.agreement(history, expected), found_again=False)  # still copying
        followed = self._followed_proposal(history)
        if followed is not None:  # copying, a replacement included
            return Place(followed, self.agreement(history, followed), found_again=False)
        if not history:
            return None
        best: tuple[int, int] | None = None  # (agreement, -distance)
        where = None
        near = list(self._by_last.get(history[-1], ()))
        # a replacement just written: the places after its original (only a confirmed one, since
        # `agreement` counts no other through it and would give those places none)
        for r in self._by_repl_end.get(history[-1], ()):
            if r.confirmed and tuple(history[-len(r.repl):]) == r.repl:
                near += [q for q in self._by_last.get(r.orig[-1], ()) if self._orig_at(r, q - len(r.orig))]
        for p in near:
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
        return None if where is None or best is None else Place(where, best[0], found_again=True)

    def _learn(self, history: Sequence[int], p: int, a: int) -> None:
        """The text found the original again at p (its last `a` tokens agreeing) after leaving
        it: what it wrote in place of the original since the last good place is a replacement
        to draft where that original comes again (a short one only: a rewritten block is not)."""
        ptr, at = self._anchor
        k = 0
        while (at + k < len(history) - a and ptr + k < p - a
               and history[at + k] == self.source[ptr + k]):
            k += 1
        orig = tuple(self.source[ptr + k:p - a])
        repl = tuple(history[at + k:len(history) - a])
        if not (0 < len(orig) <= SUB_ORIG_MAX and 0 < len(repl) <= SUB_REPL_MAX) or orig == repl:
            return
        known = self.replacements.get(orig)
        if known is not None:
            if known.repl == repl:
                known.held += 1
                return
            known.failed += 1
            if known.trusted:
                return
            self._by_first[orig[0]].remove(known)
            self._by_repl_end[known.repl[-1]].remove(known)
        r = self.replacements[orig] = Replacement(orig, repl)
        self._by_first.setdefault(orig[0], []).append(r)
        self._by_repl_end.setdefault(repl[-1], []).append(r)

    def _replacement_at(self, i: int) -> Replacement | None:
        for r in self._by_first.get(self.source[i], ()):
            if r.trusted and self._orig_at(r, i):
                return r
        return None

    def propose(self, history: Sequence[int], n_max: int) -> tuple[list[int], int]:
        """(tokens, agreement): the original's next tokens after `history`, up to n_max, with the
        replacements learned so far applied."""
        self._judge(history)
        found = self.locate(history)
        if found is None:
            # lost: expected to move on as fast as the text does
            self._ptr = min(self._ptr + max(len(history) - self._at, 0), self.end)
            self._at, self._lost = len(history), True
            self._proposed_at = -1
            return [], 0
        if found.found_again:
            self._learn(history, found.position, found.agreement)
        self._ptr, self._at, self._lost = found.position, len(history), False
        self._anchor = (self._ptr, self._at)
        out: list[int] = []
        ends: list[int] = []
        used: list[tuple[int, Replacement]] = []
        i = found.position
        while len(out) < n_max and i < self.end:
            r = self._replacement_at(i)
            if r is not None and len(out) + len(r.repl) <= n_max:
                used.append((len(out), r))
                out += r.repl
                i += len(r.orig)
                ends += [-1] * (len(r.repl) - 1) + [i]
            elif r is not None:
                break  # (a replacement cut short would draft a token the original does not have)
            else:
                out.append(self.source[i])
                i += 1
                ends.append(i)
        self._proposed, self._ends, self._proposed_at, self._used = out, ends, len(history), used
        return out, found.agreement


class EditDrafter:
    """The follower's guess first, the free drafter's (`inner`) where the copy is weak or has none;
    the Drafter verbs of a free drafter, forwarded to `inner` for its own drafts. Its guesses cost
    nothing and are usually right where the rewrite copies: the loop judges those it did not send
    (`judge_unsent`)."""

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
        if not tokens or match < WEAK_AGREEMENT:  # a weak copy: a free guess may agree longer
            other = self.inner.draft(history, n_max, sampling, rng, window)
            if not tokens or other.match > match:
                self._inner_drafted = True
                return other
        self._inner_drafted = False
        return Draft(tokens=tokens, match=max(match, 1), sources=["original"] * len(tokens),
                     time_s=time.perf_counter() - t0)

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
