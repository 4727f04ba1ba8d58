"""Choosing the draft length from what drafting actually costs and earns.

With per-token acceptance a and draft length g, one target pass yields on average
E(g) = (1 - a^(g+1)) / (1 - a) tokens and costs g * t_d (drafting) + t_v(g+1) (verifying g+1
tokens). The policy measures a, t_d and t_v(n) online and picks the g that maximises
E(g) / (g * t_d + t_v(g+1)). g = 0 is plain decoding, chosen whenever drafting does not pay: a tiny
target on a CPU, where verifying k tokens costs nearly k single decodes, or a drafter that keeps
guessing wrong.

What it costs to find out is bounded. Every draft the policy forces to learn something (the
first cost measurement, probes while drafting is off, the extra looks after a probe that held) is
paid from a budget of _PROBE_BUDGET of each request's own plain-decoding time, so a short request
loses at most that much; once the measured costs show that no draft length could pay even if
every draft token were accepted, only one look after _REFRESH_REQUESTS requests without one (late
in a long request) checks that this is still so: costs measured while something else loaded the
machine must not keep drafting off for good. Costs are a property of the pair and the machine,
not of the text: they carry from one request to the next (fixed-length runs feed them too), and a
draft model's catch-up on text it has not read is charged to the draft that needs it.

A free drafter (prompt lookup, the session drafter) says how long the n-gram it followed was, and
that predicts its acceptance far better than one figure for the whole text: in an edit a 4-token
match is usually copied text, while a 1-token match in new code is a guess. So acceptance is also
kept per match length (1, 2, 3, 4+), and each free draft is cut to the length that pays at its
match's acceptance, or not sent at all (`fit_draft`). That evidence is kept per source too: an
edit's copy of the code it replaces ("original", engine/edit_drafter.py) agrees with the target far
more often than prompt lookup does at the same match length. A free guess costs nothing to make, so
one that was not sent (or the rest of one that was cut) is still judged against the token the
target wrote in its place (`observe_guess`): a match length learns whether it pays without probes.
A draft model's acceptance is the pair's more than the text's, so its evidence carries to the next
request in full; a free drafter's, which depends on whether the new text repeats, carries only in
part.
"""

from __future__ import annotations

from .costs import CostModel
from .drafters import Draft, PassRecord, common_prefix
from .settings import SpeculativeSettings

_DECAY = 0.97  # per-pass decay of the acceptance evidence (recent passes matter more)
_PROBE_LENGTH = 2  # draft tokens in a probe while drafting is off
_PROBE_BUDGET = 0.02  # forced drafting may cost at most this share of a request's plain time ...
_EXPECTED_PASSES = 64  # ... counted from the start as if the request ran at least this long
_PROBE_MIN = 16  # probes come at least this many passes apart (a new request's early one aside)
_EARLY_PROBE = 2  # while off, a new request probes at this loop pass (when the budget allows)
_EVIDENCE_MAX = 32  # decayed evidence kept, in draft tokens and rejections
_CARRY = 0.2  # share of a free drafter's acceptance evidence a new request inherits
_CARRY_MODEL = 1.0  # a draft model's: its acceptance is a property of the pair
# After this many requests without a probe (no draft could pay, or no probe fitted a request's
# budget), one measures the costs again: costs sampled while another program loaded the machine
# would otherwise keep drafting off for the rest of the session.
_REFRESH_REQUESTS = 4
_CONTINUATION_CARRY_MAX = 4.0  # draft positions of stop evidence a new request inherits at most
_MATCH_BUCKETS = 6  # free drafts keep acceptance evidence per match length 1, 2, 3, 4-7, 8-15, 16+
_MARGIN = 1.03  # drafting must beat plain decoding by this much
_TREE_MARGIN = 1.02  # a branch must raise the pass's expected rate by this much
_BRANCH_PRIOR = (0.5, 1.5)  # (held tokens, misses) a branch's evidence starts from: a = 1/4
# No acceptance is certain: at a = 1 a draft that costs what it saves would look like a gain.
_A_MAX = 0.999
_STEADY_CATCHUP = 2  # tokens a draft model reads before every draft (what the last pass emitted)
_HORIZON = 64  # passes a catch-up is spread over at most when deciding to turn drafting on
_PRIOR_DRAFT = 0.5  # a draft model's token cost, in t1, until it is measured
PROBE_WINDOW = 16  # a probe's draft model reads at most this much recent text first
_PRIOR_VERIFY_SLOPE = 0.5  # extra cost of one more verified token, in t1, until measured
# A hybrid probes its free part alone only where a fair n-gram guess (2 tokens of 3 held) would
# pay: where verifying is memory-bound it does, on a small model on a CPU (compute-bound: a batch
# of 2-3 tokens costs about twice one token) it does not, and there the probes' wins are too
# rare: probed at any acceptance, a Q2_K self-draft's FIM completions ran slower than plain.
_FREE_PROBE_A = 0.65


