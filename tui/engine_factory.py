"""The one place an engine is built from the configuration: the CLI commands, the app, the bench
and doctor all call `make_engine`.

It lives in tui/ because it reads the application's `Settings` and chooses between two wings of
the engine (engine/llamacpp and engine/remote), which the engine's core may not import. Each
backend is imported only when chosen: a remote session never loads llama.cpp, a local one never
loads httpx. `[engine] backend` is checked by the config loader, so there is no third case here.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable

from .config import Settings

if TYPE_CHECKING:
    from specterm.engine.llamacpp.local import LocalEngine
    from specterm.engine.protocol import Engine
    from specterm.engine.remote.engine import RemoteEngine
    from specterm.engine.settings import EngineSettings

ProgressFn = Callable[[str, float], None]


UI_CORES = 1  # a core for the app's UI thread alone while a suggestion streams (typing, drawing) ...
UI_CORES_FROM = 4  # ... on machines with at least this many cores


def ui_spare_cores(cores: int) -> int:
    """Cores the app's engine leaves to the UI thread for one-token decoding (`[model] threads =
    0`). Why not below UI_CORES_FROM: on 2 cores a spare one cost the engine more than the UI
    uses. The UI thread needs a small share of a core while a suggestion streams; one-token
    decoding on one thread instead of two is much slower, and with one thread for single tokens
    and two for drafts the app's passes ran slower than the same passes with the UI idle (the
    second thread woke on a core the UI held). Keeping both cores, replays in the app ran closer
    to headless speed, steadier, and handled keystrokes no later (`specterm bench --replay`).
    With 4 cores or more the engine keeps all but one and the UI never waits for one."""
    return UI_CORES if cores >= UI_CORES_FROM else 0


def make_engine(settings: Settings, *, on_progress: ProgressFn | None = None, ui: bool = False) -> "Engine":
    """The engine the configuration asks for (not started). An unusable server URL raises
    EngineError here, before anything connects. `ui`: the engine runs beside the app's UI, whose
    thread then gets a core of its own on a machine with enough of them (`ui_spare_cores`)."""
    if settings.engine.backend == "openai":
        return make_remote_engine(settings)
    spare = ui_spare_cores(os.cpu_count() or 1) if ui else 0
    return make_local_engine(settings, on_progress=on_progress,
                             engine_settings=settings.engine_settings(spare_cores=spare))


def make_local_engine(
    settings: Settings, *, on_progress: ProgressFn | None = None, engine_settings: "EngineSettings | None" = None
) -> "LocalEngine":
    """The in-process llama.cpp engine; `engine_settings` replaces the configured models (the bench's
    regimes run on derived copies of the configured target)."""
    from specterm.engine.llamacpp.local import LocalEngine  # loads llama.cpp

    return LocalEngine(engine_settings or settings.engine_settings(), on_progress=on_progress)


def make_remote_engine(settings: Settings) -> "RemoteEngine":
    from specterm.engine.remote.engine import RemoteEngine  # needs httpx, never llama.cpp

    return RemoteEngine(settings.remote_settings())
