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
