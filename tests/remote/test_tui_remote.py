"""The real app on a remote backend: a real `python -m llama_cpp.server` on loopback, driven through
Textual's Pilot. The same chat pane and status bar as with the local engine; a server that dies
mid-answer is an error on screen, and the app keeps running and answers again once it is back."""

from __future__ import annotations

import asyncio
from typing import Callable

from specterm.tui.app import SpectermApp
from specterm.tui.config import load_settings
from specterm.tui.widgets.chat import ChatPane
from specterm.tui.widgets.status_bar import StatusBar

from remote_servers import API_KEY


async def wait_for(pilot, condition: Callable[[], bool], timeout: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, f"condition not met within {timeout}s"
        await pilot.pause(0.05)


def remote_app(tmp_path, monkeypatch, url: str) -> SpectermApp:
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    monkeypatch.setenv("SPECTERM_API_KEY", API_KEY)  # the config module reads the key from here
    project = tmp_path / "project"
    project.mkdir()
    (project / "hello.py").write_text("def hello():\n    print('hi')\n")
    settings = load_settings(
        project_dir=project,
        overrides={"engine.backend": "openai", "engine.url": url, "chat.max_tokens": 300,
                   "completion.time_budget_ms": 0, "completion.predict_ms": 0},
        env=env,
    )
    return SpectermApp(settings, project / "hello.py", environ=env, watch=False)


async def ask(pilot, app, question: str) -> ChatPane:
    chat = app.query_one(ChatPane)
    await pilot.press("ctrl+l")
    await pilot.press(*question)
    await pilot.press("enter")
    return chat


async def test_chat_on_a_remote_server_and_acceptance_not_reported(llama_cpp_server, tmp_path, monkeypatch):
    app = remote_app(tmp_path, monkeypatch, llama_cpp_server.url)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        assert app.engine.info.backend == "openai"
        chat = await ask(pilot, app, "Say hello.")
        await wait_for(pilot, lambda: len(chat.history) == 1 and chat.history[-1].finished and not chat.streaming)
        assert chat.history[-1].answer.strip()
        status = str(app.query_one(StatusBar).render_status())
        assert "not reported by server" in status  # never a made-up acceptance figure
        assert "draft: unknown" in status


async def test_server_killed_mid_answer_app_keeps_running_then_answers(own_llama_cpp_server, tmp_path, monkeypatch):
    srv = own_llama_cpp_server
    app = remote_app(tmp_path, monkeypatch, srv.url)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        chat = await ask(pilot, app, "Tell a long story about a lighthouse.")
        await wait_for(pilot, lambda: chat.streaming and len(chat.history[-1].answer) > 5)
        srv.kill()
        await wait_for(pilot, lambda: not chat.streaming)
        stats = str(chat.query(".chat-stats").last().render())
        assert "error" in stats and "lost" in stats
        assert not chat.history[-1].finished and chat.history[-1].answer  # partial text kept
        assert app.is_running

        srv.start()
        await ask(pilot, app, "Say hello.")
        await wait_for(pilot, lambda: len(chat.history) == 2 and not chat.streaming)
        assert chat.history[-1].finished and chat.history[-1].answer.strip()


async def test_an_unreachable_server_is_an_error_in_the_status_bar_within_ten_seconds(tmp_path, monkeypatch):
    """Never a lasting "loading the model": the engine gives up within its 10 s deadline and the
    status bar says why; nothing claims to be the demo pair."""
    from remote_servers import free_port

    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    app = remote_app(tmp_path, monkeypatch, url)
    async with app.run_test(size=(140, 40)) as pilot:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await wait_for(pilot, lambda: app.status_model.state == "error", timeout=12.0)
        assert loop.time() - t0 < 10.5
        assert "connection refused" in app.status_model.message
        status = str(app.query_one(StatusBar).render_status())
        assert "[demo]" not in status and not app.engine_ready.is_set()


async def test_the_status_bar_names_the_server_model_not_the_demo(llama_cpp_server, tmp_path, monkeypatch, demo_model):
    import os

    app = remote_app(tmp_path, monkeypatch, llama_cpp_server.url)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        status = str(app.query_one(StatusBar).render_status())
        assert "[demo]" not in status and not app.settings.demo
        assert app.engine.info.target_name == os.path.basename(demo_model)
