"""The draft-length decision, fed with cost and acceptance figures shaped like real machines.

(The figures are inputs to a pure decision function; the real loop measures them on llama.cpp.)
"""

from __future__ import annotations

from specterm.engine.controller import DraftController
from specterm.engine.settings import SpeculativeSettings


def run(passes: int, verify, accept, draft_token_s=0.0, draft_max=16):
    c = DraftController(SpeculativeSettings(draft_max=draft_max))
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
    c = DraftController(SpeculativeSettings(draft_max=8))
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
    c = DraftController(SpeculativeSettings(draft_max=5, adaptive=False))
    assert [c.next_length() for _ in range(3)] == [5, 5, 5]


def _cpu_verify(n: int) -> float:
    """This 2-core box on the demo model: t1 = 12 ms, each extra row ~0.45 t1 (bench/RESULTS.md)."""
    return 0.012 * (1 + 0.45 * (n - 1))


def test_drafting_that_never_pays_costs_at_most_a_few_per_cent():
    """Nothing is ever accepted. On a CPU (a probe costs ~0.9 of a pass) probes come every ~45
    passes, 2 % of the time; on a GPU (verifying is nearly free) short drafts keep being tried
    because even a rare acceptance would pay there, but they cost about as little."""
    def spend(verify) -> tuple[float, list[int]]:
        c = DraftController(SpeculativeSettings(draft_max=8))
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
    c = DraftController(SpeculativeSettings(draft_max=16), draft_is_free=True)
    for _ in range(600):
        k = c.next_length()
        c.observe(k, 0, 0.0, _cpu_verify(k + 1))
    assert c.off
    c.new_request()
    lengths, on = [], []
    for _ in range(40):
        k = c.next_length()
        lengths.append(k)
        on.append(k > 0 and not c.off)  # drafting because it pays, not a probe
        c.observe(k, k, 0.0, _cpu_verify(k + 1))  # every draft token is accepted now
    assert lengths.index(2) <= 4 and on.index(True) <= 8, lengths  # the early probe, then on
    assert not c.off and lengths[-1] >= 8, lengths


def test_a_completion_after_an_edit_that_copied_well_pays_little_for_the_stale_evidence():
    """The edit taught 'almost everything is accepted'; the completion that follows accepts
    nothing. Its 64 passes may cost only a few passes more than plain decoding (without the
    discount on old evidence and its bound they cost 3.3 times as much)."""
    c = DraftController(SpeculativeSettings(draft_max=16), draft_is_free=True)
    for _ in range(300):
        k = c.next_length()
        c.observe(k, k, 0.0, _cpu_verify(k + 1))
    assert not c.off and c.next_length() >= 8  # long drafts
    c.new_request()
    spent = 0.0
    for _ in range(64):
        k = c.next_length()
        c.observe(k, 0, 0.0, _cpu_verify(k + 1))
        spent += _cpu_verify(k + 1)
    assert c.off and spent <= 1.08 * 64 * _cpu_verify(1), spent / (64 * _cpu_verify(1))


def test_an_accurate_draft_that_is_too_dear_is_not_probed_every_pass():
    """A draft model nearly as slow as the target (t_d = 0.7 t1, every token accepted) on a CPU:
    drafting cannot pay, and probes that hold must not turn into probing at every pass."""
    c = DraftController(SpeculativeSettings(draft_max=8))
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
