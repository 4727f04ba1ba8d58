"""Real server processes for tests/remote: start on a free loopback port, wait until ready, kill,
bring back. Imported by conftest.py and the tests (a module name no other test folder uses)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
API_KEY = "specterm-test-key"
BUILD_SCRIPT = REPO / "bench" / "build_llama_cpp.sh"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """A server subprocess on a fixed loopback port that tests can kill and bring back."""

    def __init__(self, argv: list[str], port: int, log: Path, ready_path: str, headers: dict | None = None):
        self.argv = argv
        self.port = port
        self.log = log
        self.ready_path = ready_path
        self.headers = headers or {}
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 90.0, wait: bool = True) -> None:
        fh = open(self.log, "ab")
        self.proc = subprocess.Popen(self.argv, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        fh.close()
        if wait:
            self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 90.0) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited ({self.proc.returncode}):\n{self.log_tail()}")
            try:
                r = httpx.get(self.url + self.ready_path, headers=self.headers, timeout=2.0)
                if r.status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"server not ready after {timeout} s:\n{self.log_tail()}")

    def kill(self) -> None:
        """SIGKILL: the way a crashed or OOM-killed server disappears."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def log_tail(self, n: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""


def llama_cpp_bin_dir() -> Path | None:
    """Where bench/build_llama_cpp.sh put llama-server, or None when it has not been built."""
    explicit = os.environ.get("SPECTERM_LLAMA_CPP_BIN")
    if explicit:
        return Path(explicit)
    try:
        out = subprocess.run(["bash", str(BUILD_SCRIPT), "--print"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


SPECTERM = Path(sys.executable).parent / "specterm"


def run_specterm(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
                 timeout: float = 120) -> subprocess.CompletedProcess:
    """The installed `specterm` as a user runs it, with no SPECTERM_* variables or user config
    leaking in from the machine running the tests (HOME points at `cwd`)."""
    home = str(cwd) if cwd else os.getcwd()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SPECTERM")}
    clean.update(HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"))
    clean.update(env or {})
    return subprocess.run([str(SPECTERM), *args], capture_output=True, text=True, env=clean,
                          cwd=cwd, timeout=timeout, stdin=subprocess.DEVNULL)
