"""Remote faults against real servers on loopback (tests/remote/fault_server.py): refused, reset
mid-stream and before the reply, slow first byte, malformed SSE, malformed JSON, an error event,
HTTP 4xx/5xx with bodies, and a server that comes back. Every one gives a clear message (an
EngineError-shaped `Finished(error=...)` the app toasts; exit 2 and one line in the CLI), the same
engine recovers without a restart, and nothing empty is cached."""

from __future__ import annotations

import time

import pytest

from specterm.engine import CompletionRequest, Finished, GenerateRequest, TextDelta
from specterm.engine.remote.engine import RemoteEngine, RemoteSettings
from specterm.tui.suggest.completer import Completer, CompletionOptions

from fault_server import FaultServer
from remote_servers import free_port, run_specterm

# Slow tier (tests/conftest.py): every test talks to a fault server, most through the installed `specterm`.
pytestmark = pytest.mark.slow

FAST = dict(connect_timeout_s=1.0, retries=1, backoff_s=0.1, deadline_s=4.0)

# mode -> words the user-facing message must contain
FAULTS = {
    "reset_at_once": ("reset the connection",),
    "malformed_sse": ("did not answer in Server-Sent Events", "Bad gateway page"),
    "malformed_json": ("cannot read", "not JSON"),
    "error_event": ("failed the request", "out of memory"),
    "http_400": ("HTTP 400", "unknown sampling field"),
    "http_422": ("HTTP 422", "field required"),
    "http_500": ("HTTP 500", "internal kaboom"),
    "http_503": ("HTTP 503", "Loading model"),
}


@pytest.fixture
def fault_server():
    srv = FaultServer(free_port())
    srv.start()
    yield srv
    srv.stop()


async def finish(engine, request) -> tuple[str, Finished]:
    streamed, done = "", None
    async for ev in engine.stream(request):
        if isinstance(ev, TextDelta):
            streamed += ev.text
        elif isinstance(ev, Finished):
            assert done is None
            done = ev
    assert done is not None
    return streamed, done


def completion(**kw) -> CompletionRequest:
    return CompletionRequest(prefix="def f():\n    ", suffix="\n", max_tokens=8, **kw)


@pytest.mark.parametrize("mode", sorted(FAULTS))
async def test_each_fault_is_a_clear_error_and_the_engine_recovers(fault_server, mode):
    engine = RemoteEngine(RemoteSettings(url=fault_server.url, **FAST))
    completer = Completer(CompletionOptions.from_config())
    completer.engine = engine
    try:
        await engine.start()
        fault_server.mode = mode
        t0 = time.monotonic()
        for request in (GenerateRequest(prompt="x", max_tokens=4), completion()):
            done = [ev async for ev in completer.stream(1, request) if isinstance(ev, Finished)][-1] \
                if isinstance(request, CompletionRequest) else (await finish(engine, request))[1]
            assert done.reason == "error", (mode, done)
            for word in FAULTS[mode]:
                assert word in done.error, (mode, done.error)
            assert "Traceback" not in done.error
        assert time.monotonic() - t0 < 12.0
        assert len(completer.cache) == 0  # a failed completion is never cached
        fault_server.mode = "ok"  # the server is fixed: the same engine works again
        _, done = await finish(engine, completion())
        assert done.reason in ("eos", "stop") and done.text == "x = 1"
    finally:
        await engine.close()


async def test_reset_mid_stream_keeps_the_partial_text_and_says_so(fault_server):
    engine = RemoteEngine(RemoteSettings(url=fault_server.url, **FAST))
    try:
        fault_server.mode = "reset_mid_stream"
        streamed, done = await finish(engine, GenerateRequest(prompt="x", max_tokens=4))
        assert done.reason == "error" and done.text == "partial" == streamed
        assert "lost after 1 streamed piece" in done.error and "reconnects" in done.error
        fault_server.mode = "malformed_json_after_text"
        _, done = await finish(engine, GenerateRequest(prompt="x", max_tokens=4))
        assert done.reason == "error" and done.text == "x = 1" and "partial reply is kept" in done.error
        fault_server.mode = "ok"
        _, done = await finish(engine, GenerateRequest(prompt="x", max_tokens=4))
        assert done.reason == "eos" and done.text == "x = 1\n"
    finally:
        await engine.close()


async def test_slow_first_byte_ends_by_the_time_budget_and_is_not_cached(fault_server):
    engine = RemoteEngine(RemoteSettings(url=fault_server.url, **FAST))
    completer = Completer(CompletionOptions.from_config())
    completer.engine = engine
    try:
        await engine.start()
        fault_server.mode = "slow_first_byte"
        t0 = time.monotonic()
        events = [ev async for ev in completer.stream(1, completion(time_budget_s=0.5))]
        done = events[-1]
        assert isinstance(done, Finished) and done.reason == "time" and done.text == ""
        assert time.monotonic() - t0 < 2.0
        assert len(completer.cache) == 0  # cut before any text: not an answer, never cached
        fault_server.mode = "ok"
        events = [ev async for ev in completer.stream(2, completion())]
        assert events[-1].text == "x = 1" and len(completer.cache) == 1
    finally:
        await engine.close()


async def test_refused_then_the_server_comes_back(fault_server):
    engine = RemoteEngine(RemoteSettings(url=fault_server.url, **FAST))
    try:
        await engine.start()
        fault_server.stop()
        t0 = time.monotonic()
        _, done = await finish(engine, completion())
        assert done.reason == "error" and "connection refused" in done.error
        assert time.monotonic() - t0 < 10.0
        fault_server.start()  # same port, no engine restart
        _, done = await finish(engine, completion())
        assert done.reason in ("eos", "stop") and done.text == "x = 1"
    finally:
        await engine.close()


async def test_an_unreachable_server_fails_start_within_ten_seconds():
    """What the app's status bar shows instead of a lasting "loading the model"."""
    from specterm.engine import BackendUnavailableError

    engine = RemoteEngine(RemoteSettings(url=f"http://127.0.0.1:{free_port()}"))  # default retries/deadline
    t0 = time.monotonic()
    with pytest.raises(BackendUnavailableError) as err:
        await engine.start()
    assert time.monotonic() - t0 < 10.0 and "connection refused" in str(err.value)
    assert engine.info.target_name == f"server http://127.0.0.1:{engine.root.rsplit(':', 1)[1]}"
    await engine.close()


@pytest.mark.parametrize("mode", ["reset_at_once", "malformed_sse", "malformed_json", "http_400", "http_500"])
def test_cli_exits_2_with_one_line_on_each_fault(fault_server, mode, tmp_path):
    fault_server.mode = mode
    src = tmp_path / "a.py"
    src.write_text("def f():\n    \n")
    res = run_specterm("complete", f"{src}:2:5", "--backend", "openai", "--url", fault_server.url, cwd=tmp_path)
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("specterm: ") and FAULTS[mode][0] in lines[0], res.stderr
    assert res.stdout == ""


def test_cli_time_budget_cut_before_any_text_says_so(fault_server, tmp_path):
    fault_server.mode = "slow_first_byte"
    src = tmp_path / "a.py"
    src.write_text("def f():\n    \n")
    conf = tmp_path / "fast.toml"
    conf.write_text("[completion]\ntime_budget_ms = 400\n")
    res = run_specterm("complete", f"{src}:2:5", "--backend", "openai", "--url", fault_server.url,
                       "--config", str(conf), "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert '"finish_reason": "time"' in res.stdout and '"text": ""' in res.stdout
    assert "time budget" in res.stderr and "400 ms" in res.stderr
