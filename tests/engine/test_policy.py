"""The draft-length decision, fed with cost and acceptance figures shaped like real machines.

(The figures are inputs to a pure decision function; the real loop measures them on llama.cpp.)
"""

from __future__ import annotations

import random

import pytest

from specterm.engine.costs import CostModel
from specterm.engine.policy import ORIGINAL, PROBE_WINDOW, DraftPolicy, UnsentGuesses
from specterm.engine.settings import SpeculativeSettings


def run(passes: int, verify, accept, draft_token_s=0.0, draft_max=16):
    c = DraftPolicy(SpeculativeSettings(draft_max=draft_max))
    lengths = []
    for i in range(passes):
        k = c.next_length()
        lengths.append(k)
        c.observe(k, accept(i, k), draft_token_s * k, verify(k + 1))
    return c, lengths


def test_drafting_turns_off_when_verification_costs_k_decodes():
    """A tiny target on a CPU: t_v(n) = n * t1, half the drafts accepted -> plain decoding."""
    c, lengths = run(400, verify=lambda n: 0.01 * n, accept=lambda i, k: k // 2)
    assert c.off
    assert sum(1 for k in lengths[50:] if k) <= 6  # only the occasional, exponentially rarer probe


def test_long_drafts_when_verification_is_nearly_free():
    """A GPU: t_v(n) ~ t1, a good draft model -> the longest drafts."""
    c, lengths = run(60, verify=lambda n: 0.01 + 0.0002 * n, accept=lambda i, k: k,
                     draft_token_s=0.0005)
    assert not c.off and lengths[-1] == 16


def test_a_costly_draft_model_limits_the_length():
    """Each draft token costs a fifth of a target pass: the optimum is a medium length."""
    c, lengths = run(200, verify=lambda n: 0.01 + 0.0002 * n,
                     accept=lambda i, k: k if i % 3 else k // 2, draft_token_s=0.002)
    assert 1 < lengths[-1] < 16


def test_drafting_comes_back_when_it_starts_paying():
    c = DraftPolicy(SpeculativeSettings(draft_max=8))
    for _ in range(100):  # drafts always rejected: off
        k = c.next_length()
        c.observe(k, 0, 0.0, 0.01 + 0.001 * (k + 1))
    assert c.off
    on = False
    for _ in range(600):  # now every draft is accepted: a probe notices
        k = c.next_length()
        c.observe(k, k, 0.0, 0.01 + 0.001 * (k + 1))
        on = on or (k > 2 and not c.off)
    assert on and not c.off


def test_fixed_length_when_adaptive_is_off():
    c = DraftPolicy(SpeculativeSettings(draft_max=5, adaptive=False))
    assert [c.next_length() for _ in range(3)] == [5, 5, 5]


def _cpu_verify(n: int) -> float:
    """This 2-core box on the demo model: t1 = 12 ms, each extra row ~0.45 t1 (bench/RESULTS.md)."""
    return 0.012 * (1 + 0.45 * (n - 1))


def test_drafting_that_never_pays_costs_at_most_a_few_per_cent():
    """Nothing is ever accepted. On a CPU (a probe costs ~0.9 of a pass) probes come every ~45
    passes, 2 % of the time; on a GPU (verifying is nearly free) short drafts keep being tried
    because even a rare acceptance would pay there, but they cost about as little."""
    def spend(verify) -> tuple[float, list[int]]:
        c = DraftPolicy(SpeculativeSettings(draft_max=8))
        spent = plain = 0.0
        drafts = []
        for i in range(1500):
            k = c.next_length()
            c.observe(k, 0, 0.0, verify(k + 1))
            if i >= 100:  # after the first measurements
                spent += verify(k + 1)
                plain += verify(1)
                if k:
                    drafts.append(i)
        return spent / plain, [b - a for a, b in zip(drafts, drafts[1:])]

    cpu_ratio, cpu_gaps = spend(_cpu_verify)
    assert cpu_ratio <= 1.025 and cpu_gaps and all(40 <= g <= 50 for g in cpu_gaps), (cpu_ratio, cpu_gaps)
    gpu_ratio, _ = spend(lambda n: 0.01 + 0.0001 * n)
    assert gpu_ratio <= 1.02, gpu_ratio


def test_a_new_request_that_repeats_its_input_gets_drafting_back_quickly():
    """Hundreds of passes where nothing is accepted (completions: off), then an edit whose answer
    copies the file: the request's early probe sees it, and drafting comes back within it."""
    c = DraftPolicy(SpeculativeSettings(draft_max=16), draft_is_free=True)
    for _ in range(600):
        k = c.fit_draft(c.next_length(), 3)
        c.observe(k, 0, 0.0, _cpu_verify(k + 1), match=3)
    assert c.off
    c.new_request()
    lengths, on = [], []
    for _ in range(40):
        k = c.fit_draft(c.next_length(), 3)
        lengths.append(k)
        on.append(k > 0 and not c.off)  # drafting because it pays, not a probe
        c.observe(k, k, 0.0, _cpu_verify(k + 1), match=3)  # every draft token is accepted now
    assert lengths.index(2) <= 4 and on.index(True) <= 8, lengths  # the early probe, then on
    assert not c.off and lengths[-1] >= 8, lengths


def test_a_completion_after_an_edit_that_copied_well_pays_little_for_the_stale_evidence():
    """The edit taught 'almost everything is accepted'; the completion that follows accepts
    nothing. Its 64 passes may cost only a few passes more than plain decoding (without the
    discount on old evidence and its bound they cost 3.3 times as much)."""
    c = DraftPolicy(SpeculativeSettings(draft_max=16), draft_is_free=True)
    for _ in range(300):
        k = c.fit_draft(c.next_length(), 4)
        c.observe(k, k, 0.0, _cpu_verify(k + 1), match=4)
    assert not c.off and c.fit_draft(c.next_length(), 4) >= 8  # long drafts
    c.new_request()
    spent = 0.0
    for _ in range(64):
        k = c.fit_draft(c.next_length(), 4)
        c.observe(k, 0, 0.0, _cpu_verify(k + 1), match=4)
        spent += _cpu_verify(k + 1)
    assert c.off and spent <= 1.08 * 64 * _cpu_verify(1), spent / (64 * _cpu_verify(1))


def test_an_accurate_draft_that_is_too_dear_is_not_probed_every_pass():
    """A draft model nearly as slow as the target (t_d = 0.7 t1, every token accepted) on a CPU:
    drafting cannot pay, and probes that hold must not turn into probing at every pass."""
    c = DraftPolicy(SpeculativeSettings(draft_max=8))
    spent = plain = 0.0
    drafted_passes = 0
    for i in range(1000):
        k = c.next_length()
        t_draft = 0.7 * 0.012 * k
        c.observe(k, k, t_draft, _cpu_verify(k + 1))
        if i >= 100:
            spent += t_draft + _cpu_verify(k + 1) - k * 0.012  # accepted tokens save passes
            plain += _cpu_verify(1)
            drafted_passes += k > 0
    assert c.off and drafted_passes <= 900 * 0.1, drafted_passes
    assert spent <= 1.05 * plain, spent / plain


# -- the probing budget, per request (issue 12) ------------------------------------------------

T1 = 0.012


def _requests(c: DraftPolicy, n: int, tokens: int, verify, accept, draft_token_s: float,
              lag_per_pass: int = 0, match: int = 3):
    """Run `n` requests of `tokens` tokens; per request: (time spent, plain time, draft passes)."""
    out = []
    for _ in range(n):
        c.new_request(tokens)
        spent = plain = 0.0
        drafts = emitted = 0
        lag = 0
        while emitted < tokens:
            k = c.fit_draft(c.next_length(lag), match)  # the loop asks this of free drafts
            m = accept(k)
            catchup = lag * 0.1 * T1 if k and not c.draft_is_free else 0.0  # (a model reads first)
            c.observe(k, m, draft_token_s * k, verify(k + 1), catchup, lag if k else 0,
                      match=match if c.draft_is_free else 0)
            lag = 1 if k else lag + 1 + lag_per_pass
            spent += draft_token_s * k + catchup + verify(k + 1)
            plain += verify(1) * (m + 1)
            drafts += k > 0
            emitted += m + 1
        out.append((spent, plain, drafts))
    return out


def test_forced_drafting_costs_each_short_request_at_most_a_few_per_cent():
    """A 64-token completion on a CPU, nothing accepted (lookup on new code): the request's own
    probes, early one included, stay within its budget, and the first request's cost
    measurement too."""
    c = DraftPolicy(SpeculativeSettings(draft_max=16), draft_is_free=True)
    runs = _requests(c, 12, 64, _cpu_verify, accept=lambda k: 0, draft_token_s=0.0)
    for spent, plain, drafts in runs:
        assert spent <= 1.03 * plain, (spent / plain, drafts)
    assert any(d for _, _, d in runs[1:])  # it does keep looking (drafting could pay here)


def test_no_forced_drafting_once_costs_show_drafting_cannot_pay():
    """The compute-bound demo pair: verifying k tokens costs ~0.45 t1 per extra token and a
    draft token 0.87 t1. Even drafts that are always accepted cannot pay, so after the costs are
    known nothing is forced but a look every few requests: every request runs at plain speed
    within 3 %, all of them within 1 %."""
    c = DraftPolicy(SpeculativeSettings(draft_max=16))
    runs = _requests(c, 15, 64, _cpu_verify, accept=lambda k: k, draft_token_s=0.87 * T1)
    assert c.off
    # once the costs are known, a look every few requests at most (in case they were measured
    # under load), each within the request's budget
    assert sum(d for _, _, d in runs[8:]) <= len(runs[8:]) // 4 + 1, [d for _, _, d in runs]
    for spent, plain, _ in runs:
        assert spent <= 1.03 * plain
    assert sum(s for s, _, _ in runs) <= 1.01 * sum(p for _, p, _ in runs)


def test_costs_carry_to_the_next_request_and_from_fixed_length_runs():
    """Costs are the pair's and the machine's: a fixed-length run sharing the cost model teaches
    the adaptive controller, whose first request then decides without measuring anything."""
    spec = SpeculativeSettings(draft_max=8)
    adaptive = DraftPolicy(spec)
    fixed = DraftPolicy(SpeculativeSettings(draft_max=1, adaptive=False), costs=adaptive.costs)
    for _ in range(30):
        k = fixed.next_length()
        fixed.observe(k, k, 0.87 * T1 * k, _cpu_verify(k + 1))
        fixed.observe(0, 0, 0.0, _cpu_verify(1))
    assert adaptive.costs.draft_token is not None and set(adaptive.costs.verify) == {1, 2}
    adaptive.new_request(64)
    lengths = []
    for _ in range(64):  # one-token drafts alone leave the fixed part unknown: one probe at most
        k = adaptive.next_length()
        adaptive.observe(k, k, 0.87 * T1 * k, _cpu_verify(k + 1))
        lengths.append(k)
    assert sum(1 for k in lengths if k) <= 1, lengths
    if any(lengths):  # the probe measured a second length: drafting is known not to pay
        assert not adaptive.can_pay(adaptive.costs.line())
    adaptive.new_request(64)
    assert [adaptive.next_length() for _ in range(64)] == [0] * 64  # nothing forced


def test_a_draft_models_catch_up_is_charged_to_the_draft_that_needs_it():
    """Memory-bound (t_v nearly flat), a cheap accurate draft: drafting pays with nothing to
    read first, but not when the draft model must first read 1,000 tokens to serve a
    few passes."""
    gpu = lambda n: 0.01 + 0.0005 * n  # noqa: E731
    c = DraftPolicy(SpeculativeSettings(draft_max=8))
    for _ in range(40):
        k = c.next_length()
        lag = 200 if k == 1 else 1  # the first draft reads the prompt
        c.observe(k, k, 0.002 * (k - 1), gpu(k + 1), 0.0005 * lag if lag > 1 else 0.002, lag)
    assert c.costs.catchup_token == pytest.approx(0.0005)
    assert c.costs.draft_token < 0.003  # the steady catch-up is in t_d, the lag is not
    c.new_request(4)  # a request with only a few tokens left to serve
    assert c.next_length(lag=1000) == 0
    c.new_request(512)
    assert c.next_length(lag=1) > 0


# -- free drafts judged by their match length; a draft model's acceptance carries --------------

def _f32_verify(n: int) -> float:
    """The memory-bound proxy (F32 demo target on this CPU): t1 = 15 ms, t_v(5) = 1.5 t1."""
    return 0.015 * (1 + 0.12 * (n - 1))


def test_free_drafts_are_cut_to_what_pays_at_their_match_length():
    """Prompt lookup in a completion: drafts that follow a 1-token match are guesses (never
    accepted), drafts that follow a 4-token match are copied text (always accepted). One
    acceptance figure for both would send both or neither; per match length, the guesses stop
    being sent within a few passes and the copies keep long drafts."""
    c = DraftPolicy(SpeculativeSettings(draft_max=16), draft_is_free=True)
    c.new_request(400)
    sent_guesses = []
    for i in range(400):
        match = 4 if i % 3 == 0 else 1
        k = c.fit_draft(c.next_length(), match)
        m = k if match == 4 else 0
        c.observe(k, m, 0.0, _f32_verify(k + 1), match=match)
        if match == 1 and i >= 60:
            sent_guesses.append(k)
    assert c.fit_draft(16, 4) >= 8
    assert c.fit_draft(16, 1) == 0
    assert sum(1 for k in sent_guesses if k) <= len(sent_guesses) * 0.1, sent_guesses  # probes only


def test_a_copy_followed_for_long_drafts_longer_than_a_fresh_match():
    """An edit that copies its input: a draft whose source has agreed with the text for 20
    tokens holds to its end, one after a fresh 4-token match holds for 3 tokens on average (a
    miss one time in three). One figure for every match of 4 or more would cut the long copies to
    the fresh matches' length; per agreement length, the copies get full drafts."""
    c = DraftPolicy(SpeculativeSettings(draft_max=16), draft_is_free=True)
    c.new_request(600)
    for i in range(300):
        match = 20 if i % 2 else 4
        k = c.fit_draft(c.next_length(), match)
        m = k if match == 20 else min(k, 3)
        c.observe(k, m, 0.0, _f32_verify(k + 1), match=match)
    assert c.fit_draft(16, 20) == 16
    assert 0 < c.fit_draft(16, 4) < 8
    assert c.acceptance_for(40) == c.acceptance_for(16)  # one bucket from 16 tokens on
    # a length not drafted yet starts from the figure of the next shorter one
    fresh = DraftPolicy(SpeculativeSettings(draft_max=16), draft_is_free=True)
    for _ in range(10):
        fresh.observe(8, 8, 0.0, _f32_verify(9), match=5)
    assert fresh.acceptance_for(9) == pytest.approx(fresh.acceptance_for(5))
    assert fresh.acceptance_for(20) > 0.8 and fresh.acceptance_for(3) == 0.5


def _self_draft_request(c: DraftPolicy, tokens: int, view: str,
                        rng: random.Random) -> tuple[str, int]:
    """One request with a Q4_0 copy of the target as draft, memory-bound: t_d = 0.37 t1, 90 % of
    its tokens accepted, catch-up 0.0003 s a token on a 500-token prompt (a probe reads at most
    PROBE_WINDOW + 4 of it; drafting for real reads the 4 + 512-token window); the target read
    the prompt at 0.0004 s a token. Returns the
    draft model's view afterwards and the passes that drafted for real (not probes)."""
    emitted, since, real = 0, 500, 0
    c.observe_prompt(500, 500 * 0.0004)  # the target read the prompt (an F32 batch)
    while emitted < tokens:
        full_lag = since if view == "full" else 4 + 512
        probe_lag = since if view != "none" else 4 + PROBE_WINDOW
        k = c.next_length(full_lag, probe_lag)
        probing = c.probing
        m = next((i for i in range(k) if rng.random() >= 0.9), k)
        read = (probe_lag if probing else full_lag) if k else 0
        c.observe(k, m, 0.37 * 0.015 * k, _f32_verify(k + 1), 0.0003 * read, read)
        if k:
            view = "full" if not probing or view == "full" else "short"
            real += not probing
        since = 1 if k else since + m + 1
        emitted += m + 1
    return view, real


def test_a_self_draft_starts_from_a_cheap_probe_and_its_acceptance_carries():
    """At the prior of one half no draft length pays for this pair, and a probe that first read
    the whole prompt (~10 t1) would never fit a request's probe budget, so the draft model would
    never start. Probes that read only recent text fit it, and probes that hold cost nothing: the
    first request learns the pair's acceptance from them and turns drafting on within itself,
    and the next request starts from that acceptance: it drafts for real from its first decision."""
    rng = random.Random(7)
    c = DraftPolicy(SpeculativeSettings(draft_max=16))
    c.new_request(128)
    assert c.rate(2, a=0.5) is None  # nothing measured yet
    view, first_real = _self_draft_request(c, 128, "none", rng)
    assert c.acceptance > 0.8, (view, c.acceptance)  # learned by probes
    assert view == "full" and first_real >= 5, (view, first_real)  # and drafting within the request
    assert c.costs.catchup_token == pytest.approx(0.0003)
    assert c.rate(2, a=0.5) < c.rate(0) * 1.03  # at the prior, drafting would not pay
    c.new_request(128)
    assert c.next_length(lag=516) > 0  # a new prompt: it drafts from the first decision
    c.new_request(128)
    view, real = _self_draft_request(c, 128, view, rng)
    assert view == "full" and real >= 20, (view, real)


def _free_request(c, passes, verify, held):
    """`passes` loop passes of a free drafter with the loop's protocol: ask, cut to what pays,
    verify, and judge the first unsent token (`held`: whether the target wrote it)."""
    asked = sent = 0
    for _ in range(passes):
        k = c.next_length()
        keep = 0
        if k:
            asked += 1
            keep = c.fit_draft(k, 8)
            sent += keep > 0
        c.observe(keep, keep if held else 0, 0.0, verify(keep + 1), match=8 if keep else 0)
        if k and keep < k and (held or not keep):
            c.observe_guess(8, 1, int(held))
    return asked, sent


def test_a_free_drafter_is_not_even_asked_where_no_match_length_pays():
    """The compute-bound demo pair (t_v(2) = 1.8 t1) with prompt lookup or the session drafter:
    at the acceptance of an untried match length (1/2) no draft pays, so the drafter is not even
    run (its microseconds add up over every pass), except for the budgeted probes."""
    compute = lambda n: 0.010 * (1 + 0.8 * (n - 1))  # noqa: E731
    c = DraftPolicy(SpeculativeSettings(draft_max=16), draft_is_free=True)
    c.new_request(300)
    asked, _ = _free_request(c, 300, compute, held=False)
    assert c.off and asked <= 300 * 0.08, asked


def test_an_edits_unsent_guesses_are_judged_and_turn_drafting_on_when_they_hold():
    """The same costs with an edit's copy of its original (`judge_unsent`): nothing is sent but the
    budgeted probes while the copy is not shown to hold, but the guesses are still made (they cost
    nothing) and judged against what the target wrote, so a copy that holds turns drafting on
    within a few passes, without waiting for a probe."""
    compute = lambda n: 0.010 * (1 + 0.8 * (n - 1))  # noqa: E731
    c = DraftPolicy(SpeculativeSettings(draft_max=16), draft_is_free=True)
    c.new_request(300, judge_unsent=True)
    asked, sent = _free_request(c, 300, compute, held=False)
    assert c.off and asked > 200 and sent <= 300 * 0.08, (asked, sent)
    c.new_request(300, judge_unsent=True)
    _, sent = _free_request(c, 40, compute, held=True)
    assert not c.off and sent >= 10, (c.length, sent)
    assert c.acceptance_for(8) > 0.9


def test_a_free_drafter_is_not_even_asked_where_no_draft_could_pay():
    """Where verifying n tokens costs n single passes no draft pays even if every token holds:
    the drafter is not run (its microseconds add up over every pass), but for a rare look."""
    linear = lambda n: 0.010 * n  # noqa: E731
    c = DraftPolicy(SpeculativeSettings(draft_max=16), draft_is_free=True)
    c.new_request(300, judge_unsent=True)
    _free_request(c, 300, linear, held=True)  # the costs are measured (probes)
    c.new_request(300, judge_unsent=True)
    asked, _ = _free_request(c, 300, linear, held=True)
    assert c.off and asked <= 300 * 0.08, asked


def test_an_edits_copy_keeps_its_own_evidence():
    """Drafts copied from an edit's original agree far more often than lookup's at the same match
    length: their evidence is their own, so neither prices the other."""
    c = DraftPolicy(SpeculativeSettings(draft_max=16), draft_is_free=True)
    for _ in range(20):
        c.observe_guess(4, 1, 1, ORIGINAL)
        c.observe_guess(4, 1, 0)
    assert c.acceptance_for(4, ORIGINAL) > 0.9 > 0.2 > c.acceptance_for(4)
    lookup = c.acceptance_for(4)
    c.new_request(100)  # a new text: lookup's evidence counts for less, the copy's is the model's
    assert c.acceptance_for(4, ORIGINAL) > 0.9 and lookup < c.acceptance_for(4) < 0.5


def test_a_derived_drafts_prior_lets_short_drafts_out_at_once_where_they_pay():
    """Costs known (memory-bound, t_d = 0.37 t1), nothing drafted yet: at acceptance 1/2 no draft
    length pays, at a derived copy's prior (9/11) a short one does; where verifying is dear
    (compute-bound) the prior changes nothing."""
    def known(prior, verify) -> DraftPolicy:
        c = DraftPolicy(SpeculativeSettings(draft_max=8), prior=prior)
        fixed = DraftPolicy(SpeculativeSettings(draft_max=2, adaptive=False), costs=c.costs)
        for k in (0, 1, 2, 3, 4) * 3:
            fixed.observe(k, 0, 0.37 * 0.015 * k, verify(k + 1))
        c.new_request(128)
        return c

    assert known((0.0, 0.0), _f32_verify).next_length() == 0
    assert known((8.0, 1.0), _f32_verify).next_length() >= 2
    assert known((8.0, 1.0), _cpu_verify).next_length() == 0


def test_a_drafts_fixed_part_is_not_charged_per_token():
    """One-token drafts (probes, a warm-up) cost mostly their fixed part: reading what the last
    pass emitted. Once longer drafts are measured, a g-token draft costs that part once plus g
    times the per-token part, not g one-token drafts."""
    costs = CostModel()
    for _ in range(3):
        costs.observe_draft(1, 0.010)
    assert costs.draft_cost(4) == pytest.approx(0.040)  # one length known: per token
    for _ in range(3):
        costs.observe_draft(4, 0.025)
    assert costs.draft_cost(1) == pytest.approx(0.010)
    assert costs.draft_cost(4) == pytest.approx(0.025)
    assert costs.draft_cost(8) == pytest.approx(0.045)
    assert costs.draft_cost(0) == 0.0


def test_a_hybrid_sends_its_free_guess_where_paying_for_the_model_does_not_pay():
    """Memory-bound verification, a draft model as dear as the target (it never pays) and a
    session drafter whose 4-token matches always hold: the hybrid's controller turns the model off
    yet sends the free guess, judged by its match length; the free passes teach nothing about
    what the model costs or how often it is right."""
    def run(free_part: bool) -> tuple[int, DraftPolicy]:
        c = DraftPolicy(SpeculativeSettings(draft_max=8), free_part=free_part)
        fixed = DraftPolicy(SpeculativeSettings(draft_max=2, adaptive=False), costs=c.costs)
        for k in (0, 1, 2, 3) * 3:
            fixed.observe(k, 0, 0.002 + 1.2 * 0.015 * k, _f32_verify(k + 1))
        c.new_request(256)
        free_tokens = 0
        for _ in range(200):
            k = c.next_length()
            free = c.free_only
            keep = c.fit_draft(k, 4) if free else k
            c.observe(keep, keep if free else 0, 0.002 + 1.2 * 0.015 * keep, _f32_verify(keep + 1),
                      asked=k, match=4 if free else 0)
            free_tokens += keep if free else 0
        return free_tokens, c

    with_free, c = run(True)
    assert with_free > 300, with_free
    assert min(c.costs.draft_by_length.values()) >= 0.002  # only the model's own drafts were timed
    assert c.acceptance <= 0.5  # the free guesses (all held) did not raise the model's own figure
    without, _ = run(False)
    assert without == 0


def test_a_hybrid_probes_its_free_guess_where_no_match_length_is_known_to_pay():
    """The proxy on this CPU at its dearer batches (t_v(2) = 1.6 t1): a free guess of unknown
    worth (acceptance 1/2 at every match length) does not pay, and a draft model as dear as the
    target never does. The free part alone is then probed now and then, from the request's
    budget, as the session drafter alone would be; once its 4-token matches are seen to hold,
    the guesses go out whole. Without the probes they were never sent."""
    def verify(n: int) -> float:
        return 0.017 * {1: 1.0, 2: 1.6, 3: 1.78}.get(n, 1.78 + 0.1 * (n - 3))

    c = DraftPolicy(SpeculativeSettings(draft_max=8), free_part=True)
    fixed = DraftPolicy(SpeculativeSettings(draft_max=2, adaptive=False), costs=c.costs)
    for k in (0, 1, 2, 3) * 3:
        fixed.observe(k, 0, 0.002 + 0.017 * k, verify(k + 1))
    c.new_request(256)
    free_tokens = probes = 0
    for _ in range(200):
        k = c.next_length()
        free, probing = c.free_only, c.probing
        keep = c.fit_draft(k, 4) if free else k
        assert free or k == 0  # the model itself never drafts: it cannot pay
        probes += probing
        c.observe(keep, keep, 0.0, verify(keep + 1), asked=k, match=4 if free else 0,
                  free=keep if free else 0)
        free_tokens += keep
    assert probes >= 1 and free_tokens > 300, (probes, free_tokens)
    assert c.acceptance_for(4) > 0.9


def test_a_hybrid_never_probes_its_free_guess_where_fair_guesses_cannot_pay():
    """A small model on a CPU (the cheapest batches measured there: t_v(2) = 1.72 t1, t_v(3) =
    2.14 t1, t_v(5) = 3.0 t1): a free guess would pay only at near-full acceptance, so the free
    part alone is never probed (probed, a Q2_K self-draft's FIM completions lost 15 %)."""
    table = {1: 1.0, 2: 1.72, 3: 2.14, 5: 3.0, 9: 4.4, 17: 7.6}

    def verify(n: int) -> float:
        lo = max(k for k in table if k <= n)
        hi = min((k for k in table if k >= n), default=17)
        t = table[lo] if lo == hi else table[lo] + (table[hi] - table[lo]) * (n - lo) / (hi - lo)
        return 0.010 * t

    c = DraftPolicy(SpeculativeSettings(draft_max=16), free_part=True)
    fixed = DraftPolicy(SpeculativeSettings(draft_max=2, adaptive=False), costs=c.costs)
    for k in (0, 1, 2, 3) * 3:
        fixed.observe(k, 0, 0.002 + 0.006 * k, verify(k + 1))
    for n in table:
        c.costs.seed_verify(n, verify(n))
    # A free probe (t_v(3) - t1 = 1.14 t1) fits a 64-token request's budget (2 % of 64 t1): only
    # the acceptance it would need keeps it out (with the threshold at 1.0 this test fails).
    for _ in range(4):
        c.new_request(64)
        for _ in range(64):
            k = c.next_length()
            assert not c.free_only
            c.observe(k, 0, 0.006 * k, verify(k + 1), asked=k)  # (a model probe: nothing held)


def test_a_hybrid_pass_teaches_the_model_only_from_the_model_tokens():
    """A hybrid pass sends a free session guess, sometimes extended by the draft model. Costs and
    acceptance are the draft model's: a pass of free tokens alone times nothing, and a model
    extension is timed for its own tokens and judged only where the target reached it."""
    c = DraftPolicy(SpeculativeSettings(draft_max=8))
    for _ in range(3):
        c.observe(0, 0, 0.0, 0.010)
    c.observe(6, 6, 0.0001, 0.020, asked=6, match=5, free=6)  # the session guess alone, held
    assert c.costs.draft_by_length == {}
    assert c.acceptance == pytest.approx(0.5)  # no evidence about the model
    assert c.acceptance_for(5) > 0.5  # ... but about the session's 5-token matches
    c.observe(9, 4, 0.012, 0.025, asked=8, match=5, free=6)  # the guess failed before the model
    assert c.costs.draft_by_length == {3: pytest.approx(0.012)}  # timed for its 3 model tokens
    assert c.acceptance == pytest.approx(0.5)  # the target never reached the model's tokens
    c.observe(9, 9, 0.012, 0.025, asked=8, match=5, free=6)  # all held: 3 model tokens held
    assert c.acceptance == pytest.approx(4 / 5)
    c.observe(9, 7, 0.012, 0.025, asked=8, match=5, free=6)  # 1 of the model's 3 held, then a miss
    assert c.acceptance < 4 / 5


def _h200_verify(n: int) -> float:
    """Measured on an H200 (demo model, CUDA build): t1 1.3 ms, t_v(2) 1.1 t1, t_v(9) 2.1 t1."""
    return 0.0013 * {1: 1.0, 2: 1.13, 3: 1.33, 4: 1.6}.get(n, min(1.9 + 0.03 * n, 2.1))


def test_one_slow_first_batched_pass_does_not_price_probing_out_for_good():
    """On a GPU the first decode of a new batch shape loads its kernels: 30 ms where a pass
    takes 1.5 ms. Timed as the first probe's verify pass, that one sample made every later probe
    look dearer than a request's whole probe budget, so a free drafter whose drafts all hold
    never drafted again (GPU bench: 0 drafts on edits where llama.cpp's n-gram lookup gave 1.75x).
    A size's first pass is a warm-up, not its cost."""
    c = DraftPolicy(SpeculativeSettings(draft_max=16), draft_is_free=True)
    first = True
    lengths = []
    for _ in range(4):
        c.new_request(128)
        for _ in range(128):
            k = c.fit_draft(c.next_length(), 4)
            lengths.append(k)
            t = _h200_verify(k + 1)
            if k and first:
                t, first = 0.030, False  # the kernels of the first batched shape load
            c.observe(k, k, 0.0, t, match=4)  # an edit: every draft token holds
    assert not first  # there was a first probe
    assert not c.off and c.fit_draft(c.next_length(), 4) >= 8, lengths[-20:]
    assert sum(lengths[128:]) > 1000  # drafting from the second request on


def test_passes_padded_to_one_shape_are_priced_at_that_shapes_steady_cost():
    """constant_shape (a GPU): every draft of up to 16 tokens is verified in a 17-row pass, whose
    steady cost (graph replay, measured at load) is 2 t1. A pass that changed the shape (a probe
    between plain passes: 4-5 t1 on the H200) is no sample of it. With drafts that hold, the
    controller drafts long."""
    c = DraftPolicy(SpeculativeSettings(draft_max=16), draft_is_free=True)
    t1 = 0.0013
    c.costs.seed_verify(1, t1)
    c.costs.seed_verify(17, 2 * t1)
    c.costs.shape = 17
    assert c.costs.t_verify(3) == c.costs.t_verify(17) == 2 * t1
    c.observe(2, 2, 0.0, 5 * t1, match=4, rows=17, same_shape=False)
    assert c.costs.verify[17] == 2 * t1
    c.new_request(128)
    lengths = []
    for _ in range(64):
        k = c.fit_draft(c.next_length(), 4)
        lengths.append(k)
        c.observe(k, k, 0.0, 2 * t1 if k else t1, match=4, rows=17 if k else 0)
    assert not c.off and lengths[-1] >= 12, lengths


def _memory_bound_verify(n: int) -> float:
    """The F32 proxy's verification (t1 = 20 ms, 0.1 t1 a token more)."""
    return 0.02 * (1 + 0.1 * (n - 1))


def _draft_model_passes(c: DraftPolicy, passes: int, drafts,
                        draft_cost) -> tuple[float, float, list[int]]:
    """Run `passes` passes with a draft model that drafts `drafts(i, k)` of the k asked, all
    accepted, at `draft_cost(d)` a call; (tokens, seconds, the lengths asked)."""
    spent = tokens = 0.0
    lengths = []
    for i in range(passes):
        k = c.next_length()
        lengths.append(k)
        d = drafts(i, k)
        draft_s = draft_cost(d) if k else 0.0
        c.observe(d, d, draft_s, _memory_bound_verify(d + 1), asked=k)
        spent += draft_s + _memory_bound_verify(d + 1)
        tokens += d + 1
    return tokens, spent, lengths


def test_a_draft_model_that_stops_short_is_priced_by_what_it_drafts():
    """Chat prose with a Q4_0 self-draft on the memory-bound proxy: the draft model stops after
    1-3 tokens whatever length is asked (p_min), every token it drafts is accepted, and each
    draft call costs 1.5 t1 before its first token (catch-up, the call). A draft then yields 3
    tokens for ~3.3 t1: slower than plain decoding, though acceptance is 100 %. Priced as if it
    drafted the length asked (9 tokens a pass), drafting stayed on: 0.86x in the bench."""
    t1 = 0.02
    c = DraftPolicy(SpeculativeSettings(draft_max=8))
    tokens, spent, _ = _draft_model_passes(c, 600, lambda i, k: min(k, 1 + i % 3),
                                           lambda d: t1 * (1.5 + 0.3 * d))
    assert c.continuation < 0.9
    assert tokens / spent >= 0.97 / t1  # within 3 % of plain decoding


def test_a_draft_model_that_drafts_what_is_asked_is_not_held_back():
    """The same costs, a draft model that always drafts the length asked (all accepted): long
    drafts pay (9 tokens for ~5.2 t1) and the stop figure stays at 1."""
    t1 = 0.02
    c = DraftPolicy(SpeculativeSettings(draft_max=8))
    _, _, lengths = _draft_model_passes(c, 300, lambda i, k: k, lambda d: t1 * (1.5 + 0.3 * d))
    assert c.continuation == 1.0 and not c.off and lengths[-1] >= 6


def test_a_draft_model_that_mostly_drafts_nothing_pays_for_its_reads():
    """Chat prose again: three draft calls in four stop at once (the first token is below
    p_min) yet each paid its read (0.5 t1), and the fourth drafts 2 tokens, all accepted. That is
    slower than plain decoding (6 tokens for 7 t1); a read that drafted nothing is a cost sample
    at length 0, so the controller turns drafting off."""
    t1 = 0.02
    c = DraftPolicy(SpeculativeSettings(draft_max=8))
    tokens, spent, _ = _draft_model_passes(c, 600, lambda i, k: min(k, 2 if i % 4 == 3 else 0),
                                           lambda d: t1 * (0.5 + 0.4 * d))
    assert c.costs.draft_by_length[0] == pytest.approx(0.5 * t1)  # the read, at length 0
    assert tokens / spent >= 0.97 / t1


def test_where_a_draft_model_stopped_short_in_prose_counts_little_in_the_next_request():
    """A chat answer teaches that the draft model stops at once (prose); the next request is an
    edit, where it drafts everything asked. Its first drafts must be able to show that: the stop
    evidence a request inherits is small."""
    t1 = 0.02
    c = DraftPolicy(SpeculativeSettings(draft_max=8))
    for _ in range(300):  # prose: asked 8, drafted 0 or 1
        c.observe(0, 0, 0.3 * t1, t1, asked=8)
        c.observe(1, 1, 0.6 * t1, 1.1 * t1, asked=8)
    assert c.continuation < 0.6
    c.new_request(128)
    for _ in range(3):  # code: every draft as long as asked
        c.observe(8, 8, 2.5 * t1, 1.8 * t1, asked=8)
    assert c.continuation > 0.9



def test_costs_measured_under_load_do_not_keep_drafting_off_for_good():
    """A build ran while the first requests were measured: drafting and verifying cost 3x, no
    draft could pay, so nothing was forced. Once the machine is quiet again a look now and then
    measures again (in a request long enough for its budget: chat answers here), and a draft that
    pays (memory-bound costs) is back within a few requests."""
    c = DraftPolicy(SpeculativeSettings(draft_max=8), prior=(8.0, 1.0))

    def run(requests: int, tokens: int, load: float) -> tuple[float, float]:
        spent = plain = 0.0
        for _ in range(requests):
            c.new_request(tokens)
            c.observe_prompt(200, 200 * 0.05 * load * T1)  # the prompt, read in one batch
            done, lag = 0, 0
            while done < tokens:
                k = c.next_length(lag, probe_lag=min(lag, PROBE_WINDOW))
                draft_s = load * T1 * 0.4 * (k + 1) if k else 0.0
                verify_s = T1 + load * T1 * 0.1 * k
                c.observe(k, k, draft_s, verify_s, asked=k)
                lag = 1 if k else lag + 1
                done += k + 1
                spent += draft_s + verify_s
                plain += T1 * (k + 1)
        return spent, plain

    run(4, 64, load=6.0)
    assert c.off
    for _ in range(8):
        spent, plain = run(1, 256, load=1.0)
    assert not c.off
    assert spent <= plain / 1.3


def test_whether_drafting_can_pay_follows_the_costs_when_they_change():
    """While drafting is off the controller asks every pass whether any draft could pay; the
    answer comes from the costs alone and is kept until they change, so it must change with
    them: costs measured on a busy CPU (k tokens cost k decodes) say no, the same pair on a quiet
    one (each extra token 0.1 t1) says yes."""
    c = DraftPolicy(SpeculativeSettings(draft_max=8), draft_is_free=True)
    sizes = (1, 2, 3, 5, 9)
    for n in sizes:
        for _ in range(9):
            c.costs.seed_verify(n, n * T1)
    assert not c.can_pay(c.costs.line())
    assert not c.can_pay(c.costs.line())  # asked again, same costs: same answer
    for n in sizes:
        for _ in range(9):  # a full window of new samples: the medians move
            c.costs.seed_verify(n, T1 * (1 + 0.1 * (n - 1)))
    assert c.costs.line()[1] == pytest.approx(0.1 * T1)
    assert c.can_pay(c.costs.line())


def test_batched_passes_are_priced_at_the_t1_of_the_text_now():
    """A pass costs more the longer the context, and sizes above 1 are measured only while
    drafting: t_v(2) measured beside a short prompt (1.8 t1 there) must not be priced beside a
    long one as if it were as cheap as it was then (1.3 of the new t1), or a free guess that
    holds half the time looks like it pays on a small model on a CPU, where it cannot."""
    c = DraftPolicy(SpeculativeSettings(draft_max=8), draft_is_free=True)
    for _ in range(9):
        c.costs.seed_verify(1, 0.010)
    for n, ratio in ((2, 1.8), (3, 2.3), (5, 3.2)):
        for _ in range(3):
            c.costs.seed_verify(n, ratio * 0.010)
    for _ in range(9):  # a longer text now: every one-token pass costs 14 ms
        c.costs.seed_verify(1, 0.014)
    assert c.costs.verify[2] == pytest.approx(1.8 * 0.014)
    assert c.costs.verify[5] == pytest.approx(3.2 * 0.014)
    fit = c.costs.line()
    assert c.rate(1, fit, a=0.5) < c.rate(0, fit)  # 1.5 tokens for 1.8 t1: plain is faster


def test_a_guess_that_was_not_sent_counts_for_its_match_length():
    """A hybrid reports how a free guess it did not send would have done: agreement raises that
    match length's acceptance, a seen mismatch lowers it, and a guess the target has not written
    past yet (all of what is known agreed) counts no rejection."""
    c = DraftPolicy(SpeculativeSettings(draft_max=8), free_part=True)
    before = c.acceptance_for(20)
    for _ in range(10):
        c.observe_guess(20, 8, 8)
    held = c.acceptance_for(20)
    assert held > 0.9 > before
    for _ in range(10):
        c.observe_guess(2, 4, 0)
    assert c.acceptance_for(2) < 0.2
    assert c.acceptance_for(20) == held  # other match lengths are untouched
    c.observe_guess(0, 4, 4)  # no n-gram behind it: not a free guess's evidence
    c.observe_guess(20, 0, 0)  # nothing written there yet: nothing known
    assert c.acceptance_for(20) == held


def test_an_unsent_guess_is_judged_token_for_token_once_the_target_passed_it():
    """What a sent draft would have shown: the whole guess when the target wrote all of it, up to
    and with the first token it wrote differently; nothing while undecided; one guess at a time."""
    heard = []
    guesses = UnsentGuesses()
    guesses.offer([7, 8, 9], 5, ORIGINAL, 2)
    guesses.offer([1, 2], 3, "free", 3)  # one at a time: ignored
    guesses.judge([0, 0, 7, 8], lambda *e: heard.append(e))
    assert heard == []  # two of three agree so far: undecided
    guesses.judge([0, 0, 7, 8, 9, 4], lambda *e: heard.append(e))
    assert heard == [(5, 3, 3, ORIGINAL)]
    guesses.offer([4, 5, 6], 2, "free", 6)
    guesses.judge([0, 0, 7, 8, 9, 4, 9], lambda *e: heard.append(e))
    assert heard[-1] == (2, 1, 0, "free")  # wrong at once: one token tried, none held
    guesses.offer([], 2, "free", 7)  # nothing to judge
    guesses.offer([3], 0, "free", 7)  # not a match: no evidence to give
    guesses.judge([0] * 9, lambda *e: heard.append(e))
    assert len(heard) == 2


# -- draft trees ------------------------------------------------------------------------------------
def _tree_run(verify, tree: bool, passes: int = 400, branch_right: bool = True):
    """A free drafter whose copy breaks after one token in half the passes (at random), where
    another occurrence (a branch) goes on as the target does; the loop's protocol: cut the draft, pick
    branches, verify greedily, learn, judge. Returns (tokens per second, passes that sent a tree)."""
    from specterm.engine.drafters import Draft, PassRecord, TreeOutcome, common_prefix
    from specterm.engine.token_tree import TokenTree

    c = DraftPolicy(SpeculativeSettings(draft_max=8, tree=tree), draft_is_free=True)
    c.new_request(100_000)
    text = list(range(1_000_000))
    history = text[:10]
    trees = tokens = 0
    spent = 0.0
    rng = random.Random(7)
    for _ in range(passes):
        at = len(history)
        truth = text[at:at + 16]
        held = rng.choice((1, 8))
        main = truth[:held] + [-1] * (8 - held)
        branch = truth[:8] if held < 8 and branch_right else truth[:1] + [-2] * 7
        k = c.fit_draft(c.next_length(), 4)
        draft = Draft(tokens=main[:k], match=4, branches=[branch], branch_matches=[4])
        branches = c.fit_branches(draft)
        paths = [draft.tokens] + branches
        kept = max(common_prefix(p, truth) for p in paths)
        held_main = common_prefix(draft.tokens, truth)
        rows = len(TokenTree.merge(0, paths))
        outcome = TreeOutcome(rows, held_main, len(branches)) if branches else None
        rec = PassRecord(draft=draft, asked=k, accepted=kept, verify_s=verify(rows), device_s=verify(rows),
                         rows=rows, padded=False, same_shape=True, source="free", probing=False,
                         drafting=True, tree=outcome, at=at)
        c.learn(rec)
        history += truth[:kept + 1]
        c.judge(history)
        trees += bool(branches)
        tokens += kept + 1
        spent += verify(rows)
    return tokens / spent, trees


def test_a_branch_that_holds_where_the_draft_fails_is_sent_where_rows_are_cheap():
    """Memory-bound proxy: the branch's evidence comes from judging it unsent, then it is sent,
    and the passes yield more per second than linear drafts of the same text."""
    rate_tree, trees = _tree_run(_f32_verify, tree=True)
    rate_linear, none = _tree_run(_f32_verify, tree=False)
    assert none == 0
    assert trees >= 100, trees
    assert rate_tree > rate_linear * 1.05, (rate_tree, rate_linear)


def test_trees_price_themselves_out_where_every_row_costs_half_a_token():
    """Compute-bound CPU (t_v grows 0.45 t1 a row): the same branches are never worth their rows."""
    rate_tree, trees = _tree_run(_cpu_verify, tree=True)
    rate_linear, _ = _tree_run(_cpu_verify, tree=False)
    assert trees == 0
    assert rate_tree == rate_linear


def test_branches_that_do_not_hold_are_not_sent():
    """Branches judged unsent fail where the draft fails: they stay unsent, even where rows are
    cheap, and the run is the linear one."""
    rate_tree, trees = _tree_run(_f32_verify, tree=True, branch_right=False)
    rate_linear, _ = _tree_run(_f32_verify, tree=False, branch_right=False)
    assert trees == 0
    assert rate_tree == rate_linear
