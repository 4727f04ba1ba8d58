"""Real OpenAI-compatible servers on 127.0.0.1 for the remote-engine tests (no mocks).

* `python -m llama_cpp.server` (llama-cpp-python's server extra) with the demo model: reports no
  draft statistics, so it exercises the "not reported by server" path.
* llama.cpp's own `llama-server`, built by `bench/build_llama_cpp.sh` from the llama.cpp that
  llama-cpp-python vendors, run with a FIM-capable copy of the demo model as target and a
  requantized copy as draft, so draft statistics come back for real. Tests that need it are
  skipped, with the reason shown, when the binary has not been built.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

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


@pytest.fixture(scope="session")
def demo_model() -> str:
    from specterm.engine.demo import demo_model_path

    return demo_model_path()


def _llama_cpp_server(demo_model: str, tmp: Path) -> ServerProcess:
    port = free_port()
    argv = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", demo_model, "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "1024", "--n_threads", "1", "--verbose", "False", "--api_key", API_KEY,
    ]
    return ServerProcess(argv, port, tmp / f"llama_cpp_server-{port}.log", "/v1/models",
                         headers={"Authorization": f"Bearer {API_KEY}"})


@pytest.fixture(scope="module")
def llama_cpp_server(demo_model, tmp_path_factory):
    """`python -m llama_cpp.server` with the demo model, API key required; shared per module."""
    srv = _llama_cpp_server(demo_model, tmp_path_factory.mktemp("lcs"))
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def own_llama_cpp_server(demo_model, tmp_path):
    """A private llama_cpp.server a test may kill and restart."""
    srv = _llama_cpp_server(demo_model, tmp_path)
    srv.start()
    yield srv
    srv.stop()


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


@pytest.fixture(scope="session")
def llama_server_bin() -> str:
    bin_dir = llama_cpp_bin_dir()
    exe = bin_dir / "llama-server" if bin_dir else None
    if exe is None or not exe.is_file():
        found = shutil.which("llama-server")
        if found is None:
            pytest.skip("llama-server is not built: run bench/build_llama_cpp.sh (builds it outside the repo)")
        return found
    return str(exe)


def _llama_server(binary: str, target: str, draft: str | None, tmp: Path, *, key: str | None = API_KEY) -> ServerProcess:
    port = free_port()
    argv = [binary, "-m", target, "--host", "127.0.0.1", "--port", str(port),
            "-c", "1024", "-t", "1", "-np", "1", "--metrics", "--slots", "--no-warmup"]
    if draft:
        argv += ["--spec-draft-model", draft, "--spec-draft-n-max", "4", "--spec-draft-n-min", "0", "-td", "1"]
    if key:
        argv += ["--api-key", key]
    return ServerProcess(argv, port, tmp / f"llama-server-{port}.log", "/health")


@pytest.fixture(scope="module")
def llama_server(llama_server_bin, models, tmp_path_factory):
    """llama-server: FIM-capable demo copy as target, requantized copy as draft, API key on."""
    srv = _llama_server(llama_server_bin, models.fim, models.draft_q4, tmp_path_factory.mktemp("ls"))
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def own_llama_server(llama_server_bin, models, tmp_path):
    srv = _llama_server(llama_server_bin, models.fim, models.draft_q4, tmp_path)
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def plain_llama_server(llama_server_bin, demo_model, tmp_path_factory):
    """llama-server on the unmodified demo model: no draft, no FIM tokens (so no /infill)."""
    srv = _llama_server(llama_server_bin, demo_model, None, tmp_path_factory.mktemp("pls"), key=None)
    srv.start()
    yield srv
    srv.stop()
