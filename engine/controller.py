"""Choosing the draft length from what drafting actually costs and earns.

With per-token acceptance a and draft length g, one target pass yields on average
E(g) = (1 - a^(g+1)) / (1 - a) tokens and costs g * t_d (drafting) + t_v(g+1) (verifying g+1
tokens). The controller measures a, t_d and t_v(n) online and picks the g that maximises
E(g) / (g * t_d + t_v(g+1)). g = 0 is plain decoding, chosen whenever drafting does not pay: a tiny
target on a CPU, where verifying k tokens costs nearly k single decodes, or a drafter that keeps
guessing wrong. While off, it probes with a short draft now and then, so it notices when drafting
starts paying again (code that repeats itself, a new request): early in every request, and then as
often as a budget of 2 % of the generation time allows, from what a probe was measured to cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .settings import SpeculativeSettings

_ALPHA = 0.15  # weight of a new timing sample in the moving averages
_DECAY = 0.97  # per-pass decay of the acceptance evidence (recent passes matter more)
_PROBE_LENGTH = 2  # draft tokens in a probe while drafting is off
_PROBE_BUDGET = 0.02  # probes may cost at most this share of the generation time ...
_PROBE_MIN = 16  # ... but come at least this many passes apart
_PROBE_MAX = 256  # ... and at most this many
_EVIDENCE_MAX = 32  # decayed evidence kept, in draft tokens and rejections
_CARRY = 0.2  # share of the acceptance evidence a new request inherits (bench: 0.1-0.25 best)


@dataclass
class CostModel:
    """Moving averages of measured times, in seconds."""

    draft_token: float | None = None  # time to produce one draft token
    verify: dict[int, float] | None = None  # batch size -> time of one target pass

    def __post_init__(self) -> None:
        if self.verify is None:
            self.verify = {}

    def observe_verify(self, n: int, seconds: float) -> None:
        old = self.verify.get(n)
        self.verify[n] = seconds if old is None else old + _ALPHA * (seconds - old)

    def observe_draft(self, tokens: int, seconds: float) -> None:
        if tokens <= 0:
            return
        per = seconds / tokens
        old = self.draft_token
        self.draft_token = per if old is None else old + _ALPHA * (per - old)

    def t_verify(self, n: int, fit: tuple[float, float] | None = None) -> float | None:
        """Measured t_v(n), or the line `fit` (see `line()`) through the measured sizes."""
        v = self.verify
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
        v = self.verify
        if not v:
            return None
        if len(v) == 1:
            return None
        xs = list(v)
        ys = [v[x] for x in xs]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        slope = max(sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0, 0.0)
        return my - slope * mx, slope


class DraftController:
    """Picks the next draft length; `fixed` (adaptive off) always returns draft_max."""

    def __init__(self, spec: SpeculativeSettings, *, draft_is_free: bool = False) -> None:
        self.spec = spec
        self.adaptive = spec.adaptive
        self.costs = CostModel()
        self.draft_is_free = draft_is_free  # prompt lookup: drafting costs ~nothing
        # Decayed evidence for the per-token acceptance a (geometric model): accepted draft tokens
        # and rejections. Every pass decays it, drafted or not, so while drafting is off the
        # estimate drifts back to the prior (a = 1/2) instead of staying frozen at the figure that
        # turned drafting off: the text may have changed since (a new request, an edit that
        # repeats the file), and the next probe then decides on what it sees.
        self._succ = 0.0
        self._fail = 0.0
        self._since_probe = 0
        self._probing = False  # the pass in flight is a probe
        self._second_look = False  # the pass in flight is the extra look after a probe that held
        self._probe_cost: float | None = None  # measured extra cost of a probe, in plain passes
        self.length = min(4, spec.draft_max)  # start by measuring a short draft
        self.off = False  # True while drafting does not pay

    def new_request(self) -> None:
        """New text may draft differently, so what the last request taught counts for less: a
        completion after an edit that copied well would otherwise pay for several long drafts on
        stale evidence (each costs several passes on a CPU), and an edit after completions would
        stay off. While off, probe early (one short probe costs about one extra pass on a CPU, a
        few per cent of one on a GPU)."""
        self._succ *= _CARRY
        self._fail *= _CARRY
        if self.off:
            self._since_probe = max(self._since_probe, self.probe_every() - 4)

    @property
    def acceptance(self) -> float:
        return (self._succ + 1.0) / (self._succ + self._fail + 2.0)

    def observe(self, drafted: int, accepted: int, draft_s: float, verify_s: float,
                sync_s: float = 0.0) -> None:
        """Record one pass: `drafted` proposals of which `accepted` held. `sync_s` is time the
        drafter spent catching up on text it had not seen (a draft model after drafting was off):
        not a per-token draft cost, but part of what a probe costs."""
        if self._probing and drafted:
            t1 = self.costs.verify.get(1)
            if t1:
                extra = max(draft_s + sync_s + verify_s - t1, 0.0) / t1
                old = self._probe_cost
                self._probe_cost = extra if old is None else old + _ALPHA * (extra - old)
            # A probe that held earns one more look at once (the text may have started to repeat
            # itself); a second in a row would be probing every pass when a draft is accurate but
            # too dear to pay.
            if accepted == drafted and not self._second_look:
                self._since_probe = _PROBE_MAX
                self._second_look = True
            else:
                self._second_look = False
        self._probing = False
        self.costs.observe_verify(drafted + 1, verify_s)
        self._succ *= _DECAY
        self._fail *= _DECAY
        if drafted:
            self.costs.observe_draft(drafted, draft_s)
            self._succ += accepted
            self._fail += 1 if accepted < drafted else 0
            total = self._succ + self._fail
            if total > _EVIDENCE_MAX:  # bounded memory: a change of text shows within a few passes
                self._succ *= _EVIDENCE_MAX / total
                self._fail *= _EVIDENCE_MAX / total

    def expected_tokens(self, g: int) -> float:
        a = min(self.acceptance, 0.999)
        return (1.0 - a ** (g + 1)) / (1.0 - a)

    def rate(self, g: int, fit: tuple[float, float] | None = None) -> float | None:
        """Expected tokens per second at draft length g, from the current measurements."""
        tv = self.costs.t_verify(g + 1, fit)
        if tv is None:
            return None
        td = 0.0 if (self.draft_is_free or g == 0) else (self.costs.draft_token or 0.0)
        return self.expected_tokens(g) / (g * td + tv)

    def probe_every(self, fit: tuple[float, float] | None = None) -> int:
        """Passes between probes while drafting is off, so that probes cost at most
        _PROBE_BUDGET of the generation time: every 16 passes where a probe is nearly free (a
        GPU, where verifying 3 tokens costs about one), every ~50 on a CPU where it costs about
        one extra pass, and up to 256 where a draft model must first catch up on the text.
        `fit` is the t_v line when the caller has it already."""
        cost = self._probe_cost
        if cost is None:  # no probe measured yet: predict one from the costs
            fit = fit or self.costs.line()
            t1 = self.costs.t_verify(1, fit)
            tp = self.costs.t_verify(_PROBE_LENGTH + 1, fit)
            if t1 is None or tp is None:
                return _PROBE_MIN
            td = 0.0 if self.draft_is_free else (self.costs.draft_token or 0.0)
            cost = max(tp + _PROBE_LENGTH * td - t1, 0.0) / t1
        return int(min(max(_PROBE_MIN, math.ceil(cost / _PROBE_BUDGET)), _PROBE_MAX))

    def next_length(self) -> int:
        """Draft length for the next pass."""
        dmax = self.spec.draft_max
        if not self.adaptive or dmax <= 0:
            self.off = dmax <= 0
            return max(dmax, 0)
        verify = self.costs.verify
        if 1 not in verify:  # first measure a plain pass ...
            return 0
        fit = self.costs.line()
        if fit is None:  # ... then a short draft, so that t_v(n) can be fitted
            return self.length
        base = self.rate(0, fit)
        best_g, best_r = 0, base
        for g in range(1, dmax + 1):
            r = self.rate(g, fit)
            if r is not None and r > best_r:
                best_g, best_r = g, r
        # Require a margin so noise does not keep it drafting at a loss.
        if best_g and best_r < base * 1.03:
            best_g = 0
        if best_g == 0:
            self._since_probe += 1
            if self._since_probe >= self.probe_every(fit):
                self._since_probe = 0
                self._probing = True
                self.length, self.off = min(_PROBE_LENGTH, dmax), True
                return self.length  # a short probe: refreshes the acceptance estimate
            self.length, self.off = 0, True
            return 0
        self._since_probe = 0
        self.length, self.off = best_g, False
        return best_g
