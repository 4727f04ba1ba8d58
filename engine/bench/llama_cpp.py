"""llama.cpp's own speculative decoding on the same pair and tasks: `specterm bench --compare-llama-cpp`.

The reference is llama.cpp's `llama-server`, built by bench/build_llama_cpp.sh from the llama.cpp that
llama-cpp-python vendors (the same commit and kernels specterm runs on). Two servers run side by
side on loopback: one plain, one speculative (`--spec-type draft-simple -md DRAFT` for a draft model, `--spec-type
ngram-simple` for prompt lookup), so llama.cpp's speedup is measured by one program against itself,
as specterm's is; their ratio is the figure that compares the two implementations. (The
`llama-speculative-simple` example has no plain mode to divide by; bench/compare_llama_cpp.py
compares its tokens/s with specterm's directly.)

Both get the prompt as the exact token ids specterm decoded, the same number of tokens to generate
(what specterm's plain run emitted), greedy decoding, the same context and thread count, and a
warm-up request first (for ngram-mod, whose pool outlives requests, a fresh server per measured run
that has seen only the task's context and prompt); then plain and speculative requests alternate. Tokens/s is the
server's own `predicted_per_second` (generation only, like specterm's).

The servers get specterm's context size, so a context text longer than that (a whole module in a
tasks file) goes in overlapping pieces that each fit: the session drafter reads it all into its
memory, and ngram-mod learns every n-gram of a request's prompt, so both see the same text. A task
whose own prompt and tokens cannot fit is skipped with the reason; the other tasks still run.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Callable, Sequence

from ..llamacpp.amx import extra_buffers_ok
from ..settings import EngineSettings
from .theory import geometric_mean

ProgressFn = Callable[[str, int, int], None]
SERVER = "llama-server"
NGRAM_TYPE = "ngram-simple"  # llama.cpp's per-request lookup (ngram-mod also remembers earlier answers)
# The session drafter's counterpart: one hash table shared by every request. The server cannot clear
# it, so each measured run gets a fresh server that has seen only the task's context and prompt (a
# warm-up or earlier run of the same task would hand it the answer; specterm's runs never see one).
SESSION_NGRAM_TYPE = "ngram-mod"


def binaries_dir() -> Path | None:
    """Where bench/build_llama_cpp.sh put the binaries ($SPECTERM_LLAMA_CPP_BIN, else
    $SPECTERM_LLAMA_CPP_DIR/bin, else ~/.cache/specterm/llama.cpp-<llama-cpp-python version>/bin),
    or None when llama-server is not there."""
    explicit = os.environ.get("SPECTERM_LLAMA_CPP_BIN")
    if explicit:
        folder = Path(explicit)
    else:
        try:
            version = metadata.version("llama-cpp-python")
        except metadata.PackageNotFoundError:
            return None
        root = os.environ.get("SPECTERM_LLAMA_CPP_DIR") or str(
            Path.home() / ".cache" / "specterm" / f"llama.cpp-{version}")
        folder = Path(root) / "bin"
    return folder if os.access(folder / SERVER, os.X_OK) else None


# A context piece leaves room for the one token its request generates (and a little slack); pieces
# overlap by more than any n-gram llama.cpp's drafters match, so no n-gram that spans a cut is lost.
PIECE_SLACK = 8
PIECE_OVERLAP = 64


class TaskDoesNotFit(Exception):
    """A task's prompt and tokens to generate exceed the server's context: skip it, say why."""


def context_pieces(ids: list[int], n_ctx: int) -> list[list[int]]:
    """`ids` as requests that each fit a context of `n_ctx` tokens: itself when it fits, else
    overlapping windows that together hold every token and every n-gram of it (none when empty)."""
    size = max(1, n_ctx - PIECE_SLACK)
    if len(ids) <= size:
        return [ids] if ids else []
    overlap = min(PIECE_OVERLAP, size // 4)
    step = size - overlap
    return [ids[start:start + size] for start in range(0, len(ids) - overlap, step)]


@dataclass
class Timing:
    tokens: int
    tps: float
    drafted: int
    accepted: int


class Server:
    """One llama-server process on a free loopback port; its log goes to a temporary file."""

    def __init__(self, binary: Path, args: list[str], *, timeout: float = 120) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.log = tempfile.NamedTemporaryFile(prefix="specterm-llama-server-", suffix=".log", delete=False)
        cmd = [str(binary), "--host", "127.0.0.1", "--port", str(self.port), "-np", "1", *args]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama-server exited ({self.proc.returncode}): {self.log_tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        self.close()
        raise RuntimeError(f"llama-server not ready after {timeout:.0f} s: {self.log_tail()}")

    def n_ctx(self, fallback: int) -> int:
        """The context one request may fill (`-c` with one slot), as the server reports it."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/props", timeout=10) as r:
                props = json.loads(r.read())
            return int(props["default_generation_settings"]["n_ctx"])
        except (urllib.error.URLError, OSError, ValueError, KeyError, TypeError):
            return fallback

    def complete(self, prompt: list[int], n_predict: int, timeout: float = 600) -> Timing:
        body = json.dumps({"prompt": prompt, "n_predict": n_predict, "temperature": 0.0, "top_k": 1,
                           "seed": 0, "cache_prompt": True, "stream": False}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/completion", data=body,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                data = json.loads(r.read())
        except urllib.error.HTTPError as err:
            if err.code == 400:  # the server's own words: "the request exceeds the available context size"
                raise TaskDoesNotFit(f"llama-server refused it: {_error_text(err)}") from None
            raise
        t = data.get("timings", {})
        return Timing(int(t.get("predicted_n", 0)), float(t.get("predicted_per_second", 0.0)),
                      int(t.get("draft_n", 0)), int(t.get("draft_n_accepted", 0)))

    def log_tail(self, n: int = 1500) -> str:
        try:
            return Path(self.log.name).read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)


