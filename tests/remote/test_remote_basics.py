"""RemoteEngine pieces that need no model: URL handling, FIM templates, line limits, and what an
unreachable server looks like (a real closed port on loopback, not a mock)."""

from __future__ import annotations

import time

import pytest

from specterm.engine import BackendUnavailableError, CompletionRequest, EngineError, GenerateRequest
from specterm.engine.completion import InlineStops, finish_completion
from specterm.engine.remote.engine import RemoteEngine, RemoteSettings, normalise_url
from specterm.engine.remote.templates import fill_template, fim_template_for

from remote_servers import free_port, run_specterm


@pytest.mark.parametrize(
    ("given", "root"),
    [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080"),
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"),
        ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080"),
        ("127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("https://gpu.example.com/llm/v1", "https://gpu.example.com/llm"),
        ("  http://[::1]:8000  ", "http://[::1]:8000"),
    ],
)
def test_normalise_url(given, root):
    assert normalise_url(given) == root


@pytest.mark.parametrize("bad", ["", "   ", "ftp://host/x", "http://", "http://127.0.0.1:999999",
                                 "http://127.0.0.1:65536", "http://127.0.0.1:0", "http://127.0.0.1:port",
                                 "http://127.0.0.1:-1", "http://my host:8080"])
def test_bad_urls_name_the_setting(bad):
    with pytest.raises(EngineError) as err:
        normalise_url(bad)
    assert "url" in str(err.value)


def test_fim_templates_by_family():
    assert fim_template_for("Qwen/Qwen2.5-Coder-32B-Instruct").startswith("<|fim_prefix|>")
    assert fim_template_for("codellama-7b.Q4_K_M.gguf").startswith("<PRE>")
    assert fim_template_for("deepseek-coder-6.7b-base").startswith("<｜fim▁begin｜>")
    assert fim_template_for("Codestral-22B").startswith("[SUFFIX]")
    assert fim_template_for("SmolLM2-135M-Instruct.Q4_1.gguf").startswith("<fim_prefix>")
    prompt = fill_template(fim_template_for("qwen"), "def f(", "):\n", context="# ctx\n")
    assert prompt == "# ctx\n<|fim_prefix|>def f(<|fim_suffix|>):\n<|fim_middle|>"


def test_single_line_keeps_a_leading_newline():
    """The remote engine applies engine/completion.py's rules: what a server streams is stopped
    and finished by the same InlineStops and finish_completion as the local engine's text."""
    req = CompletionRequest(prefix="def add(a, b):", multiline=False, max_lines=16)
    stops = InlineStops(req)
    assert stops("\n    return") is None
    assert stops("\n    return a + b\n    x = 1") == "stop"
    assert finish_completion("\n    return a + b\n    x = 1", req) == "\n    return a + b"


def test_line_cap_counts_the_lines_shown():
    req = CompletionRequest(prefix="", multiline=True, max_lines=2)
    assert InlineStops(req)("a\nb\nc") == "stop"
    assert finish_completion("a\nb\nc\nd", req) == "a\nb"


async def test_unreachable_server_fails_fast_with_a_clear_message():
    port = free_port()  # nothing listens there
    engine = RemoteEngine(RemoteSettings(url=f"http://127.0.0.1:{port}"))
    t0 = time.monotonic()
    with pytest.raises(BackendUnavailableError) as err:
        await engine.start()
    elapsed = time.monotonic() - t0
    assert elapsed < 10.0
    text = str(err.value)
    assert f"127.0.0.1:{port}" in text and "connection refused" in text
    assert "3 attempts" in text  # bounded retries with backoff, then give up
    assert "ssh -N -L" in text  # and what to do
    # stream() without start() connects on its own and ends the request with the same message
    events = [ev async for ev in engine.stream(GenerateRequest(prompt="x", max_tokens=2))]
    assert len(events) == 1 and events[0].reason == "error"
    assert "connection refused" in events[0].error and events[0].text == ""
    await engine.close()


async def test_set_drafter_explains_that_the_server_decides():
    from specterm.engine import DraftSettings

    engine = RemoteEngine(RemoteSettings(url="http://127.0.0.1:9"))
    with pytest.raises(EngineError) as err:
        await engine.set_drafter(DraftSettings(kind="none"))
    assert "--spec-draft-model" in str(err.value)


@pytest.mark.slow
def test_cli_unreachable_backend_exits_2_within_ten_seconds(tmp_path):
    port = free_port()
    t0 = time.monotonic()
    res = run_specterm("generate", "--backend", "openai", "--url", f"http://127.0.0.1:{port}",
                       "--prompt", "hello", cwd=tmp_path)
    assert time.monotonic() - t0 < 10.0
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "cannot reach the remote backend" in res.stderr and "Traceback" not in res.stderr
    assert res.stdout == ""


@pytest.mark.slow
def test_cli_openai_backend_without_url_names_the_key(tmp_path):
    res = run_specterm("generate", "--backend", "openai", "--prompt", "hello", cwd=tmp_path)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "[engine] url" in res.stderr and "--url" in res.stderr


@pytest.mark.slow
def test_doctor_reports_an_unreachable_server(tmp_path):
    port = free_port()
    res = run_specterm("doctor", "--backend", "openai", "--url", f"http://127.0.0.1:{port}", cwd=tmp_path)
    assert res.returncode == 2
    assert "reachable   NO" in res.stdout and "connection refused" in res.stdout
    assert "Traceback" not in res.stderr


@pytest.mark.slow
def test_cli_remote_backend_does_not_need_local_model_files(tmp_path):
    """On a laptop driving a GPU box, the [model] paths name files on the box, not here."""
    port = free_port()
    res = run_specterm("generate", "--backend", "openai", "--url", f"http://127.0.0.1:{port}",
                       "--target", str(tmp_path / "not-here.gguf"), "--prompt", "hello", cwd=tmp_path)
    assert res.returncode == 2
    assert "cannot reach the remote backend" in res.stderr and "not-here.gguf" not in res.stderr
