"""The session drafter's memory cap under load: index every Python file of the standard library
(tokenized with the demo model's vocabulary) into a SessionDrafter and report the index's size,
the memory the indexing holds and peaks at (tracemalloc: Python and numpy allocations, which is
all the index is made of), peak RSS growth of the whole process (which also holds llama.cpp's
tokenizer buffers and what the allocator keeps of freed file texts) and indexing time
(tokenizing excluded: the engine does it in either case). Exit 1 when what the index holds
exceeds the cap.

    .venv/bin/python bench/session_memory.py [--mb 32] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import sysconfig
import time
import tracemalloc
from pathlib import Path

from specterm.engine.llamacpp.demo import demo_model_path
from specterm.engine.llamacpp.model import LlamaModel
from specterm.engine.session_drafter import SessionDrafter
from specterm.engine.settings import ModelSettings


def current_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mb", type=int, default=32, help="memory cap of the session index (MB)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    vocab = LlamaModel.load(ModelSettings(path=demo_model_path()), vocab_only=True)
    files = sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py"))
    rss_before = current_rss_mb()
    tracemalloc.start()
    drafter = SessionDrafter(args.mb)
    index_s = 0.0
    tokens = 0
    peak_growth = 0.0
    for i, f in enumerate(files):
        try:
            text = f.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        ids = vocab.tokenize(text, add_special=False)
        t0 = time.perf_counter()
        drafter.remember(ids)
        index_s += time.perf_counter() - t0
        tokens += len(ids)
        del ids, text
        if i % 200 == 0:
            peak_growth = max(peak_growth, current_rss_mb() - rss_before)
    peak_growth = max(peak_growth, current_rss_mb() - rss_before)
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    out = {
        "files": len(files), "tokens_fed": tokens, "tokens_held": drafter.memory.tokens,
        "cap_mb": args.mb, "index_bytes_mb": round(drafter.nbytes / 2**20, 2),
        "held_mb": round(held / 2**20, 1), "held_peak_mb": round(peak / 2**20, 1),
        "rss_growth_peak_mb": round(peak_growth, 1), "index_time_s": round(index_s, 2),
        "index_tokens_per_s": round(tokens / index_s) if index_s else None,
    }
    vocab.close()
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:>20}: {v}")
    return 0 if out["held_mb"] <= args.mb else 1


if __name__ == "__main__":
    sys.exit(main())
