"""Shared constants of the bench tests (a module of its own: `conftest` is not importable by name
when the whole suite runs, every test folder has one)."""

from __future__ import annotations

import sys
from pathlib import Path

SPECTERM = Path(sys.executable).parent / "specterm"
# Tiny settings: one short task, exactly one pair per mode (however short), a short draft.
TINY = ("--repeat", "1", "--min-time", "0", "--max-tokens", "8", "--draft-max", "4", "--ctx", "1024")
