"""The speculative-decoding speedup theory the bench predicts from (Leviathan et al. 2023, with the
verification cost measured instead of assumed): with per-token acceptance a and draft length g, one
target pass yields E(g) = (1 - a^(g+1)) / (1 - a) tokens and costs g * t_d + t_v(g + 1), so the
speedup over plain decoding is E(g) * t1 / (g * t_d + t_v(g + 1)).
"""

from __future__ import annotations

import math
from typing import Iterable

from ..policy import expected_tokens  # the one formula: the policy prices with it


def predicted_speedup(a: float, g: int, t1: float, t_d: float, t_v: float) -> float:
    """E(g) * t1 / (g * t_d + t_v), where t_v is the cost of verifying g + 1 tokens."""
    return expected_tokens(a, g) * t1 / (g * t_d + t_v)


def fit_acceptance(tokens_per_pass: float, g: int) -> float:
    """The per-token acceptance a of the geometric model for which E(g) equals a measured
    tokens-per-pass figure (bisection; E is increasing in a)."""
    if g <= 0:
        return 0.0
    if tokens_per_pass <= 1.0:
        return 0.0
    if tokens_per_pass >= g + 1.0:
        return 1.0
    target = tokens_per_pass
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if expected_tokens(mid, g) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def geometric_mean(values: Iterable[float]) -> float | None:
    vals = [v for v in values if v is not None and v > 0]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))