ORIGINAL = "original"  # the evidence of drafts copied from an edit's original region
FREE = "free"  # every other free guess (prompt lookup, the session drafter)


def evidence_source(sources: list[str] | None) -> str:
    """Whose match-length evidence a free draft feeds: the edit copy's or the other free guesses'."""
    return ORIGINAL if sources and sources[0] == ORIGINAL else FREE


class UnsentGuesses:
    """A free guess that was not sent, judged once the target has written past its first
    JUDGED tokens or away from them: how many the target wrote in their places (the evidence a
    sent draft of that length would have given, token for token). One at a time, so the evidence
    of two guesses never overlaps; a few tokens, so a guess is decided within a few plain passes
    (judging only the first token would price every position at the first's odds, which are the
    best)."""

    JUDGED = 4

    def __init__(self) -> None:
        self._guess: tuple[list[int], int, str, int] | None = None  # tokens, match, source, at

    def offer(self, tokens: list[int], match: int, source: str, at: int) -> None:
        if self._guess is None and tokens and match > 0:
            self._guess = (list(tokens[:self.JUDGED]), match, source, at)

    def judge(self, history: list[int], observe) -> None:
        """`observe(match, known, held, source)` once the guess is decided."""
        if self._guess is None:
            return
        tokens, match, source, at = self._guess
        written = history[at:at + len(tokens)]
        held = common_prefix(tokens, written)
        if held < len(written) or len(written) == len(tokens):
            self._guess = None
            observe(match, min(held + 1, len(tokens)), held, source)


def expected_tokens(a: float, g: int, then: tuple[float, int] | None = None) -> float:
    """Tokens one pass yields on average: the target's own token plus the expected accepted prefix
    of g draft tokens that each hold with chance a (given the ones before held), followed by
    `then` = (acceptance, count) more (a free guess extended by a draft model). The one formula:
    the policy prices with it and the bench predicts with it."""
    a = min(max(a, 0.0), 1.0)
    run = float(g) if a >= 1.0 else (a - a ** (g + 1)) / (1.0 - a) if g > 0 else 0.0
    total = 1.0 + run
    if then is not None and then[1] > 0:
        a2, g2 = min(max(then[0], 0.0), 1.0), then[1]
        more = float(g2) if a2 >= 1.0 else (a2 - a2 ** (g2 + 1)) / (1.0 - a2)
        total += (a ** max(g, 0)) * more
    return total


def _add_evidence(succ: float, fail: float, tried: int, held: int) -> tuple[float, float]:
    """Decayed (held tokens, rejections) after `held` of `tried` guessed tokens agreed with the
    target (a rejection where held < tried), bounded to _EVIDENCE_MAX."""
    succ = succ * _DECAY + min(held, tried)
    fail = fail * _DECAY + (1 if held < tried else 0)
    scale = min(1.0, _EVIDENCE_MAX / (succ + fail))
    return succ * scale, fail * scale


