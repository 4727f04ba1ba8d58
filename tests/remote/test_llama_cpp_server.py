"""RemoteEngine against a real `python -m llama_cpp.server` on loopback (the demo model).

This server streams OpenAI SSE but reports no draft statistics: acceptance must come back as
"not reported by server", never as a number.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from specterm.engine import (
    BackendUnavailableError,
    ChatMessage,
    ChatRequest,
    CompletionRequest,
    Engine,
    Finished,
    GenerateRequest,
    TextDelta,
)
from specterm.engine.completion import finish_completion
from specterm.engine.remote.engine import RemoteEngine, RemoteSettings
from specterm.engine.remote.server_stats import NOT_REPORTED, describe_acceptance

from remote_servers import API_KEY


def settings(url: str, **kw) -> RemoteSettings:
    kw.setdefault("api_key", API_KEY)
    kw.setdefault("api_key_env", "SPECTERM_API_KEY")
    return RemoteSettings(url=url, **kw)


async def collect(engine, request):
    events = [ev async for ev in engine.stream(request)]
    assert isinstance(events[-1], Finished)
    assert sum(isinstance(e, Finished) for e in events) == 1
    return events


async def test_start_identifies_server_and_model(llama_cpp_server, demo_model):
    engine = RemoteEngine(settings(llama_cpp_server.url + "/v1/"))
    try:
        assert isinstance(engine, Engine)  # the same protocol as LocalEngine
        await engine.start()
        assert engine.server.kind == "llama-cpp-python"
        assert engine.server.model == demo_model
        assert engine.server.drafting is None  # this server does not say
        assert engine.info.backend == "openai"
        assert engine.info.target_name == "SmolLM2-135M-Instruct.Q4_1.gguf"
        assert engine.info.extra["url"] == llama_cpp_server.url
    finally:
        await engine.close()


async def test_streaming_generate_chat_and_fim(llama_cpp_server):
    engine = RemoteEngine(settings(llama_cpp_server.url))
    try:
        for request in (
            GenerateRequest(prompt="def fibonacci(n):", max_tokens=12),
            ChatRequest(messages=(ChatMessage("user", "Name a colour."),), max_tokens=12),
            CompletionRequest(prefix="def add(a, b):\n    return ", suffix="\n", max_tokens=12),
        ):
            events = await collect(engine, request)
            deltas = [e.text for e in events if isinstance(e, TextDelta)]
            done = events[-1]
            assert len(deltas) >= 2, f"{type(request).__name__} did not stream"
            if isinstance(request, CompletionRequest):  # the completion rules, as on the local engine
                assert done.text == finish_completion("".join(deltas), request)
            else:
                assert done.text == "".join(deltas)
            assert done.reason in ("length", "eos", "stop")
            assert done.error is None
            assert 1 <= done.stats.tokens <= 12
            assert done.stats.tokens_per_second and done.stats.tokens_per_second > 0
            # no draft statistics from this server: not a made-up figure
            assert done.stats.acceptance is None and not done.stats.acceptance_reported
            assert done.stats.to_dict()["acceptance"] is None
            assert describe_acceptance(done.stats) == NOT_REPORTED
        session = engine.session_stats()
        assert session.requests == 3 and session.acceptance is None
    finally:
        await engine.close()


async def test_generate_hits_max_tokens_exactly(llama_cpp_server):
    engine = RemoteEngine(settings(llama_cpp_server.url))
    try:
        events = await collect(engine, GenerateRequest(prompt="Count: 1, 2, 3,", max_tokens=8))
        assert events[-1].reason == "length" and events[-1].stats.tokens == 8
    finally:
        await engine.close()


async def test_single_line_completion_stops_at_end_of_line(llama_cpp_server):
    engine = RemoteEngine(settings(llama_cpp_server.url))
    try:
        req = CompletionRequest(prefix="x = 1\ny = 2\nz = ", suffix="", max_tokens=48, multiline=False)
        done = (await collect(engine, req))[-1]
        assert "\n" not in done.text.lstrip("\n")
    finally:
        await engine.close()


async def test_cancel_mid_stream_then_engine_still_works(llama_cpp_server):
    engine = RemoteEngine(settings(llama_cpp_server.url))
    try:
        pieces = 0
        t_cancel = None
        done = None
        async for ev in engine.stream(GenerateRequest(prompt="Once upon a time", max_tokens=400)):
            if isinstance(ev, TextDelta):
                pieces += 1
                if pieces == 3:
                    t_cancel = time.monotonic()
                    await engine.cancel()
            elif isinstance(ev, Finished):
                done = ev
        assert done is not None and done.reason == "cancelled"
        assert time.monotonic() - t_cancel < 1.0
        assert done.stats.tokens == 3 and len(done.text) > 0
        # the engine is still usable right away
        again = (await collect(engine, GenerateRequest(prompt="Hello", max_tokens=4)))[-1]
        assert again.reason == "length" and again.stats.tokens == 4
    finally:
        await engine.close()


async def test_cancel_from_another_task(llama_cpp_server):
    engine = RemoteEngine(settings(llama_cpp_server.url))
    try:
        seen = asyncio.Event()

        async def consume():
            out = []
            async for ev in engine.stream(GenerateRequest(prompt="A long story:", max_tokens=400)):
                out.append(ev)
                if isinstance(ev, TextDelta):
                    seen.set()
            return out

        task = asyncio.create_task(consume())
        await asyncio.wait_for(seen.wait(), 30)
        await engine.cancel()
        events = await asyncio.wait_for(task, 5)
        assert events[-1].reason == "cancelled" and events[-1].stats.tokens < 400
    finally:
        await engine.close()


async def test_wrong_api_key_is_a_clear_error(llama_cpp_server):
    engine = RemoteEngine(settings(llama_cpp_server.url, api_key="not-the-key"))
    with pytest.raises(BackendUnavailableError) as err:
        await engine.start()
    text = str(err.value)
    assert "refused the API key" in text and "401" in text
    assert "$SPECTERM_API_KEY" in text  # names where the key came from
    assert "not-the-key" not in text  # and never prints the key
    await engine.close()


async def test_missing_api_key_says_how_to_set_it(llama_cpp_server):
    engine = RemoteEngine(settings(llama_cpp_server.url, api_key=None))
    with pytest.raises(BackendUnavailableError) as err:
        await engine.start()
    assert "requires an API key" in str(err.value)
    assert "export SPECTERM_API_KEY=" in str(err.value)
    await engine.close()


async def test_wrong_path_is_a_clear_error(llama_cpp_server):
    engine = RemoteEngine(settings(llama_cpp_server.url + "/not-here/v1"))
    with pytest.raises(BackendUnavailableError) as err:
        await engine.start()
    assert "404" in str(err.value) and "base address" in str(err.value)
    await engine.close()


async def test_https_to_a_plain_http_server_is_a_tls_error(llama_cpp_server):
    engine = RemoteEngine(settings(llama_cpp_server.url.replace("http://", "https://")))
    t0 = time.monotonic()
    with pytest.raises(BackendUnavailableError) as err:
        await engine.start()
    assert "TLS" in str(err.value) and "http://" in str(err.value)
    assert time.monotonic() - t0 < 3.0  # a TLS mismatch is not retried
    await engine.close()


async def test_unknown_model_lists_what_the_server_has(llama_cpp_server, demo_model):
    engine = RemoteEngine(settings(llama_cpp_server.url, model="gpt-17"))
    with pytest.raises(BackendUnavailableError) as err:
        await engine.start()
    assert "gpt-17" in str(err.value) and demo_model in str(err.value)
    await engine.close()


async def test_server_killed_mid_stream_then_retry_works(own_llama_cpp_server):
    srv = own_llama_cpp_server
    engine = RemoteEngine(settings(srv.url))
    try:
        pieces = 0
        done = None
        async for ev in engine.stream(GenerateRequest(prompt="Once upon a time", max_tokens=400)):
            if isinstance(ev, TextDelta):
                pieces += 1
                if pieces == 3:
                    srv.kill()
            elif isinstance(ev, Finished):
                done = ev
        # a clear error, the partial reply kept, no exception out of the stream
        assert done is not None and done.reason == "error"
        assert "lost" in done.error and srv.url in done.error and "again" in done.error
        assert len(done.text) > 0 and done.stats.tokens >= 3

        # while the server is down: a quick, clear failure (the app shows it and keeps running)
        t0 = time.monotonic()
        down = (await collect(engine, GenerateRequest(prompt="Hello", max_tokens=4)))[-1]
        assert time.monotonic() - t0 < 10.0
        assert down.reason == "error" and "connection refused" in down.error

        # the server comes back: the same engine object works again
        srv.start()
        again = (await collect(engine, GenerateRequest(prompt="Hello", max_tokens=4)))[-1]
        assert again.reason == "length" and again.stats.tokens == 4
    finally:
        await engine.close()


async def test_backoff_reconnects_when_the_server_comes_back(own_llama_cpp_server):
    """A request sent while the server restarts succeeds once it is up (bounded backoff)."""
    srv = own_llama_cpp_server
    engine = RemoteEngine(settings(srv.url, retries=8, backoff_s=0.25, deadline_s=60.0))
    try:
        await engine.start()
        srv.kill()
        threading.Timer(0.5, lambda: srv.start(wait=False)).start()
        t0 = time.monotonic()
        done = (await collect(engine, GenerateRequest(prompt="Hello", max_tokens=4)))[-1]
        assert done.reason == "length" and done.stats.tokens == 4
        assert time.monotonic() - t0 > 0.5  # it really had to wait for the restart
    finally:
        await engine.close()


LONG_PROMPT = "def helper_{i}(x):\n    return x + {i}\n\n"


async def test_cancel_before_the_first_token_does_not_wait_for_the_server(llama_cpp_server):
    """While the server still reads a long prompt nothing has streamed yet; cancel acts anyway."""
    engine = RemoteEngine(settings(llama_cpp_server.url))
    try:
        await engine.start()
        prompt = "".join(LONG_PROMPT.format(i=i) for i in range(50))  # ~700 tokens to read first
        task = asyncio.create_task(collect(engine, GenerateRequest(prompt=prompt, max_tokens=50)))
        await asyncio.sleep(0.2)
        t0 = time.monotonic()
        await engine.cancel()
        events = await asyncio.wait_for(task, 5)
        assert events[-1].reason == "cancelled" and time.monotonic() - t0 < 1.0
    finally:
        await engine.close()


async def test_completion_time_budget_ends_the_request(llama_cpp_server):
    engine = RemoteEngine(settings(llama_cpp_server.url))
    try:
        await engine.start()
        prefix = "".join(LONG_PROMPT.format(i=i) for i in range(50, 70))
        t0 = time.monotonic()
        done = (await collect(engine, CompletionRequest(prefix=prefix, max_tokens=64, time_budget_s=0.3)))[-1]
        assert done.reason == "time" and time.monotonic() - t0 < 2.0
    finally:
        await engine.close()


async def test_a_prompt_longer_than_the_context_is_a_clear_error(llama_cpp_server):
    """llama_cpp.server answers 200 and then sends nothing: no retries, a message that says so."""
    engine = RemoteEngine(settings(llama_cpp_server.url))
    try:
        await engine.start()
        t0 = time.monotonic()
        done = (await collect(engine, GenerateRequest(prompt="word " * 1500, max_tokens=4)))[-1]
        assert done.reason == "error"
        assert "without sending anything" in done.error and "context" in done.error
        assert time.monotonic() - t0 < 10.0
        again = (await collect(engine, GenerateRequest(prompt="Hello", max_tokens=2)))[-1]
        assert again.reason == "length"
    finally:
        await engine.close()


def test_cli_doctor_json_and_complete_through_the_server(llama_cpp_server, tmp_path):
    import json

    from remote_servers import run_specterm

    env = {"SPECTERM_API_KEY": API_KEY}
    res = run_specterm("doctor", "--backend", "openai", "--url", llama_cpp_server.url, "--json", env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    obj = json.loads(res.stdout)
    remote = obj["remote"]
    assert obj["backend"] == "openai" and obj["ok"] and remote["ok"]
    assert remote["server"]["kind"] == "llama-cpp-python" and remote["drafting"] is None
    assert remote["trees"].startswith("linear drafts only")
    assert remote["round_trip"]["tokens"] > 0
    assert remote["round_trip"]["acceptance"] is None
    assert remote["round_trip"]["acceptance_text"] == "not reported by server"

    src = tmp_path / "add.py"
    src.write_text("def add(a, b):\n    return \n")
    no_budget = tmp_path / "no-budget.toml"  # a loaded CI machine must not turn this into "time"
    no_budget.write_text("[completion]\ntime_budget_ms = 0\npredict_ms = 0\n")
    res = run_specterm("complete", f"{src}:2:12", "--backend", "openai", "--url", llama_cpp_server.url,
                       "--config", str(no_budget), "--max-tokens", "8", "--json", env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["stats"]["acceptance"] is None and out["stats"]["acceptance_reported"] is False
    assert out["stats"]["tokens"] > 0
