"""The costs the theory needs, measured directly with the Model API: t1 (a one-token target
decode), t_d (one draft-model token), t_read (one more token in the draft model's read before a
draft) and t_v(k) (a k-token target decode with logits for all k)."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Sequence


@dataclass
class Costs:
    """Median times in seconds, measured with the Model API (see measure_costs)."""

    t1: float  # one-token target decode
    t_d: float  # one draft-model token (0 for prompt lookup / no drafter: assumed free)
    t_v: dict[int, float]  # target decode of k tokens with logits for all k
    # A draft model reads what the last pass emitted before it drafts: its first token is the
    # decode t_d already counts (its logits give the first draft token); after a pass that took
    # the whole draft it reads two (the last draft token, which it never decoded, and the
    # target's own), and after drafting was off, all it missed. t_read is what one more token in
    # that read costs: a two-token decode minus a one-token one (0: no draft model).
    t_read: float = 0.0
    samples: int = 0
    position: int | None = None  # context tokens before the timed decodes (None: pooled)

    def verify(self, k: int) -> float:
        if k in self.t_v:
            return self.t_v[k]
        sizes = sorted(self.t_v)
        lo = max((s for s in sizes if s < k), default=sizes[0])
        hi = min((s for s in sizes if s > k), default=sizes[-1])
        if lo == hi:
            return self.t_v[lo] * k / lo
        w = (k - lo) / (hi - lo)
        return self.t_v[lo] + w * (self.t_v[hi] - self.t_v[lo])

    def to_dict(self) -> dict:
        return {
            "t1_ms": round(self.t1 * 1e3, 4),
            "t_d_ms": round(self.t_d * 1e3, 4),
            "t_read_ms": round(self.t_read * 1e3, 4),
            "t_v_ms": {str(k): round(v * 1e3, 4) for k, v in sorted(self.t_v.items())},
            "t_v_over_t1": {str(k): round(v / self.t1, 3) for k, v in sorted(self.t_v.items())},
            "samples": self.samples,
            "position": self.position,
        }


class CostMeter:
    """Collects timing samples of t1, t_d and t_v(k) on the loaded models; medians on demand.

    Samples are taken at a realistic position (after `context` tokens) and the KV entries they add
    are removed again. The callers' KV caches must be declared invalid afterwards.
    """

    def __init__(self, target, draft=None, *, sizes: Sequence[int], context: list[int]) -> None:
        self.target = target
        self.draft = draft
        self.sizes = sorted({1, *[k for k in sizes if k >= 1]})
        self.context = context[: max(8, min(len(context), target.n_ctx - max(self.sizes) - 8))]
        self._tv: dict[int, list[float]] = {k: [] for k in self.sizes}
        self._td: list[float] = []
        self._td2: list[float] = []

    def sample(self, rounds: int = 1) -> None:
        """Time `rounds` decodes of every size. Each size is decoded once untimed first: llama.cpp
        rebuilds its compute graph when the batch shape changes, and a steady loop (plain decoding
        above all) reuses it, so a cold shape would overstate every cost."""
        t = self.target
        ctx = self.context
        n = len(ctx)
        t.clear()
        t.decode_prompt(ctx, 0)
        filler = ctx[-1]
        for k in self.sizes:
            batch = (ctx * (k // max(n, 1) + 1))[:k] if k > 1 else [filler]
            for i in range(rounds + 1):
                t0 = time.perf_counter()
                t.decode(batch, n, logits_from=0)
                t.logits_rows(k).argmax(axis=1)
                if i:
                    self._tv[k].append(time.perf_counter() - t0)
                t.trim(n)
        t.clear()
        d = self.draft
        if d is not None:
            dctx = ctx[: max(8, min(n, d.n_ctx - 8))]
            d.clear()
            d.decode_prompt(dctx, 0)
            m = len(dctx)
            for batch, out in (([filler], self._td), ([filler, filler], self._td2)):
                for i in range(rounds * 4 + 1):
                    t0 = time.perf_counter()
                    d.decode(batch, m)
                    d.logits().argmax()
                    if i:
                        out.append(time.perf_counter() - t0)
                    d.trim(m)
            d.clear()

    def costs(self) -> Costs:
        c = pooled_costs([self])
        c.position = len(self.context)
        return c


def pooled_costs(meters: Sequence[CostMeter]) -> Costs:
    """Medians over every sample of the given meters (the report's headline costs)."""
    tv_samples: dict[int, list[float]] = {}
    td_samples: list[float] = []
    td2_samples: list[float] = []
    for m in meters:
        for k, v in m._tv.items():
            tv_samples.setdefault(k, []).extend(v)
        td_samples.extend(m._td)
        td2_samples.extend(m._td2)
    tv = {k: statistics.median(v) for k, v in sorted(tv_samples.items()) if v}
    td = statistics.median(td_samples) if td_samples else 0.0
    read = max(statistics.median(td2_samples) - td, 0.0) if td2_samples else 0.0
    return Costs(t1=tv[1], t_d=td, t_v=tv, t_read=read, samples=len(tv_samples.get(1, [])))

