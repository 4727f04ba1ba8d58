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


def _module(functions: int) -> str:
    """A whole module as a session's context: far longer than the tiny runs' 1024-token context."""
    return "".join(f"def handler_{i}(request, response):\n    value = request.get('field_{i}', {i})\n"
                   f"    response.write(value * {i})\n    return response\n\n\n" for i in range(functions))


@pytest.mark.slow
@pytest.mark.skipif(binaries_dir() is None, reason="llama.cpp binaries not built (bench/build_llama_cpp.sh)")
def test_compare_llama_cpp_takes_a_context_longer_than_the_servers(tmp_path: Path):
    """Issue #33: a tasks file whose context is a whole module made llama-server answer 400 and the
    whole comparison was dropped. The context goes to the server in pieces that fit its context."""
    home = tmp_path / "home"
    (home / ".config" / "specterm").mkdir(parents=True)
    (home / ".config" / "specterm" / "config.toml").write_text("[model]\nthreads = 1\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECTERM")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), SPECTERM_LLAMA_CPP_BIN=str(binaries_dir()))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(json.dumps(t) for t in [
        {"name": "after-a-module", "kind": "continuation", "prompt": "def handler_7(request, response):\n",
         "max_tokens": 8, "context": [_module(120)]},
        {"name": "short-context", "kind": "continuation", "prompt": "def handler_2(request, response):\n",
         "max_tokens": 8, "context": [_module(3)]},
    ]) + "\n")
    proc = subprocess.run([str(SPECTERM), "bench", "--json", "--compare-llama-cpp", "--draft", "session",
                           "--tasks-file", str(tasks), "--no-costs", *TINY], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    cmp = json.loads(proc.stdout)["llama_cpp"]
    assert "skipped" not in cmp, cmp
    rows = {r["name"]: r for r in cmp["tasks"]}
    assert set(rows) == {"after-a-module", "short-context"}, cmp
    long_row = rows["after-a-module"]
    assert long_row["context_requests"] > 1  # the module went in pieces that fit 1024 tokens
    assert rows["short-context"]["context_requests"] == 1
    for row in rows.values():
        assert row["plain_tps"] > 0 and row["spec_tps"] > 0
    assert cmp.get("skipped_tasks", []) == []
    assert "skipped" not in proc.stderr


@pytest.mark.skipif(binaries_dir() is None, reason="llama.cpp binaries not built (bench/build_llama_cpp.sh)")
@pytest.mark.slow
def test_compare_llama_cpp_skips_a_task_that_cannot_fit_and_compares_the_rest(demo_path):
    """A task whose own prompt and tokens exceed llama-server's context is skipped with the reason;
    the comparison of the other tasks still comes back (never one error for the whole run)."""
    from specterm.engine.bench.llama_cpp import compare
    from specterm.engine.settings import DraftSettings, EngineSettings, ModelSettings

    settings = EngineSettings(target=ModelSettings(path=demo_path, ctx=512, threads=1, gpu_layers=0),
                              draft=DraftSettings(kind="lookup"))
    ids = [1000 + (i % 700) for i in range(600)]  # any token ids of the demo's vocabulary
    tasks = [("too-long", "continuation", ids, 4, []),
             ("fits", "continuation", ids[:40], 4, [ids[:300], ids])]  # a context longer than 512 too
    result = compare(settings, demo_path, tasks, {"fits": 1.0, "too-long": 1.0})
    assert "skipped" not in result, result
    assert result["n_ctx"] == 512
    (skipped,) = result["skipped_tasks"]
    assert skipped["name"] == "too-long"
    assert "600 tokens" in skipped["why"] and "512" in skipped["why"], skipped
    (row,) = result["tasks"]
    assert row["name"] == "fits" and row["plain_tps"] > 0 and row["spec_tps"] > 0
    assert row["context_requests"] == 3  # 300 tokens in one piece, 600 in two that overlap


@pytest.mark.parametrize("length", [0, 1, 503, 504, 505, 1500, 5000])
def test_context_pieces_fit_and_keep_every_ngram(length: int):
    """Each piece fits a 512-token context with its one generated token; together they hold every
    25-token window (ngram-mod matches 24 tokens and learns the one after) of the text."""
    from specterm.engine.bench.llama_cpp import context_pieces

    ids = list(range(length))
    pieces = context_pieces(ids, 512)
    assert all(len(p) + 1 <= 512 for p in pieces)
    if length <= 504:
        assert pieces == ([ids] if ids else [])  # nothing to send for an empty text
    else:
        assert len(pieces) > 1
    for start in range(max(0, length - 25) + 1 if length else 0):
        window = ids[start:start + 25]
        assert any(p[0] <= window[0] and window[-1] <= p[-1] for p in pieces if p), start
