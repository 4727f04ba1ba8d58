#!/usr/bin/env python3
"""specterm vs llama.cpp's own `llama-speculative-simple`: same pair, prompts and settings.

For every prompt (the continuation and edit tasks of `specterm bench`) and every repeat, it runs
llama.cpp's example binary (a fresh process; its own timer covers generation only) and then
specterm's loop on models loaded once in this process (generation time only as well), alternately,
so machine load hits both alike. Both decode greedily with a fixed draft length (specterm's
adaptive controller off), the same draft p_min, thread count and context. It prints tokens/s and
acceptance side by side with the ratio specterm / llama.cpp, and optionally the figures as JSON.

The binary comes from bench/build_llama_cpp.sh (the llama.cpp that llama-cpp-python vendors: the
same commit specterm runs on). Run that first; this script never builds anything. For llama.cpp's
own speedup (its speculative server against its plain one) on any pair and tasks file, use
`specterm bench --compare-llama-cpp`.

    .venv/bin/python bench/compare_llama_cpp.py                      # demo target, q4_0 draft copy
    .venv/bin/python bench/compare_llama_cpp.py --target T.gguf --draft D.gguf --draft-max 8

Known differences, kept small on purpose: llama.cpp's timer also covers the pass that yields the
first token (specterm's first token comes from the prompt pass, which is timed as prompt time), and
llama.cpp stops one pass after n_predict, so it may produce a few tokens more. Tokens/s is per
token generated, so neither difference moves the ratio by more than about one pass in n.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Figures:
    tokens: int
    seconds: float
    drafted: int
    accepted: int

    @property
    def tps(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def acceptance(self) -> float | None:
        return self.accepted / self.drafted if self.drafted else None


def find_binary() -> Path:
    """llama-speculative-simple next to the llama-server that `specterm bench --compare-llama-cpp`
    uses (one place knows where bench/build_llama_cpp.sh puts them: engine/bench/llama_cpp.py)."""
    from specterm.engine.bench.llama_cpp import binaries_dir

    folder = binaries_dir()
    if folder is None or not (folder / "llama-speculative-simple").exists():
        sys.exit(f"compare_llama_cpp: llama.cpp is not built yet; run {REPO / 'bench' / 'build_llama_cpp.sh'} first.")
    return folder / "llama-speculative-simple"


_DECODED = re.compile(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds")
_DRAFTED = re.compile(r"n_drafted\s*=\s*(\d+)")
_ACCEPT = re.compile(r"n_accept\s*=\s*(\d+)")


def run_llama_cpp(binary: Path, target: str, draft: str, prompt: str, args: argparse.Namespace) -> Figures:
    # -p, not -f: -f drops the prompt's final newline. --no-escape: the text is taken as it is.
    cmd = [
        str(binary), "-m", target, "-md", draft, "--spec-type", "draft-simple",
        "-p", prompt, "--no-escape", "-n", str(args.max_tokens), "-c", str(args.ctx),
        "-t", str(args.threads), "-td", str(args.threads),
        "--spec-draft-n-max", str(args.draft_max), "--spec-draft-n-min", "0",
        "--spec-draft-p-min", str(args.p_min), "--temp", "0", "--seed", "0",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    log = proc.stdout + proc.stderr
    m, d, a = _DECODED.search(log), _DRAFTED.search(log), _ACCEPT.search(log)
    if proc.returncode != 0 or not (m and d and a):
        tail = "\n".join(log.strip().splitlines()[-15:])
        sys.exit(f"compare_llama_cpp: llama-speculative-simple failed (exit {proc.returncode}):\n{tail}")
    return Figures(int(m.group(1)), float(m.group(2)), int(d.group(1)), int(a.group(1)))


def load_specterm(target: str, draft: str, args: argparse.Namespace):
    from specterm.engine import DraftSettings, EngineSettings, ModelSettings, SpeculativeSettings
    from specterm.engine.llamacpp.local import LocalEngine

    t = ModelSettings(path=target, ctx=args.ctx, threads=args.threads, gpu_layers=0)
    settings = EngineSettings(
        target=t,
        draft=DraftSettings(kind="model", model=ModelSettings(path=draft, ctx=args.ctx, threads=args.threads,
                                                              gpu_layers=0)),
        speculative=SpeculativeSettings(draft_max=args.draft_max, draft_min=0, p_min=args.p_min, adaptive=False),
    )
    engine = LocalEngine(settings)
    engine.load()
    return engine


def run_specterm(engine, req, args: argparse.Namespace) -> Figures:
    # The prompt stays in both KV caches from the warm-up run: llama.cpp's example also feeds the
    # prompt to the target and the draft before its generation timer starts.
    s = engine.run(req, fixed_draft=args.draft_max).stats
    return Figures(s.tokens, s.generation_time_s, s.drafted, s.accepted)


def target_path(target: str) -> str:
    """A GGUF path, or the demo model's for "demo"."""
    if target != "demo":
        return target
    from specterm.engine.llamacpp.demo import demo_model_path

    return demo_model_path()


