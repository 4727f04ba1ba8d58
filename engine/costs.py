"""What the target's passes, the draft model's drafts and prompt reads cost, measured online.

Costs are a property of the pair and the machine, not of the text: they carry from one request to
the next, and a fixed-length run (bench sweeps, warm-ups) teaches them as well as the adaptive loop.
The draft policy (engine/policy.py) prices every plan with them.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field

_ALPHA = 0.15  # weight of a new timing sample in the moving averages
_WINDOW = 9  # t_v(n) is the median of this many recent samples: a shared CPU has spikes
_SETTLED = 3  # cost samples (drafts; verifies of more than one token) before "drafting cannot pay"


@dataclass
class CostModel:
    """Moving averages of measured times, in seconds."""

    # One draft token, the steady catch-up before each draft included (a draft model decodes
    # what the last pass emitted before it can draft: that is part of what every draft costs).
    draft_token: float | None = None
    # One token of a longer catch-up (a batched decode: text the draft model had not read).
    catchup_token: float | None = None
    # One prompt token decoded by the target: an upper bound for the draft's catch-up per token
    # until that is measured (a draft model is no larger than its target).
    prompt_token: float | None = None
    # Batch size -> one target pass. A pass costs more the longer the context (attention reads
    # every earlier position), and sizes above 1 are measured only while drafting, so their
    # samples could be from another text than t1's: t_v(n) is kept as its ratio to the t1 of its
    # own moment, times t1 now. Absolute, a bench's long FIM task priced its 2-row passes with
    # samples from a shorter one (too cheap against its own t1) and drafted at a loss.
    verify: dict[int, float] = field(default_factory=dict)
    # Prompt reads by size (a power of two and up: 16, 32, ...) -> (tokens, seconds), averaged: a
    # read costs a call's overhead plus its tokens, and a short read's cost per token misleads.
    reads: dict[int, tuple[float, float]] = field(default_factory=dict)
    draft_samples: int = 0
    batched_samples: int = 0  # verify passes of more than one token measured (ever)
    # Draft time by tokens drafted (running medians): a draft pays a fixed part (reading what
    # the last pass emitted, the call) and a part per token, so one-token drafts (probes, a
    # bench warm-up) alone would make every token look as dear as the fixed part.
    draft_by_length: dict[int, float] = field(default_factory=dict)
    _recent: dict[int, deque] = field(default_factory=dict, repr=False)  # t1: seconds; n > 1: (seconds, t1 then)
    _ratio: dict[int, float | None] = field(default_factory=dict, repr=False)  # n > 1: median t_v(n) / t1
    _recent_draft: dict[int, deque] = field(default_factory=dict, repr=False)
    # Rows of every verify pass when the loop pads them to one shape (0: not padded): then any
    # draft of up to shape - 1 tokens costs what a pass of that shape costs.
    shape: int = 0
    # The lines through `verify` and `draft_by_length`, kept until their points change: the
    # policy prices every draft length each pass (can drafting pay, which length pays), and
    # refitting for each of those prices was a visible share of a small model's pass on a CPU.
    _fits: dict[str, tuple[float, float] | None] = field(default_factory=dict, repr=False)
    # Bumped whenever a measured cost changes: what is computed from the costs alone (can any
    # draft length pay?) holds until then.
    revision: int = 0

    def observe_verify(self, n: int, seconds: float) -> None:
        """t_v(n) is a running median: one pass slowed down by another process on a shared
        machine must not make drafting look cheap (t1 inflated) or dear (t_v(k) inflated). The
        first pass of each batch size > 1 is a warm-up and not counted (as in the bench's cost
        meter): a backend may set that shape up then (a GPU loading its kernels: many times a
        normal pass), and a size drafted rarely would keep that one sample as its cost for good,
        pricing every later probe above a request's budget."""
        if n > 1 and n not in self._recent:  # (one-token passes come by the hundred: the first counts)
            self._recent[n] = deque(maxlen=_WINDOW)
            return
        self.seed_verify(n, seconds)

    def seed_verify(self, n: int, seconds: float) -> None:
        """A steady-state t_v(n) measured outside the loop (repeated passes of one shape at load):
        a first sample that counts."""
        recent = self._recent.setdefault(n, deque(maxlen=_WINDOW))
        if n == 1:
            recent.append(seconds)
            self._set_verify(1, statistics.median(recent))
        else:
            recent.append((seconds, self.verify.get(1)))
            self.batched_samples += 1
            # (a sample taken before any t1 counts as absolute: it is priced as measured)
            self._ratio[n] = (statistics.median(s / then for s, then in recent)
                              if all(then for _, then in recent) else None)
        t1 = self.verify.get(1)
        for k in ([n] if n > 1 else list(self._ratio)):
            ratio = self._ratio[k]
            if ratio is not None and t1:
                self._set_verify(k, ratio * t1)
            elif self._recent[k]:
                self._set_verify(k, statistics.median(s if not then else s / then * (t1 or then)
                                                      for s, then in self._recent[k]))

    def _set_verify(self, n: int, value: float) -> None:
        if self.verify.get(n) != value:
            self.verify[n] = value
            self._fits.pop("verify", None)
            self.revision += 1

    def observe_draft(self, tokens: int, seconds: float) -> None:
        """A draft of `tokens` tokens took `seconds`. A draft model that stopped at once (its
        first token below p_min) drafted nothing yet paid its read: a sample at length 0, which
        is what the fixed part of every draft costs."""
        if tokens > 0:
            self.draft_token = _average(self.draft_token, seconds / tokens)
            self.draft_samples += 1
        recent = self._recent_draft.setdefault(max(tokens, 0), deque(maxlen=_WINDOW))
        recent.append(seconds)
        self.draft_by_length[max(tokens, 0)] = statistics.median(recent)
        self._fits.pop("draft", None)
        self.revision += 1

    def draft_cost(self, g: float) -> float | None:
        """Predicted time of a g-token draft: the line through the measured lengths (two or
        more; intercept and slope kept >= 0), else g times the mean cost per token."""
        if g <= 0:
            return 0.0
        fit = self._fit("draft", self.draft_by_length)
        if fit is not None:
            a, b = fit
            if a < 0:  # the fixed part cannot be negative: all of it is per token
                a, b = 0.0, max(sum(self.draft_by_length.values()) / sum(self.draft_by_length), 0.0)
            return a + b * g
        return None if self.draft_token is None else g * self.draft_token

    def remeasure(self, draft_lengths, verify_size: int) -> None:
        """Forget the samples of these draft lengths and this verify size: the next sample of
        each stands alone (a one-off probe would not move a median of stale samples)."""
        for n in draft_lengths:
            if n in self._recent_draft:
                self._recent_draft[n].clear()
        if verify_size in self._recent:
            self._recent[verify_size].clear()

    def settled(self, draft_is_free: bool) -> bool:
        """Enough samples that one slow first pass (a buffer allocated, pages touched) cannot
        pass for what drafting costs, and a draft model's cost known at two lengths (one-token
        drafts alone cannot tell its fixed part from its part per token)."""
        if self.batched_samples < _SETTLED:
            return False
        return draft_is_free or (self.draft_samples >= _SETTLED and len(self.draft_by_length) >= 2)

    def observe_catchup(self, tokens: int, seconds: float) -> None:
        if tokens > 0:
            self.catchup_token = _average(self.catchup_token, seconds / tokens)

    def observe_prompt(self, tokens: int, seconds: float) -> None:
        if tokens >= 16:  # a few tokens are dominated by per-call overhead
            self.prompt_token = _average(self.prompt_token, seconds / tokens)
        if tokens >= 4 and seconds > 0:
            size = 1 << (tokens.bit_length() - 1)
            n, t = self.reads.get(size, (float(tokens), seconds))
            self.reads[size] = (_average(n, tokens), _average(t, seconds))
            self._fits.pop("reads", None)

    def read_cost(self) -> tuple[float, float] | None:
        """(seconds a read costs, seconds each token adds) from the prompt reads measured: a line
        through the sizes read (two or more), else one size's cost per token; None before any."""
        if not self.reads:
            return None
        fit = self._fit("reads", {round(n): t for n, t in self.reads.values()})
        if fit is not None and fit[1] > 0:
            return max(fit[0], 0.0), fit[1]
        n, t = max(self.reads.values())
        return 0.0, t / n

    def catchup(self, tokens: int) -> float:
        """Predicted time for a draft model to read `tokens` tokens it has not seen."""
        if tokens <= 0:
            return 0.0
        per = self.catchup_token if self.catchup_token is not None else self.prompt_token
        if per is None:
            per = self.draft_token or self.verify.get(1) or 0.0
        return tokens * per

    def t_verify(self, n: int, fit: tuple[float, float] | None = None) -> float | None:
        """Measured t_v(n), or the line `fit` (see `line()`) through the measured sizes; with
        padded passes, what a pass of `shape` rows costs for every n from 2 to `shape`."""
        v = self.verify
        if self.shape and 1 < n <= self.shape and self.shape in v:
            return v[self.shape]
        if n in v:
            return v[n]
        if fit is None:
            fit = self.line()
            if fit is None:
                return None
        a, b = fit
        return max(a + b * n, 1e-6)

    def line(self) -> tuple[float, float] | None:
        """(intercept, slope) of t_v(n): least squares through the measured sizes (two or more)."""
        return self._fit("verify", self.verify)

    def _fit(self, key: str, points: dict[int, float]) -> tuple[float, float] | None:
        if key not in self._fits:
            self._fits[key] = _least_squares(points)
        return self._fits[key]


def _least_squares(points: dict[int, float]) -> tuple[float, float] | None:
    """(intercept, slope >= 0) of the line through {x: y} (two or more points), else None."""
    if len(points) < 2:
        return None
    xs = list(points)
    ys = [points[x] for x in xs]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = max(sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0, 0.0)
    return my - slope * mx, slope


def _average(old: float | None, new: float) -> float:
    return new if old is None else old + _ALPHA * (new - old)
