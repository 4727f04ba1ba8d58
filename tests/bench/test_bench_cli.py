"""`specterm bench` through the installed script on the demo model, with tiny settings.

The figures themselves are not asserted (they depend on the machine); the shape of the report,
the greedy-output check, the sweep and bad input are.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from specterm.engine.stats import Stats

from bench_support import TINY

STATS_KEYS = set(Stats().to_dict())
COMPARISON_KEYS = {"plain", "speculative", "speedup", "predicted_speedup", "efficiency", "outputs_match"}
SUMMARY_KEYS = {"speedup", "speedup_min", "acceptance", "efficiency"}


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0


def test_json_report_with_sweep(bench):
    r = bench("--json", "--tasks", "3", "--draft", "lookup", "--sweep", "1,2", *TINY)
    data = r.json()
    assert [t["kind"] for t in data["tasks"]] == ["completion", "continuation", "edit"]
    for task in data["tasks"]:
        assert COMPARISON_KEYS <= set(task)
        for side in ("plain", "speculative"):
            assert set(task[side]) == STATS_KEYS  # the engine's own statistics type
            assert task[side]["requests"] == 1 and task[side]["tokens"] > 0
        assert task["plain"]["drafted"] == 0  # plain really is plain
        for side in ("plain", "speculative"):  # llama.cpp's decode is part of each pass, not all
            stats = task[side]
            assert 0 < stats["device_time_s"] <= stats["verify_time_s"] <= stats["generation_time_s"]
            assert _is_number(task["host_ms_per_pass"][side]) and task["host_ms_per_pass"][side] > 0
        assert _is_number(task["speedup"])
        assert task["outputs_match"] in (True, False)
        if task["outputs_match"] is False:  # where, and whether plain decoding was at a near-tie
            assert isinstance(task["first_divergence"], int) and task["divergence_gap"] is not None
    assert [e["draft_length"] for e in data["sweep"]] == [1, 2]
    for entry in data["sweep"]:
        assert COMPARISON_KEYS <= set(entry)
        assert _is_number(entry["speedup"])
        assert len(entry["tasks"]) == 3
        # a fixed length never drafts more than asked
        assert len(entry["speculative"]["drafted_by_position"]) <= entry["draft_length"]
    assert SUMMARY_KEYS <= set(data["summary"])
    assert isinstance(data["summary"]["divergences_at_near_ties_only"], bool)
    assert _is_number(data["summary"]["speedup"])
    assert data["summary"]["speedup_min"] <= data["summary"]["speedup"]
    costs = data["costs"]
    assert _is_number(costs["t1_ms"]) and costs["t_d_ms"] == 0  # lookup drafting is free
    assert costs["t_read_ms"] == 0  # and reads nothing before a draft
    # timed at a few sizes up to draft_max + 1 (interpolated between) and at each sweep length + 1
    assert set(costs["t_v_ms"]) == {"1", "2", "3", "5"}
    # one round of costs after every measured run (plain and drafting, adaptive and each sweep
    # length), timed where the run left the target's cache: after the task's prompt and output
    rounds = 0
    for task in data["tasks"]:
        own = task["costs"]
        runs = 2 * data["settings"]["repeat"] * (1 + len(data["settings"]["sweep"]))
        assert own["samples"] == runs and set(own["t_v_ms"]) == set(costs["t_v_ms"])
        prompt = task["plain"]["prompt_tokens"] // task["plain"]["requests"]
        per_run = task["plain"]["tokens"] // task["plain"]["requests"]
        assert prompt <= own["position"] <= prompt + per_run + 1
        rounds += own["samples"]
    assert costs["samples"] == rounds  # the headline costs pool every task's rounds
    assert data["draft_kind"] == "lookup" and data["settings"]["sweep"] == [1, 2]
    # the human table went to stderr, stdout stayed pure JSON
    assert "summary:" in r.err and "speedup vs draft length" in r.err and "host ms per pass" in r.err


@pytest.mark.parametrize("hybrid", [True, False])
def test_greedy_outputs_match_with_a_near_perfect_draft(bench, demo_path, hybrid):
    """The demo model drafting for itself: near-full acceptance, and identical greedy text; by
    default with the session drafter beside it (a hybrid), whose model the costs are timed on."""
    flags = () if hybrid else ("--no-hybrid",)
    data = bench("--json", "--tasks", "1", "--draft", demo_path, *flags, *TINY).json()
    (task,) = data["tasks"]
    assert data["draft_kind"] == ("hybrid" if hybrid else "model")
    assert task["outputs_match"] is True and task["first_divergence"] is None
    assert data["summary"]["outputs_match"] is True
    assert data["costs"]["t_d_ms"] > 0  # a draft model costs something per token
    assert data["costs"]["t_read_ms"] >= 0  # and one more token in its read (2-token decode - t_d)
    spec = task["speculative"]
    assert spec["tokens"] == task["plain"]["tokens"]
    if spec["drafted"]:
        assert spec["acceptance"] >= 0.5
    assert task["predicted_speedup"] is None or _is_number(task["predicted_speedup"])


def test_other_drafters_side_by_side_in_one_run(bench):
    """--also: every task again with the session drafter, against its own plain runs, beside the
    main drafter's figures; the table says the ratio."""
    r = bench("--json", "--tasks", "2", "--draft", "lookup", "--also", "session", *TINY)
    data = r.json()
    assert data["draft_kind"] == "lookup"
    [also] = data["also"]
    assert also["draft_kind"] == "session"
    assert [t["name"] for t in also["tasks"]] == [t["name"] for t in data["tasks"]]
    for task in also["tasks"]:
        assert _is_number(task["speedup"]) and task["plain"]["drafted"] == 0
        assert task["speculative"]["requests"] == 1
    assert SUMMARY_KEYS <= set(also["summary"])
    assert "side by side" in r.err and "ratio" in r.err