def requantized_copy(target: str, kind: str) -> str:
    """A copy of the target in `kind` (any type, larger ones too), derived once and cached by
    specterm's own derive (engine/llamacpp/derive.py; bench/cost_table.py uses it too)."""
    from specterm.engine.llamacpp.derive import ensure_copy

    return str(ensure_copy(target, kind, draft=False))


def default_draft(target: str) -> str:
    """A requantized (q4_0) copy of the target: same vocabulary, partial acceptance."""
    return requantized_copy(target, "q4_0")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", default="demo", help='target GGUF, or "demo" (default)')
    p.add_argument("--draft", default=None, help="draft GGUF (default: a q4_0 copy of the target)")
    p.add_argument("--draft-max", type=int, default=4)
    p.add_argument("--p-min", type=float, default=0.6)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--ctx", type=int, default=2048)
    p.add_argument("--threads", type=int, default=1, help="CPU threads for both models (default 1)")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--tasks", type=int, default=None, help="only the first N prompts")
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    args = p.parse_args()

    from specterm.engine.bench.tasks import builtin_tasks
    from specterm.engine.requests import ChatRequest, GenerateRequest

    target = target_path(args.target)
    draft = args.draft or default_draft(target)
    binary = find_binary()
    # Prompts both programs take as they are: continuations, and chat edits (llama.cpp gets the
    # conversation rendered with the model's own template and parses its special tokens).
    # Stop strings are dropped (the example has none): both programs generate max-tokens tokens.
    tasks = [replace(t, request=replace(t.request, stop=()))
             for t in builtin_tasks(generate_tokens=args.max_tokens)
             if isinstance(t.request, (GenerateRequest, ChatRequest))]
    tasks = tasks[: args.tasks] if args.tasks else tasks
    engine = load_specterm(target, draft, args)

    def llama_prompt(req) -> str:
        if isinstance(req, GenerateRequest):
            return req.prompt
        return engine.target.apply_chat_template([(m.role, m.content) for m in req.messages])
    load0 = os.getloadavg()
    rows = []
    try:
        for task in tasks:
            prompt = llama_prompt(task.request)
            run_specterm(engine, task.request, args)  # warm-up: page in weights, settle the allocator
            ll, sp = [], []
            for r in range(args.repeat):
                ll.append(run_llama_cpp(binary, target, draft, prompt, args))
                sp.append(run_specterm(engine, task.request, args))
                print(f"  {task.name} {r + 1}/{args.repeat}: llama.cpp {ll[-1].tps:.1f} tok/s, "
                      f"specterm {sp[-1].tps:.1f} tok/s", file=sys.stderr, flush=True)
            rows.append((task.name, ll, sp))
    finally:
        engine.close_sync()

    def pooled(runs: list[Figures]) -> Figures:
        return Figures(sum(f.tokens for f in runs), sum(f.seconds for f in runs),
                       sum(f.drafted for f in runs), sum(f.accepted for f in runs))

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x:.0%}"

    print(f"target {Path(target).name}, draft {Path(draft).name}, draft_max {args.draft_max}, "
          f"p_min {args.p_min}, {args.threads} thread(s), greedy, {args.max_tokens} tokens, "
          f"repeat {args.repeat}; load average {load0[0]:.2f} -> {os.getloadavg()[0]:.2f}")
    print(f"{'prompt':<18} {'llama.cpp t/s':>13} {'accept':>6} {'specterm t/s':>12} {'accept':>6} {'ratio':>6} "
          f"{'pair ratios':>20}")
    out, ratios = [], []
    for name, ll, sp in rows:
        L, S = pooled(ll), pooled(sp)
        ratio = S.tps / L.tps if L.tps else None
        pairs = [spec.tps / llama.tps for llama, spec in zip(ll, sp) if llama.tps]
        ratios.append(ratio)
        print(f"{name:<18} {L.tps:>13.1f} {pct(L.acceptance):>6} {S.tps:>12.1f} {pct(S.acceptance):>6} "
              f"{ratio:>6.2f} {' '.join(f'{x:.2f}' for x in pairs):>20}")
        out.append({"prompt": name, "llama_cpp": {"tokens_per_second": L.tps, "acceptance": L.acceptance,
                                                  "tokens": L.tokens},
                    "specterm": {"tokens_per_second": S.tps, "acceptance": S.acceptance, "tokens": S.tokens},
                    "ratio": ratio, "pair_ratios": pairs})
    valid = [r for r in ratios if r]
    gm = statistics.geometric_mean(valid) if valid else None
    print(f"geometric-mean ratio specterm / llama.cpp: {gm:.2f}" if gm else "no ratio")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": out, "ratio": gm, "settings": vars(args),
                                               "target": target, "draft": draft}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
