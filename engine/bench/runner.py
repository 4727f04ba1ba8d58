"""Benchmark speculative decoding against plain decoding on the same target, in one process.

What `specterm bench` measures, and why it is built this way:

- Plain and speculative runs alternate on one loaded engine with identical settings, so load on a
  shared machine and drift hit both sides alike; the order flips every repeat and every task
  (A B, B A, ...) so neither side always runs first. Plain decoding is the same loop with drafting
  forced off (`fixed_draft=0`), so the comparison isolates drafting itself.
- Before the measured runs of a task, two short unmeasured runs (plain, then drafting) put the
  prompt in both KV caches: every measured run then starts from the same cache state (prefix reuse
  re-decodes only the last prompt token), so greedy outputs can be compared token by token and
  prompt time is not measured at all (tokens/s covers generation only).
- The costs the theory needs are measured directly with the Model API, not inferred from the loop:
  t1 (a one-token target decode), t_d (one draft-model token: a one-token draft decode plus its
  argmax), t_read (one more token in the draft model's read of what the last pass emitted: a
  two-token draft decode minus a one-token one) and t_v(k) (a target decode of k tokens with
  logits for all of them, as verification asks, timed at a few k and interpolated). One round
  of them is timed after every measured run, at the task's own position (attention over a longer
  context makes every pass dearer) and on the machine as those runs found it (a shared machine
  changes speed from one second to the next): a round costs a few passes and reads no prompt.
  The prediction for a run mixes t_v over the draft lengths the run actually
  used; loop efficiency = measured speedup / predicted speedup isolates specterm's own per-pass
  overhead (Python, sampling, prompt lookup, bookkeeping), which the prediction assumes to be zero.
- Where greedy outputs differ, one more plain run reads the target's top-2 logit gap at every
  token, so the report can tell a near-tie (batched kernels rounding differently) from a bug.

The theory is in theory.py, the tasks in tasks.py, the cost meter in costs.py.
"""

from __future__ import annotations

import os
import platform
import statistics
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np

from ..draft_pair import draft_model, session_drafter
from ..stats import Stats
from . import MAX_PAIRS
from .costs import CostMeter, Costs, pooled_costs
from .tasks import BenchTask
from .theory import fit_acceptance, geometric_mean

# -- comparisons ---------------------------------------------------------------------------------


@dataclass
class Run:
    """One generation: its statistics and the token ids it emitted."""

    stats: Stats
    tokens: list[int]
    reason: str


def draft_length_histogram(stats: Stats) -> dict[int, int]:
    """Loop passes by the number of draft tokens they verified, from the per-position counts
    (a pass that drafted j tokens counts in positions 0..j-1). Prompt passes (one per request
    folded into `stats`) are excluded."""
    loop_passes = max(stats.target_passes - max(stats.requests, 1), 0)
    dbp = stats.drafted_by_position
    hist: dict[int, int] = {}
    zero = loop_passes - (dbp[0] if dbp else 0)
    if zero:
        hist[0] = zero
    for j in range(1, len(dbp) + 1):
        n = dbp[j - 1] - (dbp[j] if j < len(dbp) else 0)
        if n:
            hist[j] = n
    return hist


def predicted_for(stats: Stats, costs: Costs) -> tuple[float | None, float | None, float | None]:
    """(predicted speedup, mean draft length, fitted acceptance a) for a speculative run.

    The predicted time of the run is the sum over its passes of t_v(g_i + 1) for the draft
    lengths g_i it actually used, plus the draft model's work priced at the measured costs
    (`draft_model_time`); E is the run's measured tokens per pass. With a single draft length g
    and the draft model doing what the theory counts (g decodes a draft) this is exactly
    E(g) * t1 / (g * t_d + t_v(g + 1)) with a fitted from E.
    """
    hist = draft_length_histogram(stats)
    passes = sum(hist.values())
    first_tokens = max(stats.requests, 1)  # each request's first token comes from its prompt pass
    if passes <= 0 or stats.tokens <= first_tokens:
        return None, None, None
    cost = (sum(n * costs.verify(g + 1) for g, n in hist.items())
            + draft_model_time(stats, hist, costs)) / passes
    e = (stats.tokens - first_tokens) / passes
    g_mean = sum(g * n for g, n in hist.items()) / passes
    a = fit_acceptance(e, max(1, round(g_mean))) if g_mean > 0 else None
    return e * costs.t1 / cost, g_mean, a


