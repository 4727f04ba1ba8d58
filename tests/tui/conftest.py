"""Fixtures for driving the real app with the real engine and the demo model (no fakes)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Callable

import pytest
import textual.constants

from specterm.tui.app import SpectermApp
from specterm.tui.config import load_settings

# A file whose pattern prompt lookup can draft from: the continuation repeats earlier n-grams.
REPETITIVE = (
    "def add_one(x):\n    return x + 1\n\n\n"
    "def add_two(x):\n    return x + 2\n\n\n"
    "def add_three(x):\n    return x + 3\n\n\n"
    "def add_four(x):\n"
)
CURSOR_AFTER_DEF = (12, len("def add_four(x):"))

TEST_OVERRIDES = {
    "completion.debounce_ms": 50,
    "completion.max_tokens": 12,
    "completion.max_lines": 3,
    "completion.time_budget_ms": 0,
    "completion.predict_ms": 0,
    "chat.max_tokens": 48,
    "model.ctx": 2048,
}


@pytest.fixture(autouse=True)
def truecolor_terminal(monkeypatch) -> None:
    """Apps see a truecolor terminal whatever TERM this machine has (with 16 colours the app picks
    the ANSI theme by itself); a test about colours sets textual.constants.COLOR_SYSTEM itself."""
    monkeypatch.setattr(textual.constants, "COLOR_SYSTEM", "truecolor")


@pytest.fixture
def env(tmp_path, monkeypatch) -> dict[str, str]:
    """An isolated user config folder: theme choices are persisted there, never in ~/.config."""
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("SSH_CONNECTION", raising=False)
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "adders.py").write_text(REPETITIVE)
    (root / "notes.md").write_text("# Notes\n\nNothing here yet.\n")
    return root


@pytest.fixture
def settings_for(env) -> Callable[..., object]:
    def make(root: Path, **overrides):
        values = dict(TEST_OVERRIDES)
        values.update(overrides)
        return load_settings(project_dir=root, overrides=values, env=env)

    return make


async def wait_for(pilot, condition: Callable[[], bool], timeout: float = 60.0, step: float = 0.05) -> None:
    """Let the app run until `condition()` holds; fail with a clear message after `timeout`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        await pilot.pause(step)


def make_app(settings, path, env, **kwargs) -> SpectermApp:
    """The app builds and owns a real LocalEngine on the demo model from `settings` (and closes it on
    exit), exactly as `specterm PATH` does."""
    return SpectermApp(settings, path, environ=env, watch=kwargs.pop("watch", False), **kwargs)


def user_requests(app) -> int:
    """Requests the editor made for the cursor (prefetches, asked ahead for a Tab, and
    alternatives, asked after a suggestion with another first token, not counted)."""
    return sum(not r.prefetch and not r.alternative for r in app.completer.log.records)


async def fresh_completion(app, prefix: str, suffix: str) -> str:
    """The finished text of a new request at a cursor, straight from the app's engine."""
    request = app.completer.build_request(prefix, suffix, str(app.active_editor.path))
    events = [event async for event in app.engine.stream(request)]
    return events[-1].text
