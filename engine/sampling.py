"""Token choice and the acceptance rule.

Sampling is done in numpy on llama.cpp's logits so that the engine knows the exact distributions it
samples from: rejection sampling needs both the target's p and the draft's q. Plain decoding uses
the very same functions, which is what makes "the output distribution equals the target's own" a
statement about this code rather than about two different samplers.

Filter order follows llama.cpp's default chain: top-k, top-p, min-p (on temperature-1
probabilities), then temperature.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .settings import SamplingSettings


def is_greedy(s: SamplingSettings) -> bool:
    return s.temperature <= 0.0


def distribution(logits: np.ndarray, s: SamplingSettings, mask: np.ndarray | None = None) -> np.ndarray:
    """The dense probability vector that sampling with `s` draws from (zeros outside the filters).

    `mask` (boolean, vocab-sized) restricts the candidates, e.g. for token healing.
    """
    x = np.asarray(logits, dtype=np.float64)
    if mask is not None:
        x = np.where(mask, x, -np.inf)
    n = x.shape[0]
    k = s.top_k if 0 < s.top_k < n else n
    if k < n:
        cand = np.argpartition(-x, k - 1)[:k]
    else:
        cand = np.arange(n)
    cl = x[cand]
    order = np.argsort(-cl, kind="stable")
    cand, cl = cand[order], cl[order]
    keep = np.isfinite(cl)
    cand, cl = cand[keep], cl[keep]
    p = np.exp(cl - cl[0])
    p /= p.sum()
    if s.top_p < 1.0:
        cum = np.cumsum(p)
        cut = int(np.searchsorted(cum, s.top_p) + 1)
        cand, cl, p = cand[:cut], cl[:cut], p[:cut]
    if s.min_p > 0.0:
        keep = p >= s.min_p * p[0]
        cand, cl = cand[keep], cl[keep]
    t = max(s.temperature, 1e-6)
    q = np.exp((cl - cl[0]) / t)
    q /= q.sum()
    out = np.zeros(n, dtype=np.float64)
    out[cand] = q
    return out


DRAFT_TOP_K = 10  # llama.cpp's draft sampler keeps the 10 best candidates (common/speculative.cpp)


_NEGLIGIBLE_LOGIT = 12.0  # exp(-12) = 6e-6: a logit this far below the best is no competitor


def top_probability(logits: np.ndarray, k: int = DRAFT_TOP_K) -> float:
    """The draft's confidence in its argmax, compared with p_min: its softmax probability among
    the k best candidates, as llama.cpp's draft sampler (top-k 10, then softmax) computes it, so
    one p_min drafts as far here as it does there."""
    m = float(logits.max())
    # Only the logits near the best matter: select those first (one comparison over the
    # vocabulary instead of partitioning all of it: this runs once per drafted token). Those
    # left out add at most k * exp(-12) = 6e-5 to a sum >= 1.
    top = logits[logits > m - _NEGLIGIBLE_LOGIT]
    if 0 < k < len(top):
        top = np.partition(top, -k)[-k:]
    return 1.0 / float(np.exp(top - m).sum())


def sample(p: np.ndarray, rng: np.random.Generator) -> int:
    """Draw one token from a dense distribution (inverse CDF: one uniform per draw)."""
    cdf = np.cumsum(p)
    u = rng.random() * cdf[-1]
    return int(min(np.searchsorted(cdf, u, side="right"), len(p) - 1))


@dataclass
class Verdict:
    accepted: int  # how many draft tokens the target kept
    token: int  # the token the target emits after them (correction or bonus)


def verify_greedy(rows: np.ndarray, draft: list[int]) -> Verdict:
    """rows[i] are the target's logits after the pending token and draft[:i].

    Keep draft tokens while they equal the target's argmax; then emit the argmax at the first
    mismatch, or the bonus token after a fully accepted draft.
    """
    best = rows.argmax(axis=1)
    for i, tok in enumerate(draft):
        if int(best[i]) != tok:
            return Verdict(i, int(best[i]))
    return Verdict(len(draft), int(best[len(draft)]))


def verify_sampled(
    rows: np.ndarray,
    draft: list[int],
    q: list[np.ndarray] | None,
    s: SamplingSettings,
    rng: np.random.Generator,
) -> Verdict:
    """Rejection sampling (Leviathan et al. 2023; Chen et al. 2023).

    Accept draft token x with probability min(1, p(x)/q(x)); on rejection draw from
    norm(max(0, p - q)). `q=None` means deterministic proposals (prompt lookup): q is then a point
    mass, acceptance is p(x), and the residual is p without x. Either way the emitted tokens are
    distributed exactly as the target's own samples.
    """
    for i, tok in enumerate(draft):
        p = distribution(rows[i], s)
        qi = q[i] if q is not None else None
        qx = float(qi[tok]) if qi is not None else 1.0
        px = float(p[tok])
        if qx > 0.0 and rng.random() < min(1.0, px / qx):
            continue
        if qi is not None:
            residual = np.maximum(p - qi, 0.0)
        else:
            residual = p.copy()
            residual[tok] = 0.0
        total = residual.sum()
        if total <= 0.0:  # p == q: any draw from p is exact
            residual, total = p, p.sum()
        return Verdict(i, sample(residual / total, rng))
    return Verdict(len(draft), sample(distribution(rows[len(draft)], s), rng))