def test_a_task_too_short_to_time_runs_more_pairs(bench):
    """--min-time: a task whose one pair generated for less than S seconds runs more pairs (up to
    MAX_PAIRS), every pair on both sides and its own cost round after each run; with 0 exactly
    --repeat pairs."""
    from specterm.engine.bench.runner import MAX_PAIRS

    flags = ("--json", "--tasks", "1", "--draft", "lookup", "--repeat", "1", "--max-tokens", "8", "--ctx", "1024")
    data = bench(*flags, "--min-time", "30").json()  # never reached in 8 tokens: every pair runs
    (task,) = data["tasks"]
    assert len(task["pair_speedups"]) == MAX_PAIRS and data["settings"]["min_time_s"] == 30
    assert task["plain"]["requests"] == task["speculative"]["requests"] == MAX_PAIRS
    assert task["costs"]["samples"] == 2 * MAX_PAIRS
    exact = bench(*flags, "--min-time", "0").json()
    assert len(exact["tasks"][0]["pair_speedups"]) == 1 and exact["tasks"][0]["plain"]["requests"] == 1


def test_no_drafter_reports_no_acceptance(bench):
    data = bench("--json", "--tasks", "1", "--draft", "none", "--no-costs", *TINY).json()
    (task,) = data["tasks"]
    assert task["speculative"]["drafted"] == 0 and task["speculative"]["acceptance"] is None
    assert data["summary"]["acceptance"] is None
    assert task["predicted_speedup"] is None and data["costs"] is None


def test_fim_tasks_from_user_files(bench, tmp_path: Path):
    src = tmp_path / "code"
    src.mkdir()
    body = "\n".join(f"    total += values[{i}] * weights[{i}]" for i in range(30))
    (src / "score.py").write_text(f"def score(values, weights):\n    total = 0\n{body}\n    return total\n")
    first = bench("--json", "--tasks", "2", "--task-seed", "3", "--draft", "lookup", str(src), *TINY).json()
    again = bench("--json", "--tasks", "2", "--task-seed", "3", "--draft", "lookup", str(src), *TINY).json()
    assert [t["kind"] for t in first["tasks"]] == ["fim", "fim"]
    assert [t["source"] for t in first["tasks"]] == [t["source"] for t in again["tasks"]]
    assert all(t["source"].startswith(str(src / "score.py") + ":") for t in first["tasks"])


def test_table_and_chart_on_stdout_without_json(bench, tmp_path: Path):
    chart = tmp_path / "chart.png"
    r = bench("--tasks", "1", "--draft", "lookup", "--sweep", "1,2", "--plot", str(chart), *TINY)
    assert r.rc == 0, r.err
    assert "speedup" in r.out and "summary:" in r.out and "g=2" in r.out and "adaptive" in r.out
    assert not r.out.lstrip().startswith("{")
    # --plot: a real PNG (its signature and a plausible size), announced on stderr
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and chart.stat().st_size > 5000
    assert f"chart written to {chart}" in r.err


def test_plot_without_matplotlib_says_which_extra_to_install(tmp_path: Path):
    """Checked before any model loads: a missing extra must not cost a benchmark run first."""
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from specterm.tui.cli import main\n"
            f"sys.exit(main(['bench', '--plot', {str(tmp_path / 'c.png')!r}]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stderr
    assert "pip install 'specterm[plot]'" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "c.png").exists()


def _clean_error(r, *needles: str) -> None:
    assert r.rc == 2, (r.rc, r.out, r.err)
    assert "Traceback" not in r.err
    assert r.out == ""
    for n in needles:
        assert n in r.err, (n, r.err)


def test_bad_flags_exit_2(bench, tmp_path: Path):
    _clean_error(bench("--sweep", "0,2"), "draft lengths must be whole numbers >= 1")
    _clean_error(bench("--sweep", "two"), "expected draft lengths")
    _clean_error(bench("--repeat", "0"), "must be at least 1")
    _clean_error(bench("--min-time", "-1"), "must be 0 or more seconds")
    _clean_error(bench("--tasks", "x"), "expected a whole number")
    _clean_error(bench("--kinds", "poetry"), "task kinds are")
    _clean_error(bench(str(tmp_path / "missing")), "no such file or folder")
    (tmp_path / "tiny.txt").write_text("x\n")
    _clean_error(bench(str(tmp_path / "tiny.txt")), "no usable text files")
    _clean_error(bench("--backend", "openai", "--url", "http://127.0.0.1:9"), "local llama.cpp engine")
    _clean_error(bench("--draft", str(tmp_path / "nope.gguf")), "nope.gguf")
    _clean_error(bench("--plot", str(tmp_path / "chart.gif")), "must end in .png, .svg, .pdf")
    _clean_error(bench("--plot", str(tmp_path / "no" / "chart.png")), "does not exist")
    _clean_error(bench("--also", "none"), "plain side of every comparison")
    _clean_error(bench("--also", str(tmp_path / "nope.gguf")), "neither lookup, session nor a GGUF file")
