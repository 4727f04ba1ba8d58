#!/usr/bin/env python3
"""What draft trees of prompt-lookup occurrences could give at best, offline, on a task file.

Decodes each task plainly (greedy, the configured target: the demo model by default), then replays
the target's own output pass by pass with passes priced at t_v(n) = t1 (1 + slope (n - 1)):

- lookup: what the real LookupDrafter proposes, cut to the length that pays at its measured
  per-match-length acceptance (the policy's rule, with the acceptance counted in this replay);
- oracle length: the same drafts, each cut exactly to what the target accepts (the ceiling of any
  length choice);
- oracle tree: the best of every occurrence lookup offers (the draft and its branches), cut exactly
  (the ceiling of occurrence trees, their extra rows free).

A tree can only win the gap between the last two; a better length choice the gap between the first
two. Also prints how often a draft that failed had an occurrence that would have gone further.

    .venv/bin/python bench/tree_ceiling.py /tmp/stdlib-whole.jsonl --slope 0.2
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from dataclasses import replace
from pathlib import Path


def _common(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def replay(prompt: list[int], output: list[int], slope: float, draft_max: int) -> dict[str, float]:
    """Time (in t1) of each way over the output, plain = len(output); rescue counts."""
    from specterm.engine.drafters import LookupDrafter
    from specterm.engine.policy import expected_tokens, match_bucket
    from specterm.engine.settings import SamplingSettings

    def tv(n: int) -> float:
        return 1.0 + slope * (n - 1)

    times = {"lookup": 0.0, "oracle length": 0.0, "oracle tree": 0.0}
    for way in list(times):
        drafter = LookupDrafter(1, 4)
        evidence: dict[int, list[float]] = defaultdict(lambda: [1.0, 1.0])  # bucket: held, missed
        history, i, failed, rescued = list(prompt) + output[:1], 1, 0, 0
        while i < len(output):
            d = drafter.draft(history, draft_max, SamplingSettings(), None)
            truth = output[i:]
            held = _common(d.tokens, truth)
            if way == "lookup":
                held_s, missed = evidence[match_bucket(d.match)]
                a = min(held_s / (held_s + missed), 0.999)
                k = max(range(len(d.tokens) + 1), key=lambda g: expected_tokens(a, g) / tv(g + 1))
                held = min(held, k)
                if k:
                    evidence[match_bucket(d.match)][0] += held
                    evidence[match_bucket(d.match)][1] += held < k
                rows = k + 1
            else:
                if way == "oracle tree":
                    best = max([held] + [_common(b, truth) for b in d.branches])
                    if held < len(d.tokens):
                        failed += 1
                        rescued += best > held
                    held = best
                rows = held + 1
            held = min(held, len(truth) - 1)
            times[way] += tv(rows)
            history += truth[:held + 1]
            i += held + 1
        times["failed"], times["rescued"] = failed, rescued
    return times


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tasks", type=Path, help="a tasks file (docs/bench.md), e.g. bench/tasks/edits.jsonl")
    p.add_argument("--slope", default="0.2",
                   help="t_v(n) = t1 (1 + slope (n - 1)), comma-separated for several (0.2: the F32 proxy "
                   "here, 0.5: the Q4 demo, 0.05: a GPU)")
    p.add_argument("--draft-max", type=int, default=16)
    args = p.parse_args()

    from specterm.engine.bench.tasks import parse_tasks_file
    from specterm.tui.config import builtin_settings
    from specterm.tui.engine_factory import make_local_engine

    settings = builtin_settings()
    settings = replace(settings, draft=replace(settings.draft, kind="none", model=None))  # plain decoding
    tasks = parse_tasks_file(args.tasks.read_text(), source=str(args.tasks))
    engine = make_local_engine(settings)
    engine.load()
    decoder = engine.decoder
    assert decoder is not None
    prompts: list[list[int]] = []
    decode = decoder.generate

    def remember(job):  # the prompt the loop decodes (the request's ids, as the bench sends them)
        prompts.append(list(job.prompt))
        return decode(job)

    decoder.generate = remember  # type: ignore[method-assign]
    slopes = [float(x) for x in args.slope.split(",")]
    speedups: dict[tuple[float, str], list[float]] = defaultdict(list)
    failed = rescued = 0
    try:
        for task in tasks:
            result = engine.run(task.request)
            n = len(result.tokens)
            for slope in slopes:
                t = replay(prompts[-1], list(result.tokens), slope, args.draft_max)
                line = [f"{task.name:<28} slope {slope}"]
                for way in ("lookup", "oracle length", "oracle tree"):
                    speedups[(slope, way)].append(n / t[way])
                    line.append(f"{way} {n / t[way]:.2f}x")
                print("  ".join(line))
                if slope == slopes[-1]:  # (the rescues do not depend on the slope)
                    failed, rescued = failed + int(t["failed"]), rescued + int(t["rescued"])
    finally:
        decoder.generate = decode  # type: ignore[method-assign]
        engine.close_sync()
    for slope in slopes:
        print(f"geometric mean over {len(tasks)} tasks at slope {slope}: " + ", ".join(
            f"{way} {math.exp(sum(map(math.log, v)) / len(v)):.2f}x"
            for (s, way), v in speedups.items() if s == slope))
    print(f"drafts that failed: {failed}; of them, another occurrence would have gone further: {rescued}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