def server_args(settings: EngineSettings, target_path: str) -> tuple[list[str], list[str], str]:
    """(common, speculative-only) llama-server flags for this pair, and a description."""
    t = settings.target
    threads, threads_batch = t.thread_counts()
    common = ["-m", target_path, "-c", str(t.ctx), "-t", str(threads), "-tb", str(threads_batch),
              "-ngl", str(t.gpu_layers if t.gpu_layers >= 0 else 999), "--no-warmup"]
    if not extra_buffers_ok(target_path):
        common.append("--no-repack")  # as specterm loads models here (engine/llamacpp/amx.py)
    sp = settings.speculative
    if settings.draft.kind == "model" and settings.draft.model is not None:
        d = settings.draft.model
        spec = ["--spec-type", "draft-simple", "-md", d.path, "-td", str(threads),
                "--spec-draft-n-max", str(sp.draft_max),
                "--spec-draft-n-min", "0", "--spec-draft-p-min", str(sp.p_min),
                "-ngld", str(d.gpu_layers if d.gpu_layers >= 0 else 999)]
        what = (f"llama-server --spec-type draft-simple -md {Path(d.path).name}, draft max {sp.draft_max}, "
                f"p_min {sp.p_min}")
    else:
        kind = SESSION_NGRAM_TYPE if settings.draft.kind == "session" else NGRAM_TYPE
        spec = ["--spec-type", kind]
        what = f"llama-server --spec-type {kind}"
    return common, spec, what


