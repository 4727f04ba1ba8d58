"""The markdown table of a bench/gpu_check.sh run: one row per bench run (JSON file) in a folder.

Usage: python bench/gpu_table.py OUT_DIR [--device TEXT] > OUT_DIR/table.md

Each row: specterm's drafter and its geometric-mean speedup over plain decoding (minimum task in
brackets), any drafter run beside it (--also), llama.cpp's own speculation on the same tasks and
pair in the same run, specterm's speedup over llama.cpp's, and the run's measured costs (t1 and
t_v(5) as a multiple of t1), so each figure is read with the costs it was measured at.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _speedup(summary: dict) -> str:
    low = summary.get("speedup_min")
    return _x(summary.get("speedup")) + (f" (min {low:.2f})" if low is not None else "")


def row(name: str, data: dict) -> str:
    summary = data.get("summary") or {}
    settings = data.get("settings") or {}
    costs = data.get("costs") or {}
    t1 = costs.get("t1_ms")
    tv5 = (costs.get("t_v_over_t1") or {}).get("5")
    also = "; ".join(f"{a.get('draft')}: {_speedup(a.get('summary') or {})}" for a in data.get("also") or [])
    ll = data.get("llama_cpp") or {}
    if ll.get("skipped"):
        ll_text, ratio = f"skipped: {ll['skipped']}", "-"
    elif ll:
        ll_text, ratio = f"`{ll.get('program', '?')}` {_x(ll.get('speedup'))}", _x(ll.get("ratio"))
    else:
        ll_text, ratio = "-", "-"
    cost_text = (f"t1 {t1:.2f} ms, t_v(5) {tv5:.2f} t1" if t1 is not None and tv5 is not None
                 else (f"t1 {t1:.2f} ms" if t1 is not None else "-"))
    regime = settings.get("regime", "")
    return (f"| {name} | {regime} | {data.get('target', '?')} | {data.get('draft', '?')} | "
            f"{_speedup(summary)} | {also or '-'} | {ll_text} | {ratio} | {cost_text} |")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path)
    p.add_argument("--device", default="")
    args = p.parse_args(argv)
    files = sorted(args.folder.glob("*.json"))
    if not files:
        print(f"gpu_table: no JSON files in {args.folder}", file=sys.stderr)
        return 2
    lines = [f"# specterm GPU check{': ' + args.device if args.device else ''}", "",
             "| run | regime | target | drafter | specterm vs plain | beside it | llama.cpp, same run "
             "| specterm / llama.cpp | costs |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for path in files:
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            lines.append(f"| {path.stem} | failed: {err} | | | | | | | |")
            continue
        lines.append(row(path.stem, data))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
