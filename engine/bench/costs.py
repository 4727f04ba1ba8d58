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
    position: int | None = None  # context tokens before the timed decodes (median of the rounds)

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
    """Collects timing samples of t1, t_d and t_v(k) on the loaded models; costs on demand.

    The theory needs ratios (t_v(k) / t1, t_d / t1), and a shared machine changes speed from one
    second to the next, t1 and the batch costs moving in opposite directions. So every round times
    every size once, in turn (the order reversed every other round), a cost is its median ratio
    to the same round's t1 times the median t1, and the bench takes its rounds between the runs
    it predicts (`sample_in_place`), so they see the machine those runs saw. Rounds taken at one
    moment for all the tasks of a context length can catch the machine in another state than
    the plain runs did, and then mispredict every one of those tasks.
    """

    DRAFT_REPEATS = 4  # draft decodes are short: time several a round

    def __init__(self, target, draft=None, *, sizes: Sequence[int],
                 context: list[int] | None = None) -> None:
        self.target = target
        self.draft = draft
        self.sizes = sorted({1, *[k for k in sizes if k >= 1]})
        ctx = context or []
        self.context = ctx[: max(8, min(len(ctx), target.n_ctx - max(self.sizes) - 8))]
        self._rounds: list[dict] = []  # one a round: {k: seconds}, "td"/"td2": [seconds], "pos"

    def sample(self, rounds: int = 1) -> None:
        """Time `rounds` rounds after `context` (both caches cleared before and after). Each size
        is decoded once untimed first: llama.cpp builds a compute graph for a new batch shape."""
        t, d = self.target, self.draft
        t.clear()
        t.decode_prompt(self.context, 0)
        if d is not None:
            d.clear()
            d.decode_prompt(self.context[: max(8, min(len(self.context), d.n_ctx - 8))], 0)
        self._time(rounds, warm=True)
        t.clear()
        if d is not None:
            d.clear()

    def sample_in_place(self, rounds: int = 1) -> None:
        """Time `rounds` rounds after whatever the models' caches hold now, and leave the caches
        as they were (each timed decode is removed again). For a bench between its runs: the
        position is the task's own, and no prompt is read again."""
        self._time(rounds, warm=False)

    def _time(self, rounds: int, *, warm: bool) -> None:
        t, d = self.target, self.draft
        n = t.cache_length()
        m = d.cache_length() if d is not None else 0
        if n + max(self.sizes) >= t.n_ctx or (d is not None and m + 2 >= d.n_ctx):
            return  # no room after this text: the other rounds will do
        filler = self.context[-1] if self.context else t.bos
        base = self.context or [filler]
        batches = {k: (base * (k // len(base) + 1))[:k] if k > 1 else [filler] for k in self.sizes}

        def target_pass(k: int) -> float:
            t0 = time.perf_counter()
            t.decode(batches[k], n, logits_from=0)
            t.logits_rows(k).argmax(axis=1)
            dt = time.perf_counter() - t0
            t.trim(n)
            return dt

        def draft_pass(batch: list[int]) -> float:
            t0 = time.perf_counter()
            d.decode(batch, m)
            d.logits().argmax()
            dt = time.perf_counter() - t0
            d.trim(m)
            return dt

        if warm:
            for k in self.sizes:
                target_pass(k)
            if d is not None:
                draft_pass([filler])
                draft_pass([filler, filler])
        for _ in range(rounds):
            order = self.sizes if len(self._rounds) % 2 == 0 else self.sizes[::-1]
            row: dict = {k: target_pass(k) for k in order}
            row["pos"] = n
            if d is not None:
                row["td"] = [draft_pass([filler]) for _ in range(self.DRAFT_REPEATS)]
                row["td2"] = [draft_pass([filler, filler]) for _ in range(self.DRAFT_REPEATS)]
            self._rounds.append(row)

    @property
    def rounds(self) -> int:
        return len(self._rounds)

    def costs(self) -> Costs:
        return pooled_costs([self])


def pooled_costs(meters: Sequence[CostMeter]) -> Costs:
    """Costs over every round of the given meters (the report's headline costs): t1 is the median
    one-token decode, and every other cost is t1 times its median ratio to its own round's t1."""
    rounds = [r for m in meters for r in m._rounds]
    if not rounds:
        raise ValueError("no cost samples: call CostMeter.sample first")
    t1 = statistics.median(r[1] for r in rounds)
    sizes = sorted({k for r in rounds for k in r if isinstance(k, int)})  # "pos" is a str key
    tv = {k: t1 * statistics.median(r[k] / r[1] for r in rounds if k in r) for k in sizes}
    tv[1] = t1
    td = read = 0.0
    drafted = [r for r in rounds if "td" in r]
    if drafted:
        td = t1 * statistics.median(statistics.median(r["td"]) / r[1] for r in drafted)
        td2 = t1 * statistics.median(statistics.median(r["td2"]) / r[1] for r in drafted)
        read = max(td2 - td, 0.0)
    return Costs(t1=t1, t_d=td, t_v=tv, t_read=read, samples=len(rounds),
                 position=round(statistics.median(r["pos"] for r in rounds)))
