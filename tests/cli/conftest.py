"""Fixtures for the CLI tests: an isolated sandbox to run the installed `specterm` in."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cli_sandbox import SPECTERM, Sandbox


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    assert SPECTERM.exists(), f"the specterm console script is not installed next to {sys.executable}"
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir()
    work.mkdir()
    return Sandbox(home, work)


@pytest.fixture(scope="session")
def demo_path() -> str:
    from specterm.engine.llamacpp.demo import demo_model_path

    return demo_model_path()
