"""RemoteEngine against llama.cpp's own `llama-server` drafting with a real draft model.

The server runs a FIM-capable copy of the demo model as target and a requantized copy as draft, so
`timings.draft_n` / `draft_n_accepted` come back for real and must land in `Stats` unchanged. The
binary comes from bench/build_llama_cpp.sh; without it these tests are skipped with that reason.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest

from specterm.engine import (
    ChatMessage,
    ChatRequest,
    CompletionRequest,
    Finished,
    GenerateRequest,
    StatsUpdate,
    TextDelta,
)
from specterm.engine.remote.engine import RemoteEngine, RemoteSettings
from specterm.engine.remote.server_stats import describe_acceptance, spec_counters

from remote_servers import API_KEY, run_specterm

PROMPT = "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"


def settings(url: str, key: str | None = API_KEY, **kw) -> RemoteSettings:
    return RemoteSettings(url=url, api_key=key, api_key_env="SPECTERM_API_KEY", **kw)


async def run(engine, request):
    events = [ev async for ev in engine.stream(request)]
    assert isinstance(events[-1], Finished)
    return events


def metrics_counters(srv):
    page = httpx.get(srv.url + "/metrics", headers={"Authorization": f"Bearer {API_KEY}"}, timeout=10).text
    return spec_counters(page)


async def test_identifies_a_drafting_llama_server(llama_server):
    engine = RemoteEngine(settings(llama_server.url))
    try:
        await engine.start()
        srv = engine.server
        assert srv.kind == "llama-server"
        assert srv.version  # build_info from /props
        assert srv.drafting is True  # /slots says the slot can speculate
        assert srv.acceptance_source == "timings"
        assert srv.n_ctx == 1024
        assert engine.info.draft_name == "server"
    finally:
        await engine.close()


async def test_draft_statistics_come_back_for_real(llama_server):
    engine = RemoteEngine(settings(llama_server.url))
    try:
        events = await run(engine, GenerateRequest(prompt=PROMPT, max_tokens=48))
        done = events[-1]
        s = done.stats
        assert done.reason in ("length", "eos") and done.error is None
        assert done.text == "".join(e.text for e in events if isinstance(e, TextDelta))
        assert s.acceptance_reported
        assert s.drafted > 0, "llama-server drafted nothing"
        assert 0 <= s.accepted <= s.drafted
        assert s.acceptance == pytest.approx(s.accepted / s.drafted)
        assert s.target_passes == s.tokens - s.accepted
        assert s.tokens_per_pass >= 1.0
        assert s.prompt_tokens > 0 and s.generation_time_s > 0
        assert describe_acceptance(s).endswith("%")
        # live statistics while streaming (timings_per_token), growing towards the final figure
        updates = [e.stats for e in events if isinstance(e, StatsUpdate)]
        assert updates, "no live StatsUpdate while streaming"
        assert all(a.tokens <= b.tokens for a, b in zip(updates, updates[1:]))
        assert updates[-1].tokens <= s.tokens
        d = s.to_dict()
        assert d["drafted"] == s.drafted and d["acceptance"] == pytest.approx(s.acceptance)
        assert engine.session_stats().drafted == s.drafted
    finally:
        await engine.close()


async def test_timings_agree_with_the_servers_prometheus_counters(llama_server):
    """The same request seen two ways: per-response timings and the server's /metrics page
    (llama-server exports vLLM's counter family under `llamacpp:`), through the same parser
    that reads vLLM."""
    engine = RemoteEngine(settings(llama_server.url))
    try:
        await engine.start()
        before = metrics_counters(llama_server)
        done = (await run(engine, GenerateRequest(prompt=PROMPT, max_tokens=32)))[-1]
        after = metrics_counters(llama_server)
        assert before is not None and after is not None and after.source == "llamacpp"
        delta = after.minus(before)
        assert delta.draft_tokens == done.stats.drafted
        assert delta.accepted_tokens == done.stats.accepted
    finally:
        await engine.close()


async def test_chat_streams_with_draft_statistics(llama_server):
    engine = RemoteEngine(settings(llama_server.url))
    try:
        events = await run(engine, ChatRequest(messages=(ChatMessage("user", "Write a Python hello world."),),
                                               max_tokens=32))
        done = events[-1]
        assert sum(isinstance(e, TextDelta) for e in events) >= 2
        assert done.text and done.stats.acceptance_reported and done.stats.tokens > 0
    finally:
        await engine.close()


async def test_fim_goes_through_infill(llama_server):
    engine = RemoteEngine(settings(llama_server.url))
    try:
        req = CompletionRequest(prefix="def add(a, b):\n    return ", suffix="\n\nprint(add(1, 2))\n", max_tokens=16)
        done = (await run(engine, req))[-1]
        assert engine._infill is True  # the server has /infill for this model: it was used
        assert done.reason in ("length", "eos", "stop") and done.stats.tokens > 0
        assert done.stats.acceptance_reported
    finally:
        await engine.close()


async def test_fim_without_infill_falls_back_to_a_fim_prompt(plain_llama_server):
    """The unmodified demo model has no FIM tokens: /infill answers 501, a FIM prompt is used."""
    engine = RemoteEngine(settings(plain_llama_server.url, key=None))
    try:
        await engine.start()
        assert engine.server.drafting is False
        req = CompletionRequest(prefix="x = 1\ny = ", suffix="\n", max_tokens=8)
        done = (await run(engine, req))[-1]
        assert engine._infill is False
        assert done.reason != "error" and done.stats.tokens > 0
        # a server that drafts nothing still *reports*: acceptance None, "no drafts yet"
        assert done.stats.acceptance_reported and done.stats.drafted == 0
        assert done.stats.acceptance is None and describe_acceptance(done.stats) == "no drafts yet"
    finally:
        await engine.close()


async def test_speculation_does_not_change_greedy_output(llama_server, plain_llama_server):
    """The same weights with and without a draft model: identical greedy text."""
    texts = []
    for srv, key in ((llama_server, API_KEY), (plain_llama_server, None)):
        engine = RemoteEngine(settings(srv.url, key=key))
        try:
            texts.append((await run(engine, GenerateRequest(prompt=PROMPT, max_tokens=32)))[-1].text)
        finally:
            await engine.close()
    assert texts[0] == texts[1]


async def test_cancel_stops_generation_on_the_server(llama_server):
    engine = RemoteEngine(settings(llama_server.url))
    try:
        pieces = 0
        done = None
        async for ev in engine.stream(GenerateRequest(prompt="Once upon a time", max_tokens=600)):
            if isinstance(ev, TextDelta):
                pieces += 1
                if pieces == 3:
                    await engine.cancel()
            elif isinstance(ev, Finished):
                done = ev
        assert done.reason == "cancelled" and done.stats.tokens < 600
        # one slot (-np 1): had the server kept generating 600 tokens, this would queue behind it
        t0 = time.monotonic()
        again = (await run(engine, GenerateRequest(prompt="Hello", max_tokens=4)))[-1]
        assert again.reason == "length" and time.monotonic() - t0 < 5.0
    finally:
        await engine.close()


async def test_killed_mid_stream_then_retry_works(own_llama_server):
    srv = own_llama_server
    engine = RemoteEngine(settings(srv.url))
    try:
        pieces = 0
        done = None
        async for ev in engine.stream(GenerateRequest(prompt="Once upon a time", max_tokens=600)):
            if isinstance(ev, TextDelta):
                pieces += 1
                if pieces == 3:
                    srv.kill()
            elif isinstance(ev, Finished):
                done = ev
        assert done.reason == "error" and "lost" in done.error and done.text
        srv.start()
        again = (await run(engine, GenerateRequest(prompt="Hello", max_tokens=4)))[-1]
        assert again.reason == "length" and again.stats.acceptance_reported
    finally:
        await engine.close()


def test_cli_generate_json_carries_server_statistics(llama_server, tmp_path):
    res = run_specterm("generate", "--backend", "openai", "--url", llama_server.url, "--prompt", PROMPT,
                       "--max-tokens", "24", "--json", env={"SPECTERM_API_KEY": API_KEY}, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    obj = json.loads(res.stdout)
    stats = obj["stats"]
    assert stats["drafted"] > 0 and 0 <= stats["acceptance"] <= 1
    assert stats["tokens_per_pass"] >= 1 and obj["draft"] == "server"


def test_cli_doctor_on_llama_server(llama_server, tmp_path):
    config = tmp_path / "remote.toml"
    config.write_text(f'[engine]\nbackend = "openai"\nurl = "{llama_server.url}/v1"\napi_key_env = "GPU_BOX_KEY"\n')
    res = run_specterm("doctor", "--config", str(config), env={"GPU_BOX_KEY": API_KEY}, cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    assert "server      llama-server" in out
    assert "drafting    yes" in out
    assert "trees       linear drafts only" in out  # the server verifies its own drafts
    assert "round trip  first token" in out
    assert "$GPU_BOX_KEY set" in out
    assert str(config) in out  # which files were read
    wrong = run_specterm("doctor", "--config", str(config), env={"GPU_BOX_KEY": "bad-key-1234"}, cwd=tmp_path)
    assert wrong.returncode == 2 and "refused the API key" in wrong.stdout
    assert "reachable   yes, but it refused (HTTP 401)" in wrong.stdout
    assert "bad-key-1234" not in wrong.stdout + wrong.stderr  # the key is never printed


async def test_prewarm_fills_the_servers_prompt_cache_and_alternatives_are_refused(llama_server):
    """As llama.vim: /infill with the extra context and n_predict 0; the next request at that
    place decodes only what the cache lacks (the server's own prompt_n / cache_n)."""
    from specterm.engine import ContextFile

    engine = RemoteEngine(settings(llama_server.url))
    try:
        await engine.start()
        chunks = tuple(ContextFile(f"/p/m{i}.py", "".join(f"def f{i}_{j}(x):\n    return x * {j}\n" for j in range(30)))
                       for i in range(3))
        req = CompletionRequest(prefix="def add(a, b):\n    return ", suffix="\n", context_files=chunks,
                                max_tokens=4, path="/p/main.py")
        await engine.prewarm(req)
        done = (await run(engine, req))[-1]
        assert done.reason in ("length", "eos", "stop")
        assert 0 < done.stats.prompt_tokens_decoded < done.stats.prompt_tokens // 4
        assert not engine.info.alternatives
        refused = (await run(engine, CompletionRequest(**{**req.__dict__, "first_token_rank": 1})))[-1]
        assert refused.reason == "error" and "not available" in (refused.error or "")
    finally:
        await engine.close()