def draft_model_time(stats: Stats, hist: dict[int, int], costs: Costs) -> float:
    """What the draft model's work in a run costs at the measured t_d and t_read: each read before
    a draft is one decode call (t_d, plus t_read for every token beyond the first: after a pass
    that took a whole draft it reads two tokens, after drafting was off all it missed), and each
    one-token decode while drafting is t_d. The theory's g * t_d counts a read of one token and
    g - 1 decodes; a draft that stops at p_min decodes its last token as well, and one that
    stops at once drafted nothing for its read. Without those counts (a drafter that reports no
    reads): t_d for each token the draft model proposed, and nothing for a free drafter's (a
    hybrid run whose passes all sent session guesses read nothing: its model did no work)."""
    if not stats.draft_reads:
        by = stats.drafted_by_drafter
        paid = by.get("model", 0) if by else sum(n * g for g, n in hist.items())
        return paid * costs.t_d
    extra = max(stats.draft_catchup_tokens - stats.draft_reads, 0)
    return (stats.draft_reads + stats.draft_decodes) * costs.t_d + extra * costs.t_read


def first_divergence(a: list[int], b: list[int]) -> int | None:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


@dataclass
class Comparison:
    """Plain vs speculative on one task (or a set of tasks), summed over the repeats."""

    label: str
    plain: Stats = field(default_factory=Stats)
    speculative: Stats = field(default_factory=Stats)
    pair_speedups: list[float] = field(default_factory=list)
    divergences: list[int | None] = field(default_factory=list)
    # The target's top-2 logit gap at every token of a plain run (index i: emitted token i), to
    # tell a near-tie (batched kernels may round differently there) from a real divergence.
    plain_gaps: list[float | None] = field(default_factory=list)
    greedy: bool = True
    # Costs measured on this task's own text (None for a pooled comparison): t1 and t_v(k) grow
    # with the position in the context, so a long task and a short one have different costs.
    costs: Costs | None = None

    def add(self, plain: Run, spec: Run) -> None:
        self.plain.merge(plain.stats)
        self.speculative.merge(spec.stats)
        p, s = plain.stats.tokens_per_second, spec.stats.tokens_per_second
        if p and s:
            self.pair_speedups.append(s / p)
        self.divergences.append(first_divergence(plain.tokens, spec.tokens))

    @property
    def speedup(self) -> float | None:
        p, s = self.plain.tokens_per_second, self.speculative.tokens_per_second
        return s / p if p and s else None

    @property
    def outputs_match(self) -> bool | None:
        if not self.greedy:
            return None  # sampling: the same seed does not give the same path; nothing to compare
        return all(d is None for d in self.divergences)

    def overhead_ms_per_pass(self, stats: Stats) -> float | None:
        """Generation time not spent in target passes or drafting, per loop pass."""
        return _rest_ms_per_pass(stats, stats.verify_time_s)

    def host_ms_per_pass(self, stats: Stats) -> float | None:
        """Generation time outside the target's llama.cpp decode calls and drafting, per loop
        pass: the Python side of a pass (batch filling, logits copy, acceptance, bookkeeping)."""
        return _rest_ms_per_pass(stats, stats.device_time_s) if stats.device_time_s > 0 else None

    def cost_breakdown(self, costs: Costs | None) -> dict | None:
        """Where the speculative time went, measured in the loop vs predicted from the costs:
        target passes (verification) per pass, and drafting per drafted token."""
        s = self.speculative
        hist = draft_length_histogram(s)
        passes = sum(hist.values())
        if costs is None or passes <= 0:
            return None
        predicted = sum(n * costs.verify(g + 1) for g, n in hist.items()) / passes
        return {
            "verify_ms_per_pass": _r(s.verify_time_s / passes * 1e3),
            "verify_ms_per_pass_predicted": _r(predicted * 1e3),
            "draft_ms_per_drafted_token": _r(s.draft_time_s / s.drafted * 1e3) if s.drafted else None,
            "draft_ms_per_drafted_token_predicted": _r(
                draft_model_time(s, hist, costs) / s.drafted * 1e3) if s.drafted else None,
            "t_d_ms": _r(costs.t_d * 1e3),
        }

    def to_dict(self, costs: Costs | None) -> dict:
        """The comparison as JSON; its own costs when measured, else `costs` (pooled)."""
        costs = self.costs or costs
        pred = g_mean = a = None
        if costs is not None:
            pred, g_mean, a = predicted_for(self.speculative, costs)
        speedup = self.speedup
        eff = speedup / pred if speedup and pred else None
        spread = self.pair_speedups
        return {
            "plain": self.plain.to_dict(),
            "speculative": self.speculative.to_dict(),
            "speedup": _r(speedup),
            "predicted_speedup": _r(pred),
            "efficiency": _r(eff),
            "outputs_match": self.outputs_match,
            "first_divergence": (div := next((d for d in self.divergences if d is not None), None)),
            # the target's own top-2 logit gap there in plain decoding: small means a near-tie
            "divergence_gap": _r(self.plain_gaps[div] if div is not None and div < len(self.plain_gaps)
                                 and self.plain_gaps[div] is not None else None),
            "mean_draft_length": _r(g_mean),
            "fitted_acceptance": _r(a),
            "pair_speedups": [_r(x) for x in spread],
            # robust to a single disturbed pair on a shared machine; `speedup` pools the runs
            "median_pair_speedup": _r(statistics.median(spread) if spread else None),
            "cost_breakdown": self.cost_breakdown(costs),
            "costs": self.costs.to_dict() if self.costs else None,
            "overhead_ms_per_pass": {
                "plain": _r(self.overhead_ms_per_pass(self.plain)),
                "speculative": _r(self.overhead_ms_per_pass(self.speculative)),
            },
            "host_ms_per_pass": {
                "plain": _r(self.host_ms_per_pass(self.plain)),
                "speculative": _r(self.host_ms_per_pass(self.speculative)),
            },
        }


