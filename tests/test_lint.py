"""The linter and the type checker pass on the tree: `ruff check .` and `mypy`, configured in
pyproject.toml ([tool.ruff], [tool.mypy]) and installed by the `test` extra, run with the Python
the tests run on. Run either from the repository root to see the same report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_module(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *argv], cwd=REPO, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=600)


def test_ruff_finds_nothing():
    proc = run_module("ruff", "check", "--no-fix", "--output-format", "concise", ".")
    assert proc.returncode == 0, f"`ruff check .` found problems:\n{proc.stdout}{proc.stderr}"


def test_mypy_finds_nothing():
    proc = run_module("mypy")
    assert proc.returncode == 0, f"`mypy` found problems:\n{proc.stdout}{proc.stderr}"