def compare(settings: EngineSettings, target_path: str, tasks: Sequence[tuple],
            specterm_speedups: dict[str, float | None], *, repeat: int = 1,
            on_progress: ProgressFn | None = None) -> dict:
    """Plain and speculative llama-server on each (name, kind, prompt ids, tokens to generate[,
    context ids]); each context text goes first as earlier requests (one token generated each, in
    pieces when it is longer than the server's context), as the session saw it before the task.

    Returns the JSON section of the bench report; {"skipped": why} when the binaries are absent,
    the draft kind has no llama.cpp counterpart, or a server fails; a task that does not fit the
    server's context is listed under "skipped_tasks" with why, and the others are compared."""
    show = on_progress or (lambda msg, done, total: None)
    folder = binaries_dir()
    if folder is None:
        return {"skipped": "llama.cpp binaries not found; build them with bench/build_llama_cpp.sh "
                "(or set SPECTERM_LLAMA_CPP_BIN)", "program": SERVER}
    if settings.draft.kind == "none":
        return {"skipped": "no drafter configured (--draft none): nothing to compare", "program": SERVER}
    common, spec, what = server_args(settings, target_path)
    remembers = SESSION_NGRAM_TYPE in spec  # its pool outlives requests: one fresh server per run
    plain_server: Server | None = None
    spec_server: Server | None = None

    def fresh_spec(context: list, prompt: list[int]) -> Server:
        """A speculative server whose pool holds the task's context and prompt, nothing else."""
        nonlocal spec_server
        if spec_server is not None:
            spec_server.close()
        spec_server = Server(folder / SERVER, [*common, *spec])
        for earlier in context:
            spec_server.complete(earlier, 1)
        spec_server.complete(prompt, 1)  # warm-up: prompt in the cache, pages touched
        return spec_server

    try:
        plain_server = Server(folder / SERVER, common)
        if not remembers:
            spec_server = Server(folder / SERVER, [*common, *spec])
        n_ctx = plain_server.n_ctx(settings.target.ctx)
        rows: list[dict] = []
        skipped: list[dict] = []
        total = len(tasks) * (1 + repeat)
        done = 0
        for i, (name, kind, prompt, n_predict, *rest) in enumerate(tasks):
            context = [piece for ids in (rest[0] if rest else []) for piece in context_pieces(ids, n_ctx)]
            try:
                if len(prompt) + n_predict > n_ctx:
                    raise TaskDoesNotFit(f"its prompt ({len(prompt)} tokens) and {n_predict} tokens to generate "
                                         f"do not fit llama-server's context of {n_ctx} tokens")
                for earlier in context:
                    plain_server.complete(earlier, 1)
                plain_server.complete(prompt, n_predict)  # warm-up: prompt in the cache, pages touched
                if remembers:
                    fresh_spec(context, prompt)
                else:
                    assert spec_server is not None  # started above: one server for every task
                    for earlier in context:
                        spec_server.complete(earlier, 1)
                    spec_server.complete(prompt, n_predict)
                done += 1
                show(f"{name}: warm-up", done, total)
                plain_runs: list[Timing] = []
                spec_runs: list[Timing] = []
                for r in range(repeat):
                    if remembers and r > 0:
                        fresh_spec(context, prompt)
                    assert spec_server is not None  # started above or by fresh_spec
                    order = (plain_server, spec_server) if (r + i) % 2 == 0 else (spec_server, plain_server)
                    for srv in order:
                        (plain_runs if srv is plain_server else spec_runs).append(srv.complete(prompt, n_predict))
                    done += 1
                    show(f"{name} ({r + 1}/{repeat})", done, total)
            except TaskDoesNotFit as err:
                skipped.append({"name": name, "why": str(err)})
                done = (i + 1) * (1 + repeat)
                show(f"{name}: skipped", done, total)
                continue
            p_tps = _pooled_tps(plain_runs)
            s_tps = _pooled_tps(spec_runs)
            drafted = sum(t.drafted for t in spec_runs)
            accepted = sum(t.accepted for t in spec_runs)
            speedup = _r(s_tps / p_tps) if p_tps and s_tps else None  # (the ratio uses the figure shown)
            mine = specterm_speedups.get(name)
            rows.append({"name": name, "kind": kind, "tokens": n_predict, "plain_tps": _r(p_tps),
                         "spec_tps": _r(s_tps), "speedup": speedup,
                         "acceptance": _r(accepted / drafted) if drafted else None,
                         "num_draft_tokens": drafted, "num_accepted_tokens": accepted,
                         "specterm_speedup": mine,
                         "ratio": _r(mine / speedup) if mine and speedup else None,
                         "context_requests": len(context)})
    except (RuntimeError, OSError, urllib.error.URLError, ValueError) as err:
        return {"skipped": f"llama-server failed: {err}", "program": what}
    finally:
        for server in (plain_server, spec_server):
            if server is not None:
                server.close()
    return {"program": what, "binaries": str(folder), "repeat": repeat, "n_ctx": n_ctx, "tasks": rows,
            "skipped_tasks": skipped,
            "speedup": _r(geometric_mean(r["speedup"] for r in rows)),
            "specterm_speedup": _r(geometric_mean(r["specterm_speedup"] for r in rows)),
            "ratio": _r(geometric_mean(r["ratio"] for r in rows))}


def _error_text(err: urllib.error.HTTPError) -> str:
    """The message inside llama-server's JSON error reply, else the status line."""
    try:
        body = json.loads(err.read() or b"{}")
        return str(body["error"]["message"])
    except (OSError, ValueError, KeyError, TypeError):
        return f"HTTP {err.code} {err.reason}"


def _pooled_tps(runs: list[Timing]) -> float | None:
    """Tokens over time, pooled over the runs (each run's time = tokens / its tokens per second)."""
    secs = sum(t.tokens / t.tps for t in runs if t.tps > 0)
    toks = sum(t.tokens for t in runs if t.tps > 0)
    return toks / secs if secs > 0 else None


def _r(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(x, nd)