def match_bucket(match: int) -> int:
    """Evidence bucket of a free draft's match length: 1, 2, 3 alone, then doubling ranges. Why:
    the drafters report how long the text agreed with the draft's source (an edit's copy runs for
    dozens of tokens), and 4 agreeing tokens are a guess next to 20."""
    if match <= 3:
        return max(match, 1)
    return min(3 + (match // 4).bit_length(), _MATCH_BUCKETS)



class DraftPolicy:
    """Picks the next draft length; `fixed` (adaptive off) always returns draft_max.

    `costs` may be shared: costs are the pair's and the machine's, so a fixed-length run (bench
    sweeps, warm-ups) teaches the adaptive policy what drafting and verifying cost."""

    def __init__(self, spec: SpeculativeSettings, *, draft_is_free: bool = False,
                 costs: CostModel | None = None, prior: tuple[float, float] = (0.0, 0.0),
                 free_part: bool = False) -> None:
        self.spec = spec
        # A paid drafter with a free part (the hybrid's session guess): where paying does not pay,
        # a pass may still send the free guess, judged by its match length (`free_only`).
        self.free_part = free_part and not draft_is_free
        self.free_only = False
        self.adaptive = spec.adaptive
        self.costs = costs if costs is not None else CostModel()
        self.draft_is_free = draft_is_free  # prompt lookup: drafting costs ~nothing
        # Decayed evidence for the per-token acceptance a (geometric model): accepted draft tokens
        # and rejections. Every pass decays it, drafted or not, so while drafting is off the
        # estimate drifts back to the prior (a = 1/2) instead of staying frozen at the figure that
        # turned drafting off: the text may have changed since (a new request, an edit that
        # repeats the file), and the next probe then decides on what it sees.
        # `prior`: evidence (accepted tokens, rejections) a drafter brings before its first draft
        # (a derived copy of the target agrees with it on most tokens).
        self._succ, self._fail = prior
        # The same evidence per source and match length of a free drafter's n-gram (index 0
        # unused), decayed when that length is drafted or judged, not every pass.
        self._match_succ = {s: [0.0] * (_MATCH_BUCKETS + 1) for s in (FREE, ORIGINAL)}
        self._match_fail = {s: [0.0] * (_MATCH_BUCKETS + 1) for s in (FREE, ORIGINAL)}
        # Branches (other continuations a free drafter found, engine/token_tree.py): per match
        # length bucket, how their tokens held where the draft's own path failed at the point the
        # branch leaves it. Judged for every branch offered, sent or not, from what the target
        # wrote: evidence costs nothing, so a tree is sent only where it has shown it pays.
        self._branch_succ = [0.0] * (_MATCH_BUCKETS + 1)
        self._branch_fail = [0.0] * (_MATCH_BUCKETS + 1)
        # ... and how often a branch offered beside a sent draft left it exactly where it failed
        # (a branch elsewhere adds nothing): measured, since a draft's failures are not geometric
        # (a copy holds for long, then breaks at an edit).
        self._branch_offers = [0.0] * (_MATCH_BUCKETS + 1)
        self._branch_hits = [0.0] * (_MATCH_BUCKETS + 1)
        self._branch_watch: list[tuple[list[int], int, int]] = []  # (tokens, match, position)
        # A draft model stops short of the length asked when it is unsure (p_min): evidence
        # (positions it reached, stops) for the chance c that it drafts the next position. Why:
        # asked for 8 and stopping after 2 (chat prose), a draft yields 3 tokens, not the 9 that
        # acceptance alone predicts, for a draft call and a catch-up that cost the same; priced as
        # 9, drafting stayed on below plain speed with every draft token accepted.
        self._reach, self._stops = 0.0, 0.0
        self._since_probe = _PROBE_MIN - _EARLY_PROBE  # the first measurement comes early
        self._since_refresh = 0  # requests since the last probe
        self.probing = False  # the pass in flight is forced (a probe or a first measurement)
        self._can_pay: tuple[tuple | None, bool] = (None, True)  # (costs it was computed for, answer)
        # New evidence since drafting turned off (a draft's result, a new request). While off, the
        # decaying evidence alone never turns drafting back on: that would be an unbudgeted probe.
        self._fresh = True
        # This request: forced drafting spent (s), loop passes, tokens still allowed.
        self._spent = 0.0
        self._passes = 0
        self._remaining: int | None = None
        self._expected = _EXPECTED_PASSES
        self.length = 0
        self.off = False  # True while drafting does not pay
        # This request's free guesses are judged when not sent, for a drafter that says its
        # guesses are worth it (`Drafter.judge_unsent`: an edit's copy of its original).
        self.judge_unsent = False
        # A free guess that was not sent, waiting to be judged against what the target writes.
        self.unsent = UnsentGuesses()

    def new_request(self, max_tokens: int | None = None, *, judge_unsent: bool = False) -> None:
        """New text may draft differently, so what the last request taught about acceptance
        counts for less (costs carry in full). Each request has its own probing budget, and
        while off it probes early, so an edit that repeats its input gets drafting back."""
        self.judge_unsent = judge_unsent
        self.unsent = UnsentGuesses()
        carry = _CARRY if self.draft_is_free else _CARRY_MODEL
        self._succ *= carry
        self._fail *= carry
        # How far the draft model gets before it is unsure is the text's (prose stops it early,
        # code that repeats does not), not only the pair's: it carries in part.
        self._reach *= _CARRY
        self._stops *= _CARRY
        total = self._reach + self._stops
        if total > _CONTINUATION_CARRY_MAX:  # a few drafts of the new text outweigh it
            self._reach *= _CONTINUATION_CARRY_MAX / total
            self._stops *= _CONTINUATION_CARRY_MAX / total
        # How faithfully the model copies a region it rewrites is the model's more than the
        # text's: an edit's copy keeps its evidence in full, as a draft model's acceptance does.
        for source in self._match_succ:
            for b in range(_MATCH_BUCKETS + 1):
                keep = _CARRY_MODEL if source == ORIGINAL else _CARRY
                self._match_succ[source][b] *= keep
                self._match_fail[source][b] *= keep
        for evidence in (self._branch_succ, self._branch_fail, self._branch_offers, self._branch_hits):
            for b in range(_MATCH_BUCKETS + 1):
                evidence[b] *= _CARRY
        self._branch_watch = []
        self._spent = 0.0
        self._passes = 0
        self._since_refresh += 1
        self._remaining = max_tokens
        self._expected = min(max_tokens, _EXPECTED_PASSES) if max_tokens else _EXPECTED_PASSES
        self._fresh = True
        if self.off:
            self._since_probe = max(self._since_probe, _PROBE_MIN - _EARLY_PROBE)

    @property
    def acceptance(self) -> float:
        return (self._succ + 1.0) / (self._succ + self._fail + 2.0)

    @property
    def continuation(self) -> float:
        """The chance that a draft model drafts the next position asked for (1 until it has
        stopped short: a drafter that never stops early is priced as before)."""
        return (self._reach + 1.0) / (self._reach + self._stops + 1.0)

    def acceptance_for(self, match: int, source: str = FREE) -> float:
        """Per-token acceptance of free drafts whose text agreed with their source for `match`
        tokens (the n-gram they followed, extended back). A length with little evidence of its
        own starts from the next shorter one's figure (at least 1/2): text that agrees with its
        source for longer is no worse a guess, and a copy followed for 20 tokens would otherwise
        start as doubtful as a fresh 1-token match."""
        return self._bucket_acceptance(source)[match_bucket(match)]

    def _bucket_acceptance(self, source: str = FREE) -> list[float]:
        """acceptance_for of every bucket (index 0 unused)."""
        out = [0.5]
        for b in range(1, _MATCH_BUCKETS + 1):
            s, f = self._match_succ[source][b], self._match_fail[source][b]
            out.append((s + 2.0 * max(out[-1], 0.5)) / (s + f + 2.0))
        return out

    # -- measurements ----------------------------------------------------------------------------
    def observe_prompt(self, tokens: int, seconds: float) -> None:
        self.costs.observe_prompt(tokens, seconds)

    def observe(self, drafted: int, accepted: int, draft_s: float, verify_s: float,
                catchup_s: float = 0.0, catchup_tokens: int = 0, *, asked: int | None = None,
                match: int = 0, free: int = 0, rows: int = 0, same_shape: bool = True,
                source: str = FREE) -> None:
        """Record one pass: `drafted` proposals of which `accepted` held. `draft_s` is the
        drafting itself; `catchup_s` the draft model reading `catchup_tokens` tokens first. Up to
        _STEADY_CATCHUP tokens that is a cost of every draft (counted in t_d); more is the lag of
        a draft that was off, measured on its own and charged when drafting turns on. `asked` is
        the length the drafter was asked for (a draft model may stop short of it, or at 0);
        `match` the length of the n-gram a free draft followed (0: not a free draft); `free` how
        many leading proposals cost nothing (a hybrid's session guess): the draft model's cost and
        acceptance are learned from the rest alone, and a pass that sent only free tokens is a
        free pass. `rows`: the pass's rows when padded (default drafted + 1); `same_shape`: False when
        the pass changed a padded shape (a GPU then runs it without its captured graph: not what
        passes cost while drafting stays on, so its time is not a cost sample); `source`: whose match
        evidence a free draft feeds (`evidence_source`)."""
        free = min(max(free, 0), drafted)
        paid = drafted - free
        asked = drafted if asked is None else asked
        c = self.costs
        if catchup_tokens > _STEADY_CATCHUP:
            c.observe_catchup(catchup_tokens, catchup_s)
            steady = catchup_s * _STEADY_CATCHUP / catchup_tokens
        else:
            steady = catchup_s
        free_pass, self.free_only = self.free_only or (free > 0 and not paid), False
        if asked and not self.draft_is_free and not free_pass:
            c.observe_draft(paid, draft_s + steady)
        t1 = c.verify.get(1)
        if self.probing and asked:
            if t1:  # what the probe cost beyond the plain passes it replaced
                self._spent += max(draft_s + catchup_s + verify_s - (accepted + 1) * t1, 0.0)
            # A probe that held earns another look at once (the text may have started to repeat
            # itself, or the draft is simply good): evidence gathers quickly, and every look is
            # paid from the same budget, so looks at a draft that is accurate but too dear stop
            # when the budget is spent.
            if drafted and accepted == drafted:
                self._since_probe = _PROBE_MIN
        self.probing = False
        self._passes += 1
        if self._remaining is not None:
            self._remaining -= accepted + 1
        if same_shape:
            c.observe_verify(rows or drafted + 1, verify_s)
        if self.draft_is_free or (drafted and not free_pass):
            # A free drafter's figure drifts back to the prior while off (the text may start
            # repeating); a draft model's only moves with its drafts: it is the pair's.
            self._succ *= _DECAY
            self._fail *= _DECAY
        if drafted:
            self._fresh = True
        if asked and not self.draft_is_free and not free_pass and not free:
            self._reach = self._reach * _DECAY + min(drafted, asked)
            self._stops = self._stops * _DECAY + (1 if drafted < asked else 0)
        if paid and not free_pass and accepted >= free:  # a free guess's evidence is its match
            self._succ += accepted - free                 # length's alone; the model's tokens
            self._fail += 1 if accepted < drafted else 0  # count where the target reached them
            total = self._succ + self._fail
            if total > _EVIDENCE_MAX:  # bounded memory: a change of text shows within a few passes
                self._succ *= _EVIDENCE_MAX / total
                self._fail *= _EVIDENCE_MAX / total
        if drafted and match > 0:
            self._match_evidence(match, free or drafted, accepted, source)  # the free guess's own tokens

    def observe_guess(self, match: int, known: int, held: int, source: str = FREE) -> None:
        """A free guess that followed a `match`-token n-gram was not sent (a draft model's tokens
        were), and the target has written `known` tokens where it would have gone since: the
        first `held` of them agreed with it. Evidence for that match length as if it had been
        sent; a mismatch counts only where it is seen. Why: a hybrid sends whichever pays, and a
        match length priced at the 1/2 it starts from never paid beside a draft model that
        agreed almost always, so it was never sent and never learned: an edit that copies its
        input ran at the model's speed, far below what its session guesses give."""
        if match > 0 and known > 0:
            self._match_evidence(match, known, held, source)

    def _match_evidence(self, match: int, tried: int, held: int, source: str = FREE) -> None:
        """`held` of `tried` free tokens that followed a `match`-token n-gram agreed with the
        target (a rejection where held < tried), decayed and bounded."""
        b = match_bucket(match)
        self._match_succ[source][b], self._match_fail[source][b] = _add_evidence(
            self._match_succ[source][b], self._match_fail[source][b], tried, held)

    # -- the model -------------------------------------------------------------------------------
    def _draft_cost(self, g: float, t1: float) -> float:
        """Time of a g-token draft (free drafters: nothing; unmeasured: the prior per token)."""
        if self.draft_is_free or g <= 0:
            return 0.0
        cost = self.costs.draft_cost(g)
        return cost if cost is not None else g * _PRIOR_DRAFT * t1

    def rate(self, g: int, fit: tuple[float, float] | None = None, *, lag: int = 0,
             a: float | None = None, free: bool = False, stops: bool = True) -> float | None:
        """Expected tokens per second at draft length g, from the current measurements; a draft
        model's catch-up on `lag` unread tokens is spread over the passes it would serve, and its
        stops short of g (`continuation`) count unless `stops` is False (what the costs alone
        allow)."""
        tv = self.costs.t_verify(g + 1, fit)
        t1 = self.costs.verify.get(1)
        if tv is None or t1 is None:
            return None
        e = expected_tokens(min(self.acceptance if a is None else a, _A_MAX), g)
        if g == 0:
            return e / tv
        free = free or self.draft_is_free
        if stops and not free and self.continuation < 1.0:
            # A draft model reaches position i with chance c^i: it drafts D tokens on average and
            # position i is accepted with chance (a c)^i.
            c = self.continuation
            e = expected_tokens(min((self.acceptance if a is None else a) * c, _A_MAX), g)
            drafted = sum(c ** i for i in range(1, g + 1))
            tv = self._t_verify_between(drafted + 1.0, fit)
            if tv is None:
                return None
            cost = self._draft_cost(drafted, t1) + tv
        else:
            cost = (0.0 if free else self._draft_cost(g, t1)) + tv
        if lag > _STEADY_CATCHUP and not free:
            left = self._remaining if self._remaining is not None else _HORIZON * e
            horizon = min(max(left / e, 1.0), _HORIZON)
            cost += self.costs.catchup(lag) / horizon
        return e / cost

    def _t_verify_between(self, n: float, fit: tuple[float, float] | None) -> float | None:
        """t_v at a mean pass size: between the sizes on either side."""
        lo = max(int(n), 1)
        t_lo, t_hi = self.costs.t_verify(lo, fit), self.costs.t_verify(lo + 1, fit)
        if t_lo is None or t_hi is None:
            return None
        return t_lo + (t_hi - t_lo) * (n - lo)

    def can_pay(self, fit: tuple[float, float] | None) -> bool:
        """False when measured costs show that no draft length could beat plain decoding even if
        every draft token were accepted (a small model on a CPU with a draft model that is not
        much cheaper): then nothing is ever forced. Unknown or barely sampled costs are no proof:
        True."""
        t1 = self.costs.verify.get(1)
        if fit is None or t1 is None or not self.costs.settled(self.draft_is_free):
            return True
        # The costs alone decide, so the answer holds until they change (while off, this is
        # asked every pass).
        key = (self.costs.revision, self.costs.shape, self.spec.draft_max, fit)
        if self._can_pay[0] != key:
            base = 1.0 / t1
            self._can_pay = (key, any((self.rate(g, fit, a=1.0, stops=False) or 0.0) > base
                                      for g in range(1, self.spec.draft_max + 1)))
        return self._can_pay[1]

    def _probe_length(self, fit: tuple[float, float] | None) -> int:
        """2 tokens; 1 while nothing is known beyond t1 (the cheapest way to fit t_v and t_d)."""
        return min(_PROBE_LENGTH if fit is not None else 1, self.spec.draft_max)

    def probe_cost(self, lag: int = 0, fit: tuple[float, float] | None = None, *,
                   free: bool = False) -> float | None:
        """Predicted extra time of a probe over the plain passes it replaces; `lag`: what the
        probe's draft model reads first (at most PROBE_WINDOW recent tokens). A free drafter's
        (or, `free`, a hybrid's free part alone) is priced with nothing accepted (its evidence
        drifts back to the prior while off); a draft model's with the acceptance it has shown,
        which is the pair's and does not drift: a probe of a draft that keeps holding costs
        nothing, so evidence for it gathers within a request, while one that keeps failing is
        priced at its full cost."""
        c = self.costs
        t1 = c.verify.get(1)
        if t1 is None:
            return None
        length = self._probe_length(fit)
        tv = self._verify_cost(length, t1, fit)
        if free or self.draft_is_free:
            return max(tv - t1, 0.0)
        extra = tv - t1 + self._draft_cost(length, t1)
        if lag > _STEADY_CATCHUP:
            extra += c.catchup(lag)
        extra -= (expected_tokens(min(self.acceptance * self.continuation, _A_MAX), length) - 1.0) * t1
        return max(extra, 0.0)

    def _allowance(self) -> float:
        """What forced drafting may have cost so far in this request."""
        t1 = self.costs.verify.get(1) or 0.0
        return _PROBE_BUDGET * t1 * max(self._passes, self._expected)

    def _paying_length(self, fit: tuple[float, float], up_to: int, *, lag: int = 0,
                       a: float | None = None, free: bool = False) -> int:
        """The draft length up to `up_to` with the best expected rate, if it beats plain decoding
        by the margin; else 0."""
        base = self.rate(0, fit)
        if base is None:  # no plain pass measured
            return 0
        best_g, best_r = 0, base
        for g in range(1, up_to + 1):
            r = self.rate(g, fit, lag=lag, a=a, free=free)
            if r is not None and r > best_r:
                best_g, best_r = g, r
        return best_g if best_g and best_r >= base * _MARGIN else 0

    def fit_draft(self, proposed: int, match: int, source: str = FREE) -> int:
        """How many of a free draft's `proposed` tokens to send to the target, given that the
        drafter followed a `match`-token n-gram: the length that pays at that match length's
        acceptance, 0 when none does (the pass is a plain one, and costs nothing extra). A match
        length that does not pay is probed now and then, from the request's probe budget."""
        if not (self.adaptive and (self.draft_is_free or self.free_only)) or proposed <= 0:
            return proposed
        if self.free_only:  # a hybrid's free guess: what pays at its match length
            if self.probing:  # next_length forced this look at the free part (its budget is counted)
                return min(proposed, self.length) if match > 0 else 0
            fit = self.costs.line()
            if fit is None or match <= 0:
                return 0
            self.length = self._paying_length(fit, proposed, a=self.acceptance_for(match, source), free=True)
            return self.length
        if self.probing:  # next_length forced this draft already (its budget is counted)
            return min(proposed, self.length)
        fit = self.costs.line()
        t1 = self.costs.verify.get(1)
        if fit is None or t1 is None:
            return proposed  # still learning t_v: next_length asked for a short probe already
        a = self.acceptance_for(match, source) if match > 0 else self.acceptance
        best_g = self._paying_length(fit, proposed, a=a)
        self.probing = False
        if best_g:
            self.length, self.off = best_g, False
            return best_g
        self.length, self.off = 0, True
        self._since_probe += 1
        if self._since_probe >= _PROBE_MIN and self.can_pay(fit):
            cost = self.probe_cost(0, fit)
            if cost is not None and self._spent + cost <= self._allowance():
                self._since_probe = 0
                self.probing = True
                self.length = min(self._probe_length(fit), proposed)
                return self.length
        return 0

    def next_length(self, lag: int = 0, probe_lag: int | None = None) -> int:
        """Draft length for the next pass; `lag`: tokens the drafter must read before drafting,
        `probe_lag`: before a probe's draft (a short window of recent text; default `lag`)."""
        dmax = self.spec.draft_max
        self.free_only = False
        if not self.adaptive or dmax <= 0:
            self.off = dmax <= 0
            return max(dmax, 0)
        self.probing = False
        if 1 not in self.costs.verify:  # first measure a plain pass
            self.off = True
            return 0
        fit = self.costs.line()
        known = fit is not None and (self.draft_is_free or self.costs.draft_token is not None)
        if fit is not None and self.draft_is_free:
            # Drafting is nearly free: draft at full length and let `fit_draft` judge each
            # proposal by its match length, as long as some match length could pay at its
            # acceptance; otherwise not even the drafter runs (a probe now and then, below). A
            # drafter that copies an edit's original (`judge_unsent`) is asked every pass where
            # any draft could pay: what it guessed and did not send is judged all the same, so a
            # copy that holds turns drafting on within a few passes.
            if self._free_could_pay(fit, dmax) or (self.judge_unsent and self.can_pay(fit)):
                return dmax
            self.off = True
        if fit is not None and self.costs.draft_token is not None and not self.draft_is_free and (
                self._fresh or not self.off):
            self._fresh = False
            best_g = self._paying_length(fit, dmax, lag=lag)
            if best_g:
                self._since_probe = self._since_refresh = 0
                self.length, self.off = best_g, False
                return best_g
        # Off, or the costs are not known yet: a short forced draft when the budget allows.
        self._since_probe += 1
        self.length, self.off = 0, True
        # Where no draft length could pay even at full acceptance there is nothing to learn, but
        # for a look now and then at whether that is still true.
        if self._since_probe >= _PROBE_MIN:
            pays = not known or self.can_pay(fit)
            # No probe for a few requests (no draft could pay, or none fitted a request's budget,
            # at costs that may have been measured under load): one look measures those costs
            # again, whatever they say it costs, late in a long request (a small share of it).
            refresh = self._since_refresh >= _REFRESH_REQUESTS and self._passes >= _EXPECTED_PASSES
            cost = self.probe_cost(lag if probe_lag is None else probe_lag, fit) if pays else None
            if refresh or (cost is not None and self._spent + cost <= self._allowance()):
                self._since_probe = self._since_refresh = 0
                self.probing = True
                self.length = self._probe_length(fit)
                if refresh:  # what this probe measures replaces what was measured before
                    self.costs.remeasure(range(self.length + 1), self.length + 1)
                return self.length
        # Whether a free draft pays rises with its acceptance: where a fair guess (_FREE_PROBE_A)
        # cannot pay, no weaker one can, so one check settles both questions below (each prices
        # every draft length, every pass, on a CPU where nothing pays).
        a_best = self._best_free_acceptance() if self.free_part else 0.0
        if (self.free_part and fit is not None
                and self._free_could_pay(fit, dmax, a=max(a_best, _FREE_PROBE_A))):
            if a_best >= _FREE_PROBE_A or self._free_could_pay(fit, dmax, a=a_best):
                self.free_only = True  # the free part alone, cut by `fit_draft` to what pays
                return dmax
            # No match length pays yet (no evidence: each starts at 1/2, which pays only where
            # verifying is nearly free): the free part alone is probed now and then, from the
            # same budget, where a fair guess would pay (_FREE_PROBE_A). Without this a hybrid whose
            # model did not pay never learned that its session guesses did (an edit's first
            # request ran at plain speed where the next, with that evidence, gained).
            cost = self.probe_cost(0, fit, free=True) if self._since_probe >= _PROBE_MIN else None
            if cost is not None and self._spent + cost <= self._allowance():
                self._since_probe = 0
                self.probing = self.free_only = True
                self.length = self._probe_length(fit)
                return self.length
        return 0

    def _free_could_pay(self, fit: tuple[float, float], up_to: int, a: float | None = None) -> bool:
        """Some match length's acceptance (or `a`) makes a free draft of some length pay."""
        a_best = self._best_free_acceptance() if a is None else a
        base = self.rate(0, fit)
        if base is None:  # no plain pass measured
            return False
        return any((self.rate(g, fit, a=a_best, free=True) or 0.0) >= base * _MARGIN
                   for g in range(1, up_to + 1))

    def _best_free_acceptance(self) -> float:
        return max(max(self._bucket_acceptance(source)[1:]) for source in self._match_succ)

    # -- trees: branches beside a free draft ----------------------------------------------------
    def branch_acceptance(self, match: int) -> float:
        """Per-token acceptance of a branch of this match length, from where it leaves the draft
        (its first token counts: the target's own token there is what it must equal)."""
        b = match_bucket(match)
        s, f = self._branch_succ[b], self._branch_fail[b]
        return (s + _BRANCH_PRIOR[0]) / (s + f + sum(_BRANCH_PRIOR))

    def branch_reach(self, match: int) -> float:
        """The chance that a branch of this match length leaves the draft where the draft fails."""
        b = match_bucket(match)
        return (self._branch_hits[b] + _BRANCH_PRIOR[0]) / (self._branch_offers[b] + sum(_BRANCH_PRIOR))

    def fit_branches(self, draft: Draft, source: str = FREE) -> list[list[int]]:
        """The draft's branches worth verifying beside it in one tree, each cut to the length that
        pays (none: a linear pass). A branch yields more only when the draft fails where the branch
        leaves it (`branch_reach`), and then only beyond its first token, which the target's own
        token gives a linear pass too; it costs its rows (t_v by rows).
        Adaptive off (bench sweeps): every branch, to the draft's depth."""
        main = draft.tokens
        if not self.spec.tree or not main or not draft.branches or self.probing:
            return []
        pairs = [(b, m, common_prefix(b, main)) for b, m in zip(draft.branches, draft.branch_matches)]
        pairs = [(b[:len(main)], m, d) for b, m, d in pairs if d < min(len(b), len(main))]
        if not self.adaptive:
            return [b for b, _, _ in pairs]
        fit, t1 = self.costs.line(), self.costs.verify.get(1)
        if fit is None or t1 is None:
            return []
        a = min(self.acceptance_for(draft.match, source) if draft.match > 0 else self.acceptance, _A_MAX)
        e, drafted = expected_tokens(a, len(main)), len(main)
        cost = self._verify_cost(drafted, t1, fit)
        out: list[list[int]] = []
        used: set[int] = set()
        for branch, match, d in pairs:
            if d in used:  # one branch per depth: a second one would share the first's chance
                continue
            ab, reach = min(self.branch_acceptance(match), _A_MAX), self.branch_reach(match)
            best: tuple[float, int, float, float] | None = None
            for n in range(2, len(branch) - d + 1):
                gain = reach * (expected_tokens(ab, n) - 1.0 - ab)
                c = self._verify_cost(drafted + n, t1, fit)
                r = (e + gain) / c
                if r > e / cost * _TREE_MARGIN and (best is None or r > best[0]):
                    best = (r, n, gain, c)
            if best is not None:
                out.append(branch[:d + best[1]])
                used.add(d)
                e, cost, drafted = e + best[2], best[3], drafted + best[1]
        return out

    def _watch_branches(self, rec: PassRecord) -> None:
        """Count the branches offered beside a sent draft, and judge (in `judge`) those that left
        it where it failed."""
        main = rec.draft.tokens
        held = rec.tree.main_held if rec.tree is not None else rec.accepted
        for branch, match in zip(rec.draft.branches, rec.draft.branch_matches):
            d = common_prefix(branch, main)
            if d >= min(len(branch), len(main)):
                continue  # no branch beside this draft (it covers the branch, or was cut before it)
            b = match_bucket(match)
            self._branch_offers[b] = self._branch_offers[b] * _DECAY + 1
            self._branch_hits[b] = self._branch_hits[b] * _DECAY + (d == held)
            if d == held:
                self._branch_watch.append((branch[held:], match, rec.at + held))

    def _judge_branches(self, history: list[int]) -> None:
        left = []
        for tokens, match, at in self._branch_watch:
            written = history[at:at + len(tokens)]
            held = common_prefix(tokens, written)
            if held < len(written) or len(written) == len(tokens):
                b = match_bucket(match)
                self._branch_succ[b], self._branch_fail[b] = _add_evidence(
                    self._branch_succ[b], self._branch_fail[b], len(tokens), held)
            else:
                left.append((tokens, match, at))
        self._branch_watch = left

    # -- one pass --------------------------------------------------------------------------------
    def learn(self, rec: PassRecord) -> None:
        """What one pass cost and earned (the record the stats get too). A tree's rows are its
        nodes; the draft's own evidence is how much of its own path held."""
        d = rec.draft
        tree = rec.tree
        self.observe(len(d.tokens), rec.accepted if tree is None else tree.main_held,
                     d.time_s - d.catchup_s, rec.verify_s, d.catchup_s,
                     d.catchup_tokens, asked=rec.asked, match=d.match, free=d.free_tokens,
                     rows=rec.rows if rec.padded or tree is not None else 0, same_shape=rec.same_shape,
                     source=rec.source)
        if d.branches:
            self._watch_branches(rec)

    def not_sent(self, guess: Draft, at: int, source: str) -> None:
        """A free guess made after `at` tokens of text was not sent: judge it once the target has
        written there (`judge`), so its match length learns whether it pays without probes."""
        self.unsent.offer(guess.tokens, guess.match, source, at)

    def judge(self, history: list[int]) -> None:
        self.unsent.judge(history, self.observe_guess)
        if self._branch_watch:
            self._judge_branches(history)

    # -- the hybrid: a free guess and a draft model ------------------------------------------------
    def split(self, n_free: int, k: int, lag: int, match: int, source: str = FREE) -> tuple[int, int]:
        """(free tokens, model tokens) to send, from a free guess of `n_free` tokens that followed
        a `match`-token n-gram and the model's length `k` (what pays for the model); `lag`: what
        the model reads before drafting. The proposal with the best expected tokens per second:
        the model alone, the guess cut anywhere, or the guess extended by the model up to k. A
        guess that keeps failing stops being sent, and one that holds saves the model's time."""
        a_free = self.acceptance_for(match, source)
        options = [(0, k)] + [(c, 0) for c in range(1, n_free + 1)]
        if 0 < n_free < k:
            options.append((n_free, k - n_free))
        return max(options, key=lambda o: self._split_rate(o[0], o[1], lag + o[0] if o[1] else 0, a_free))

    def _split_rate(self, n_free: int, n_model: int, lag: int, a_free: float) -> float:
        t1 = self.costs.verify.get(1) or 1.0
        draft = self._draft_cost(n_model, t1)
        if n_model and lag > _STEADY_CATCHUP:
            draft += self.costs.catchup(lag)
        tv = self._verify_cost(n_free + n_model, t1)
        return expected_tokens(a_free, n_free, then=(self.acceptance, n_model)) / (draft + tv)

    def _verify_cost(self, drafted: int, t1: float, fit: tuple[float, float] | None = None) -> float:
        """t_v of a pass carrying `drafted` draft tokens: measured, or from the line through the
        measured sizes, else the prior slope per extra token."""
        tv = self.costs.t_verify(drafted + 1, fit)
        return tv if tv is not None else t1 * (1.0 + _PRIOR_VERIFY_SLOPE * drafted)
