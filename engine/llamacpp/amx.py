"""llama.cpp's AMX kernels, tried once in a child process before a model loads.

Why: llama-cpp-python builds llama.cpp from source for the machine it is installed on, and on an
Intel CPU with AMX (Sapphire Rapids and later) that build puts the weights in AMX buffers. In the
llama.cpp it vendors, the kernels' tile configuration lives on the stack, where the compiler may
drop the stores that fill it (seen here, GCC 12), and only the main thread asks the kernel for AMX
state (llama.cpp pull request 26954, open, fixes both): the first AMX multiplication faults and the
process dies (SIGSEGV, no message), in the first decode. So where the CPU offers AMX and the build
has the kernels, a child process loads the demo model (or the model about to load) and decodes two
tokens. If the child dies, models load without llama.cpp's extra buffer types (AMX and weight
repacking, llama-server's `--no-repack`), which run on every CPU. The verdict is kept per build and
CPU in the cache folder, so only the first start pays (about a second).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Callable

PROBE_TIMEOUT_S = 60.0

# The child: load a model with llama.cpp's defaults and decode two tokens (the engine's warm-up).
_PROBE = """
import sys
import llama_cpp as lc
quiet = lc.llama_log_callback(lambda *a: None)  # kept: llama.cpp calls it until exit
lc.llama_log_set(quiet, None)
lc.llama_backend_init()
model = lc.llama_model_load_from_file(sys.argv[1].encode(), lc.llama_model_default_params())
if not model:
    sys.exit(3)
cparams = lc.llama_context_default_params()
cparams.n_ctx, cparams.n_batch, cparams.n_ubatch = 64, 8, 8
cparams.n_threads = cparams.n_threads_batch = 4  # worker threads too, as the engine runs
ctx = lc.llama_init_from_model(model, cparams)
if not ctx:
    sys.exit(3)
tokens = (lc.llama_token * 2)(0, 0)
sys.exit(0 if lc.llama_decode(ctx, lc.llama_batch_get_one(tokens, 2)) == 0 else 3)
"""


def _cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return ""


def cpu_offers_amx(cpuinfo: str) -> bool:
    """Whether the CPU (Linux's /proc/cpuinfo flags) runs AMX int8 tiles."""
    return any(line.startswith("flags") and "amx_int8" in line.split() for line in cpuinfo.splitlines())


def _ggml_cpu_library() -> Path | None:
    """llama-cpp-python's ggml CPU backend, if it is a separate library (it is on Linux). Found
    without importing llama_cpp (engine/llamacpp/model.py is its one importer)."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "lib"
    found = sorted(folder.glob("libggml-cpu.so*")) if folder.is_dir() else []
    return found[0] if found else None


def build_has_amx(library: Path | None) -> bool:
    """Whether this ggml build carries the AMX kernels (its AMX buffer type is compiled in)."""
    try:
        return library is not None and b"ggml_backend_amx_buffer_type" in library.read_bytes()
    except OSError:
        return False


def _verdict_file(library: Path, cpuinfo: str) -> Path:
    """Where the probe's verdict for this build on this CPU is kept."""
    stat = library.stat()
    cpu = next((line for line in cpuinfo.splitlines() if line.startswith("model name")), platform.processor())
    key = hashlib.sha256(f"{library.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{cpu}".encode()).hexdigest()[:16]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "specterm" / f"amx-{key}.json"


def probe(model_path: str) -> bool:
    """Load `model_path` and decode two tokens in a child process: False if the child died."""
    try:
        run = subprocess.run([sys.executable, "-c", _PROBE, model_path], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return True  # nothing learned: llama.cpp's defaults, as without the probe
    return run.returncode >= 0  # a signal (SIGSEGV, SIGILL) is a negative return code


@lru_cache(maxsize=1)
def _verdict_here() -> Path | None:
    """The verdict file where the probe applies here (an AMX CPU, a build with the kernels), else
    None. Facts of the host and the build, found once a process (the library is read whole)."""
    library = _ggml_cpu_library()
    cpuinfo = _cpuinfo()
    if library is None or not cpu_offers_amx(cpuinfo) or not build_has_amx(library):
        return None
    return _verdict_file(library, cpuinfo)


def cached_verdict(verdict: Path, find: Callable[[], bool]) -> bool:
    """The verdict kept in `verdict`, else `find()`'s, kept there for the next start."""
    try:
        known = json.loads(verdict.read_text())
        if isinstance(known, dict) and isinstance(known.get("amx_runs"), bool):
            return known["amx_runs"]
    except (OSError, ValueError):
        pass  # not probed yet on this build and CPU (or the file is damaged): probe
    ok = find()
    try:
        verdict.parent.mkdir(parents=True, exist_ok=True)
        verdict.write_text(json.dumps({"amx_runs": ok}))
    except OSError:
        pass  # probed again next start
    return ok


def _probe_model(fallback: str) -> str:
    """The demo model (small, its weights use the AMX kernels); the model about to load without it."""
    from ..errors import ModelLoadError
    from .demo import demo_model_path

    try:
        return demo_model_path()
    except ModelLoadError:
        return fallback


def extra_buffers_ok(model_path: str) -> bool:
    """Whether models may use llama.cpp's extra buffer types (AMX, weight repacking) here;
    `model_path` is what the probe loads where the demo model is missing."""
    verdict = _verdict_here()
    return verdict is None or cached_verdict(verdict, lambda: probe(_probe_model(model_path)))
