"""Run the installed `specterm bench` in a clean environment, with settings small enough for CI.

One llama.cpp thread: on a shared 2-core machine two spinning threads per decode can be descheduled
and make every pass many times slower (ggml's threads wait for each other at every step); one
thread keeps the runs short.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench_support import SPECTERM


@dataclass
class Result:
    rc: int
    out: str
    err: str

    def json(self) -> dict:
        assert self.rc == 0, (self.rc, self.err)
        lines = [ln for ln in self.out.splitlines() if ln.strip()]
        assert len(lines) == 1, f"stdout must be exactly one JSON object, got {len(lines)} lines"
        return json.loads(lines[0])


@pytest.fixture
def bench(tmp_path: Path):
    home = tmp_path / "home"
    (home / ".config" / "specterm").mkdir(parents=True)
    (home / ".config" / "specterm" / "config.toml").write_text("[model]\nthreads = 1\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECTERM")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))

    def run(*args: str, timeout: float = 300) -> Result:
        assert SPECTERM.exists(), f"the specterm console script is not installed next to {sys.executable}"
        proc = subprocess.run([str(SPECTERM), "bench", *args], capture_output=True, text=True,
                              cwd=tmp_path, env=env, timeout=timeout, stdin=subprocess.DEVNULL)
        return Result(proc.returncode, proc.stdout, proc.stderr)

    return run


@pytest.fixture(scope="session")
def demo_path() -> str:
    from specterm.engine.llamacpp.demo import demo_model_path

    return demo_model_path()
