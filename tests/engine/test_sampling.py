"""Rejection sampling keeps the target's distribution: a chi-square goodness-of-fit test of the
tokens that verification emits against the target's exact distribution, computed by plain decoding.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from specterm.engine import GenerateRequest, ModelSettings, SamplingSettings
from specterm.engine.llamacpp.model import LlamaModel
from specterm.engine.sampling import distribution

PROMPT = "# A list of fruits\nfruits = ['apple', 'banana',"
SAMPLING = dict(temperature=1.0, top_k=40, top_p=0.95, min_p=0.02)
N = 300


def chi2_critical(df: int, z: float = 3.09) -> float:
    """Upper 0.1 % point of chi-square (Wilson-Hilferty approximation)."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def chi2_gof(observed: Counter, expected_p: np.ndarray, n: int) -> tuple[float, int]:
    cats, other_obs, other_exp = [], 0, 0.0
    for tok in np.flatnonzero(expected_p):
        e = expected_p[tok] * n
        if e >= 5:
            cats.append((observed.get(int(tok), 0), e))
        else:
            other_obs += observed.get(int(tok), 0)
            other_exp += e
    outside = n - sum(o for o, _ in cats) - other_obs  # tokens the target could never emit
    if other_exp >= 1:
        cats.append((other_obs + outside, other_exp + 1e-9))
    elif outside or other_obs:
        return math.inf, 1
    stat = sum((o - e) ** 2 / e for o, e in cats)
    return stat, max(len(cats) - 1, 1)


def exact_second_token(path: str, first: int) -> np.ndarray:
    m = LlamaModel.load(ModelSettings(path=path, ctx=512))
    try:
        toks = m.tokenize(PROMPT, add_special=True) + [first]
        m.decode_prompt(toks, 0)
        return distribution(m.logits(), SamplingSettings(**SAMPLING))
    finally:
        m.close()


@pytest.mark.parametrize("draft", ["model", "lookup"])
def test_speculative_sampling_matches_the_target_distribution(models, engine_factory, draft):
    path = models.draft_q4 if draft == "model" else None
    eng = engine_factory(models.demo, draft, path, draft_max=4, adaptive=False, p_min=0.0)
    seconds: dict[int, Counter] = {}
    drafted = 0
    for seed in range(N):
        s = SamplingSettings(seed=seed, **SAMPLING)
        # 3 tokens: the first comes from the prompt pass, the second from verifying a draft token.
        result = eng.run(GenerateRequest(prompt=PROMPT, max_tokens=3, sampling=s))
        drafted += result.stats.drafted
        toks = result.tokens
        if len(toks) >= 2:
            seconds.setdefault(toks[0], Counter())[toks[1]] += 1
    assert drafted >= N // 4, "drafts were rarely verified: the test would prove nothing"
    first, counts = max(seconds.items(), key=lambda kv: sum(kv[1].values()))
    n = sum(counts.values())
    assert n >= 60, "too few samples share a first token for a meaningful test"
    stat, df = chi2_gof(counts, exact_second_token(models.demo, first), n)
    assert stat < chi2_critical(df), (
        f"second-token distribution after {first} deviates from the target's: chi2={stat:.1f}, df={df}")


def test_sampling_with_a_seed_is_reproducible(models, engine_factory):
    eng = engine_factory(models.demo, "model", models.draft_q4, draft_max=4, adaptive=False, p_min=0.0)
    s = SamplingSettings(seed=1234, **SAMPLING)
    a = eng.run(GenerateRequest(prompt=PROMPT, max_tokens=24, sampling=s)).text
    b = eng.run(GenerateRequest(prompt=PROMPT, max_tokens=24, sampling=s)).text
    assert a == b
    c = eng.run(GenerateRequest(prompt=PROMPT, max_tokens=24,
                                sampling=SamplingSettings(seed=99, **SAMPLING))).text
    assert c != a or len(a) < 4


def test_chi2_helper_rejects_a_wrong_distribution():
    """The test above can fail: a sample from another distribution is rejected."""
    rng = np.random.default_rng(0)
    p = np.zeros(10)
    p[:4] = [0.4, 0.3, 0.2, 0.1]
    wrong = Counter(rng.choice(10, size=300, p=[0.25, 0.25, 0.25, 0.25, 0, 0, 0, 0, 0, 0]).tolist())
    right = Counter(rng.choice(10, size=300, p=p).tolist())
    assert chi2_gof(wrong, p, 300)[0] > chi2_critical(3)
    assert chi2_gof(right, p, 300)[0] < chi2_critical(3)


def test_draft_confidence_is_taken_among_the_ten_best_candidates():
    """p_min means what it means in llama.cpp: the top candidate's share after top-k 10."""
    from specterm.engine.sampling import top_probability

    logits = np.full(49152, 2.0, dtype=np.float32)  # a long flat tail ...
    logits[7] = 6.0  # ... under a clear favourite and nine runners-up at 2.0
    p = top_probability(logits)
    assert math.isclose(p, math.exp(4.0) / (math.exp(4.0) + 9), rel_tol=1e-5)  # 0.858
    # over the whole vocabulary the same favourite would read as unsure (0.001), and stop drafting
    full = 1.0 / float(np.exp(logits - logits.max()).sum())
    assert full < 0.01 < 0.6 < p
    assert top_probability(logits[5:10]) == pytest.approx(math.exp(4.0) / (math.exp(4.0) + 4), rel=1e-5)
