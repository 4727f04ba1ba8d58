"""The linter and the type checker pass on the tree: `ruff check .` and `mypy`, configured in
pyproject.toml ([tool.ruff], [tool.mypy]) and installed by the `test` extra, run with the Python
the tests run on. Run either from the repository root to see the same report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]


def run_module(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *argv], cwd=REPO, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=600)


def test_ruff_finds_nothing():
    proc = run_module("ruff", "check", "--no-fix", "--output-format", "concise", ".")
    assert proc.returncode == 0, f"`ruff check .` found problems:\n{proc.stdout}{proc.stderr}"


@pytest.mark.slow
def test_mypy_finds_nothing():
    proc = run_module("mypy")
    assert proc.returncode == 0, f"`mypy` found problems:\n{proc.stdout}{proc.stderr}"


def test_the_slow_tier_is_registered_strict_and_in_the_readme():
    """`pytest -m "not slow"` is the documented inner loop: the marker is registered, a misspelt
    marker is an error (--strict-markers), and the README says how to run each tier."""
    options = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert any(m.startswith("slow:") for m in options["markers"]), options["markers"]
    assert "--strict-markers" in options["addopts"]
    assert 'pytest -m "not slow"' in (REPO / "README.md").read_text()
