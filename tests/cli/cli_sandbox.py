"""Run the installed `specterm` console script as a user would: a real subprocess in a clean,
isolated environment (no user config from the machine running the tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SPECTERM = Path(sys.executable).parent / "specterm"


@dataclass
class Result:
    rc: int
    out: str
    err: str


@dataclass
class Sandbox:
    """A fake home (HOME, XDG_CONFIG_HOME) and a working folder for one test."""

    home: Path
    cwd: Path

    @property
    def user_config(self) -> Path:
        return self.home / ".config" / "specterm" / "config.toml"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPECTERM")}
        env.update(HOME=str(self.home), XDG_CONFIG_HOME=str(self.home / ".config"))
        env.pop("PYTHONBREAKPOINT", None)
        return env

    def run(self, *args: str, stdin: str | None = None, timeout: float = 240, cwd: Path | None = None) -> Result:
        proc = subprocess.run(
            [str(SPECTERM), *args],
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            cwd=cwd or self.cwd,
            env=self.env(),
            timeout=timeout,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def write_user_config(self, text: str) -> Path:
        self.user_config.parent.mkdir(parents=True, exist_ok=True)
        self.user_config.write_text(text)
        return self.user_config


def assert_clean_error(result: Result, *needles: str) -> None:
    """Exit 2, a message on stderr that contains every needle, and never a traceback."""
    assert result.rc == 2, (result.rc, result.out, result.err)
    assert "Traceback" not in result.err, result.err
    for needle in needles:
        assert needle in result.err, (needle, result.err)
