"""`specterm bench --regime` (derived, cached copies of the target) and `--compare-llama-cpp`.

The derived copies land in the test's own HOME cache, so each test derives them afresh; tiny
settings keep the runs short. The llama.cpp comparison runs for real when bench/build_llama_cpp.sh
has built the binaries on this machine, and is otherwise checked to skip with a note.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from specterm.engine.bench.llama_cpp import binaries_dir

from bench_support import SPECTERM, TINY


def test_memory_bound_runs_on_an_f32_copy_with_a_q4_0_draft(bench, tmp_path: Path):
    data = bench("--json", "--regime", "memory-bound", "--tasks", "1", "--no-costs", *TINY).json()
    s = data["settings"]
    assert s["regime"] == "memory-bound"
    cache = tmp_path / "home" / ".cache" / "specterm" / "derived"
    target, draft = Path(s["derived_target"]), Path(s["derived_draft"])
    assert target.parent == cache and draft.parent == cache  # cached for the next run
    assert target.name.endswith(".derived-F32.gguf") and draft.name.endswith(".derived-Q4_0.gguf")
    assert target.stat().st_size > 4 * draft.stat().st_size  # 32 bits per weight against 4.5
    # the derived draft with the session drafter beside it, as the config's default has it
    assert data["target"] == target.name and data["draft"] == f"session+{draft.name}"
    assert data["draft_kind"] == "hybrid"
    (task,) = data["tasks"]
    assert task["speculative"]["tokens"] > 0 and task["plain"]["drafted"] == 0
    # a --draft flag keeps its drafter; the copies are reused, not derived again
    before = {p: p.stat().st_mtime_ns for p in cache.iterdir()}
    again = bench("--json", "--regime", "memory-bound", "--draft", "lookup", "--tasks", "1", "--no-costs",
                  *TINY).json()
    assert again["draft_kind"] == "lookup" and "derived_draft" not in again["settings"]
    assert again["settings"]["derived_target"] == str(target)
    assert {p: p.stat().st_mtime_ns for p in cache.iterdir()} == before


def test_compute_bound_drafts_with_a_q2_k_copy(bench):
    data = bench("--json", "--regime", "compute-bound", "--tasks", "1", "--no-costs", *TINY).json()
    s = data["settings"]
    assert s["regime"] == "compute-bound" and "derived_target" not in s
    assert Path(s["derived_draft"]).name.endswith(".derived-Q2_K.gguf")
    assert data["draft_kind"] == "hybrid" and data["draft"].startswith("session+")


def test_a_regime_drafts_with_its_derived_draft_alone_with_no_hybrid(bench):
    """--no-hybrid with a regime's derived draft: the model alone, no session drafter beside it."""
    data = bench("--json", "--regime", "compute-bound", "--no-hybrid", "--tasks", "1", "--no-costs",
                 *TINY).json()
    assert data["draft_kind"] == "model" and not data["draft"].startswith("session+")
    assert Path(data["settings"]["derived_draft"]).name == data["draft"]


def test_compare_llama_cpp_is_skipped_with_a_note_without_binaries(bench):
    # the fixture's HOME is empty, so the default build folder has no binaries
    r = bench("--json", "--compare-llama-cpp", "--draft", "lookup", "--tasks", "1", "--no-costs", *TINY)
    data = r.json()
    assert "build them with bench/build_llama_cpp.sh" in data["llama_cpp"]["skipped"]
    assert "llama.cpp comparison skipped" in r.err
    assert data["tasks"][0]["speedup"] is not None  # specterm's own figures are still there


@pytest.mark.skipif(binaries_dir() is None, reason="llama.cpp binaries not built (bench/build_llama_cpp.sh)")
@pytest.mark.parametrize("draft", ["lookup", "session", "self"])
def test_compare_llama_cpp_runs_llama_server_side_by_side(bench, tmp_path: Path, demo_path, draft):
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECTERM")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), SPECTERM_LLAMA_CPP_BIN=str(binaries_dir()))
    flag = demo_path if draft == "self" else draft
    proc = subprocess.run([str(SPECTERM), "bench", "--json", "--compare-llama-cpp", "--draft", flag,
                           "--tasks", "2", "--no-costs", *TINY], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    cmp = data["llama_cpp"]
    assert "skipped" not in cmp, cmp
    assert {"lookup": "--spec-type ngram-simple", "session": "--spec-type ngram-mod",
            "self": "-md"}[draft] in cmp["program"]
    assert [r["name"] for r in cmp["tasks"]] == [t["name"] for t in data["tasks"]]
    for row, mine in zip(cmp["tasks"], data["tasks"]):
        assert row["tokens"] == mine["plain"]["tokens"]  # llama.cpp generates as many tokens
        assert row["plain_tps"] > 0 and row["spec_tps"] > 0 and row["speedup"] > 0
        assert row["specterm_speedup"] == mine["speedup"]
        assert row["ratio"] == pytest.approx(mine["speedup"] / row["speedup"], rel=1e-3)
    if draft == "self":  # the demo model drafting for itself: llama.cpp drafts and accepts
        assert sum(r["num_draft_tokens"] for r in cmp["tasks"]) > 0
    assert "llama.cpp comparison" in proc.stderr and "specterm / llama.cpp" in proc.stderr