def _rest_ms_per_pass(stats: Stats, busy_s: float) -> float | None:
    """Generation time outside `busy_s` and drafting, in ms per loop pass."""
    passes = stats.target_passes - stats.requests
    if passes <= 0:
        return None
    return (stats.generation_time_s - busy_s - stats.draft_time_s) / passes * 1e3


def _r(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(x, nd)


# -- the benchmark -------------------------------------------------------------------------------

ProgressFn = Callable[[str, int, int], None]  # (message, done, total)
TaskDoneFn = Callable[[BenchTask, "Comparison", int, int], None]  # (task, adaptive result, done, total)
COST_SIZES = (1, 2, 3, 5, 9, 17, 33)  # verify batch sizes timed (plus draft_max + 1 and sweep lengths + 1)
WARMUP_TOKENS = 8  # the speculative warm-up only has to put the prompt in the draft's cache
# A top-2 logit gap this small is a near-tie: llama.cpp's batched kernels (verification) and its
# one-token kernels (plain decoding) may round differently there and pick the other token. The
# engine's fidelity tests use the same threshold.
NEAR_TIE_GAP = 1.0


@dataclass
class BenchReport:
    tasks: list[tuple[BenchTask, Comparison]]
    sweep: list[tuple[int, Comparison, list[tuple[BenchTask, Comparison]]]]
    costs: Costs | None
    info: dict

    def summary(self, sweep: list[dict]) -> dict:
        """The default (adaptive) runs: geometric-mean speedup over tasks, its minimum, the pooled
        acceptance and the geometric-mean efficiency; with a sweep, the best fixed length too."""
        rows = [c.to_dict(self.costs) for _, c in self.tasks]
        sp = [r["speedup"] for r in rows if r["speedup"]]
        total = Stats()
        for _, c in self.tasks:
            total.merge(c.speculative)
        out: dict[str, Any] = {
            "speedup": _r(geometric_mean(sp)),
            "speedup_min": _r(min(sp) if sp else None),
            "acceptance": _r(total.acceptance),
            "efficiency": _r(geometric_mean(r["efficiency"] for r in rows if r["efficiency"])),
            "outputs_match": all(c.outputs_match is not False for _, c in self.tasks),
            # every divergence (sweep included) happened where plain decoding was at a near-tie
            "divergences_at_near_ties_only": all(
                r["outputs_match"] is not False or (r["divergence_gap"] is not None
                                                    and r["divergence_gap"] <= NEAR_TIE_GAP)
                for r in [*rows, *(t for e in sweep for t in e["tasks"])]),
        }
        by_kind: dict[str, list[float]] = {}
        for (task, _), r in zip(self.tasks, rows):
            by_kind.setdefault(task.kind, []).append(r["speedup"])
        out["by_kind"] = {k: {"speedup": _r(geometric_mean(v)),
                              "speedup_min": _r(min((x for x in v if x), default=None)),
                              "tasks": len(v)} for k, v in by_kind.items()}
        out["num_drafts"] = total.num_drafts
        out["num_draft_tokens"] = total.drafted
        out["num_accepted_tokens"] = total.accepted
        out["mean_acceptance_length"] = _r(total.mean_acceptance_length)
        out["probes"] = total.probes
        out["tree_passes"] = total.tree_passes
        out["tree_rows_per_pass"] = _r(total.tree_rows_per_pass)
        out["tree_width"] = _r(total.tree_width)
        out["tree_path_length"] = _r(total.tree_path_length)
        out["tree_branch_taken"] = total.tree_branch_taken
        out["tree_branch_tokens"] = total.tree_branch_tokens
        ranked = [e for e in sweep if e["speedup"]]
        if ranked:
            best = max(ranked, key=lambda e: e["speedup"])
            out["best_fixed_draft_length"] = best["draft_length"]
            out["best_fixed_speedup"] = best["speedup"]
            if out["speedup"]:
                out["adaptive_vs_best_fixed"] = _r(out["speedup"] / best["speedup"])
        return out

    def to_dict(self) -> dict:
        tasks = [{**task.describe(), **comp.to_dict(self.costs)} for task, comp in self.tasks]
        sweep = []
        for g, comp, per_task in self.sweep:
            # Pooled statistics over the tasks, but speedup figures by the summary's rule
            # (geometric mean over tasks), so a sweep row and the adaptive summary compare.
            entry = {"draft_length": g, **comp.to_dict(self.costs)}
            rows = [(t, c.to_dict(self.costs)) for t, c in per_task]
            per = [r["speedup"] for _, r in rows if r["speedup"]]
            entry["speedup"] = _r(geometric_mean(per))
            entry["speedup_min"] = _r(min(per) if per else None)
            entry["predicted_speedup"] = _r(geometric_mean(r["predicted_speedup"] for _, r in rows
                                                           if r["predicted_speedup"]))
            entry["efficiency"] = (_r(entry["speedup"] / entry["predicted_speedup"])
                                   if entry["speedup"] and entry["predicted_speedup"] else None)
            entry["tasks"] = [{"name": t.name, "speedup": r["speedup"], "outputs_match": r["outputs_match"],
                               "first_divergence": r["first_divergence"], "divergence_gap": r["divergence_gap"]}
                              for t, r in rows]
            gaps = [r["divergence_gap"] for _, r in rows if r["outputs_match"] is False]
            entry["divergence_gap"] = (max(gaps) if gaps and None not in gaps else None)
            sweep.append(entry)
        return {
            **self.info,
            "costs": self.costs.to_dict() if self.costs else None,
            "tasks": tasks,
            "sweep": sweep,
            "summary": self.summary(sweep),
        }


def machine_info() -> dict:
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {"platform": platform.platform(), "machine": platform.machine(),
            "python": platform.python_version(), "cpus": os.cpu_count(), "load_average": load}


class Bench:
    """Runs tasks plain and speculative, alternately, on one loaded LocalEngine."""

    def __init__(self, engine, *, repeat: int = 1, on_progress: ProgressFn | None = None,
                 measure_costs: bool = True, on_task: TaskDoneFn | None = None,
                 min_time_s: float = 0.0) -> None:
        if engine.decoder is None or engine.target is None:
            raise ValueError("the engine must be loaded before benchmarking")
        self.engine = engine
        self.repeat = max(1, repeat)
        # A task whose `repeat` pairs' plain runs generated for less than this runs more pairs
        # (up to MAX_PAIRS), as timeit's autorange does: one pair of a short completion takes a
        # fraction of a second on a CPU, where one scheduler hiccup moves its speedup visibly.
        self.min_time_s = max(0.0, min_time_s)
        self.on_progress = on_progress or (lambda msg, done, total: None)
        self.on_task = on_task or (lambda task, comp, done, total: None)
        self.measure_costs = measure_costs
        self._done = 0
        self._total = 0
        self._sizes: Sequence[int] = range(1, 2)
        self._meters: list[CostMeter] = []  # one a task
        self.prompts: dict[str, tuple[list[int], int]] = {}  # task name -> (prompt ids, plain tokens)
        self._context_ids: dict[str, list[list[int]]] = {}  # task name -> its context, tokenized

    def _more_pairs(self, comp: Comparison, pairs: int, modes: int) -> bool:
        """One more pair (of every mode) for a task whose plain runs so far are too short to time
        well (`min_time_s`); the progress total grows by it."""
        if not self.min_time_s or pairs >= MAX_PAIRS or comp.plain.generation_time_s >= self.min_time_s:
            return False
        self._total += 2 * modes
        return True

    # -- one run -----------------------------------------------------------------------------------
    def _prime_session(self, task: BenchTask) -> None:
        """A session drafter's memory holds exactly the task's context when a run starts: what the
        session saw before the task (never part of the prompt), and nothing an earlier run of the
        task wrote (every run remembers its output)."""
        drafter = session_drafter(self.engine.decoder.drafter)
        if drafter is None:
            return
        drafter.clear_memory()
        for tokens in self.context_ids(task):
            drafter.remember(tokens)

    def context_ids(self, task: BenchTask) -> list[list[int]]:
        """The task's context, tokenized once (the llama-server comparison sends the same ids)."""
        ids = self._context_ids.get(task.name)
        if ids is None:
            ids = [self.engine.target.tokenize(text, add_special=False) for text in task.context]
            self._context_ids[task.name] = ids
        return ids

    def _run(self, task: BenchTask, fixed_draft: int | None, on_stats=None) -> Run:
        self._prime_session(task)
        result = self.engine.run(task.request, fixed_draft=fixed_draft, on_stats=on_stats)
        return Run(result.stats, result.tokens, result.reason)

    def _plain_gaps(self, task: BenchTask) -> tuple[Run, list[float | None]]:
        """A plain run that records the top-2 logit gap behind every token it emits (unmeasured:
        reading the logits costs time). After each one-token pass the target's logits are those
        that chose the token just emitted; the first token comes from the prompt pass."""
        target = self.engine.target
        gaps: list[float | None] = [None]

        def record(stats: Stats) -> None:
            top2 = np.partition(target.logits(), -2)[-2:]
            gaps.append(float(top2[1] - top2[0]))

        run = self._run(task, 0, on_stats=record)
        return run, gaps

    def _step(self, msg: str) -> None:
        self._done += 1
        self.on_progress(msg, self._done, self._total)

    def _rewind_drafter(self, n_prompt: int) -> None:
        """Make a draft model hold exactly the prompt when a measured run starts, as llama.cpp's
        speculative example feeds it the prompt before its timer starts. Without this a run would
        find the previous run's tokens in the draft's cache and skip catching up on its own
        output; with it, every run pays what a new request pays for the draft's lag behind the
        text generated while drafting was off."""
        self.engine.decoder.drafter.rewind(n_prompt)

    def _meter(self) -> CostMeter | None:
        """A cost meter for one task, timed between its runs (see CostMeter)."""
        if not self.measure_costs:
            return None
        return CostMeter(self.engine.target, draft_model(self.engine.decoder.drafter), sizes=self._sizes)

    def _measured(self, task: BenchTask, fixed_draft: int | None, meter: CostMeter | None) -> Run:
        """A measured run, then one round of costs where it left the caches."""
        run = self._run(task, fixed_draft)
        if meter is not None:
            meter.sample_in_place(1)
        return run

    def run(self, tasks: Sequence[BenchTask], sweep: Sequence[int] = ()) -> BenchReport:
        eng = self.engine
        greedy = (eng.settings.sampling.temperature <= 0)
        modes: list[int | None] = [None, *sweep]
        self._total = len(tasks) * (2 + 2 * len(modes) * self.repeat)
        self._done = 0
        # Verification is timed at a few batch sizes and interpolated in between (the cost is
        # close to piecewise linear in k): every size up to draft_max + 1 would cost more time
        # than the runs themselves on a slow machine.
        top = max([eng.settings.speculative.draft_max, *sweep, 1]) + 1
        self._sizes = sorted({k for k in COST_SIZES if k <= top} | {top} | {g + 1 for g in sweep})
        self._meters = []
        results: list[tuple[BenchTask, Comparison]] = []
        per_g: dict[int, list[tuple[BenchTask, Comparison]]] = {g: [] for g in sweep}
        load_before = machine_info()["load_average"]
        for i, task in enumerate(tasks):
            # Warm-up (unmeasured, a few tokens each way): the prompt enters the target's and the
            # draft's KV caches, so every measured run starts from the same state and no run pays
            # for a prefill. The speculative warm-up drafts at every pass (fixed length 1) so a
            # draft model really reads the prompt.
            short = replace(task, request=replace(task.request, max_tokens=WARMUP_TOKENS))
            warm = self._run(short, 0)
            n_prompt = warm.stats.prompt_tokens
            prompt_ids = list(eng.decoder.cached[:n_prompt])
            self._step(f"{task.name}: warm-up")
            self._run(short, 1)
            self._step(f"{task.name}: warm-up")
            comps = {m: Comparison(task.name, greedy=greedy) for m in modes}
            meter = self._meter()
            plain_tokens: list[int] = []
            r = 0
            while r < self.repeat or self._more_pairs(comps[None], r, len(modes)):
                for m in modes:
                    label = "adaptive" if m is None else f"draft {m}"
                    # A B, then B A on the next repeat (and the next task): whatever favours the
                    # first (or the second) run of a pair cancels out over the run.
                    if (r + i) % 2 == 0:
                        plain = self._measured(task, 0, meter)
                        self._rewind_drafter(n_prompt)
                        spec = self._measured(task, m, meter)
                    else:
                        self._rewind_drafter(n_prompt)
                        spec = self._measured(task, m, meter)
                        plain = self._measured(task, 0, meter)
                    pairs = max(self.repeat, r + 1)
                    self._step(f"{task.name}: plain ({r + 1}/{pairs})")
                    self._step(f"{task.name}: {label} ({r + 1}/{pairs})")
                    comps[m].add(plain, spec)
                    plain_tokens = plain.tokens
                r += 1
            # What llama.cpp gets for the same task (--compare-llama-cpp): the exact prompt ids and
            # the number of tokens plain decoding emitted.
            self.prompts[task.name] = (prompt_ids, len(plain_tokens))
            if meter is not None and meter.rounds:
                self._meters.append(meter)
                own = meter.costs()
                for c in comps.values():
                    c.costs = own
            if greedy and any(d is not None for c in comps.values() for d in c.divergences):
                # Only where outputs differed: the target's own top-2 gaps along the plain path,
                # to tell a near-tie from a real divergence (reading logits costs a run).
                _, gaps = self._plain_gaps(task)
                for c in comps.values():
                    c.plain_gaps = gaps
            results.append((task, comps[None]))
            for g in sweep:
                per_g[g].append((task, comps[g]))
            self.on_task(task, comps[None], i + 1, len(tasks))
        meters = self._meters
        sweep_out = []
        for g in sweep:
            total = Comparison(f"draft {g}", greedy=greedy)
            for _, c in per_g[g]:
                total.plain.merge(c.plain)
                total.speculative.merge(c.speculative)
                total.pair_speedups += c.pair_speedups
                total.divergences += c.divergences
            sweep_out.append((g, total, per_g[g]))
        costs = pooled_costs(meters) if meters else None
        info = {
            "target": eng.info.target_name,
            "draft": eng.info.draft_name,
            "draft_kind": eng.info.draft_kind,
            "settings": {
                "draft_max": eng.settings.speculative.draft_max,
                "adaptive": eng.settings.speculative.adaptive,
                "p_min": eng.settings.speculative.p_min,
                "temperature": eng.settings.sampling.temperature,
                "seed": eng.settings.sampling.seed,
                "ctx": eng.target.n_ctx,
                "repeat": self.repeat,
                "min_time_s": self.min_time_s,
                "sweep": list(sweep),
            },
            "machine": {**machine_info(), "load_average_before": load_before},
        }
        return BenchReport(results, sweep_out, costs, info)
