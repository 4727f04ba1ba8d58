#!/usr/bin/env python3
"""t_v(k)/t1 of a target in several weight formats and thread counts: what verification costs.

Speculation pays only if verifying k tokens in one pass costs much less than k one-token decodes.
On a GPU t_v(k) stays near t1; on a CPU it depends on whether llama.cpp has a batched kernel for the
weight format. This requantizes the target into each format (cached derived copies, engine/llamacpp/derive.py) and
times one-token and k-token decodes with the same meter `specterm bench` uses, interleaved over
the formats and repeated, and prints medians.

    .venv/bin/python bench/cost_table.py                              # the demo target
    .venv/bin/python bench/cost_table.py --target T.gguf --formats q8_0,q4_0 --threads 4
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

SIZES = (1, 2, 3, 5, 9, 17)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", default="demo", help='target GGUF, or "demo" (default)')
    p.add_argument("--formats", default="asis,q4_0,q8_0,q5_0",
                   help="comma-separated: asis (the file as it is) and/or q4_0, q4_1, q5_0, q8_0")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--rounds", type=int, default=8, help="timed decodes per size and repeat")
    args = p.parse_args()

    from specterm.engine.bench.costs import CostMeter
    from specterm.engine.llamacpp.model import LlamaModel
    from specterm.engine.settings import ModelSettings

    from compare_llama_cpp import requantized_copy, target_path  # bench/, next to this script

    target = target_path(args.target)
    paths = {}
    for fmt in args.formats.split(","):
        if fmt == "asis":
            paths[f"{Path(target).stem} (as is)"] = target
        else:
            paths[fmt] = requantized_copy(target, fmt)
    context_text = (Path(__file__).resolve().parent.parent / "engine" / "bench" / "runner.py").read_text()
    samples: dict[tuple[int, str], list] = {}
    for _ in range(args.repeat):
        for threads in (int(t) for t in args.threads.split(",")):
            for name, path in paths.items():
                m = LlamaModel.load(ModelSettings(path=path, threads=threads, ctx=2048, gpu_layers=0))
                try:
                    meter = CostMeter(m, None, sizes=SIZES, context=m.tokenize(context_text)[:300])
                    meter.sample(args.rounds)
                    samples.setdefault((threads, name), []).append(meter.costs())
                finally:
                    m.close()
    print(f"{'threads':>7} {'format':<34} {'t1 ms':>6} " + " ".join(f"{f't_v({k})/t1':>10}" for k in SIZES[1:]))
    for (threads, name), cs in samples.items():
        t1 = statistics.median(c.t1 for c in cs)
        ratios = [statistics.median(c.t_v[k] / c.t1 for c in cs) for k in SIZES[1:]]
        print(f"{threads:>7} {name:<34} {t1 * 1e3:>6.1f} " + " ".join(f"{r:>10.2f}" for r in ratios))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
