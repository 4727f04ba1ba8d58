"""bench/gpu_check.sh on a machine without a GPU: usage, the early checks, and its table builder
on a real bench report. The whole --bundle / --from --cpu path builds llama.cpp (minutes), so it
is run by hand (docs/bench.md, "On a GPU box"), not here."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench_support import TINY

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "gpu_check.sh"
TABLE = ROOT / "bench" / "gpu_table.py"


def _run(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, cwd=cwd,
                          timeout=60, stdin=subprocess.DEVNULL, env=env)


def test_help_names_every_mode_and_exits_0(tmp_path):
    r = _run("--help", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    for flag in ("--bundle", "--from", "--cpu", "--out"):
        assert flag in r.stdout


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has an NVIDIA driver")
def test_without_a_gpu_it_stops_at_once_with_one_clear_line(tmp_path):
    parts = tmp_path / "bundle"
    parts.mkdir()  # no parts at all: the GPU check must come first anyway
    start = time.monotonic()
    r = _run("--from", str(parts), cwd=tmp_path)
    assert r.returncode == 2
    assert time.monotonic() - start < 30
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "no NVIDIA GPU" in lines[0] and "--cpu" in lines[0], r.stderr
    assert not list(tmp_path.glob("gpu-check-*")), "nothing is written before the checks pass"


@pytest.mark.parametrize("args, words", [
    ((), "--bundle DIR"),
    (("--bogus",), "unknown argument: --bogus"),
    (("--from",), "needs a folder"),
])
def test_bad_usage_exits_2_and_says_why(tmp_path, args, words):
    r = _run(*args, cwd=tmp_path)
    assert r.returncode == 2
    assert words in r.stderr


def test_cpu_mode_refuses_a_folder_without_parts(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    r = _run("--from", str(empty), "--cpu", cwd=tmp_path)
    assert r.returncode == 2
    assert "no bundle parts" in r.stderr


def test_the_table_reads_real_bench_reports(bench, tmp_path):
    """A real `specterm bench --json` report becomes one row of the markdown table, with the run's
    own costs beside the speedup; a damaged file becomes a row that says so."""
    out = tmp_path / "out"
    out.mkdir()
    r = bench("--json", "--tasks", "1", "--draft", "lookup", *TINY)
    assert r.json()["summary"]["speedup"]
    (out / "lookup.json").write_text(r.out)
    (out / "broken.json").write_text("{not json")
    p = subprocess.run([sys.executable, str(TABLE), str(out), "--device", "test box"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "# specterm GPU check: test box"
    rows = {ln.split("|")[1].strip(): ln for ln in lines if ln.startswith("| ") and not ln.startswith("| run")
            and not ln.startswith("| ---")}
    assert set(rows) == {"lookup", "broken"}
    assert "failed" in rows["broken"]
    cells = [c.strip() for c in rows["lookup"].split("|")]
    assert cells[4] == "lookup" and cells[5].endswith(")") and "x (min" in cells[5]
    assert cells[9].startswith("t1 ") and "t_v(5)" in cells[9]


def test_the_table_refuses_an_empty_folder(tmp_path):
    p = subprocess.run([sys.executable, str(TABLE), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "no JSON files" in p.stderr
