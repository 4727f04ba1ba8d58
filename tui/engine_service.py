"""The app's engine, from start to close: built from the settings (make_engine) and started in a
worker while the UI is already usable, handed to the completer and the chat, its events shown in
the status bar, its drafter switched and its session memory emptied at run time, closed on exit.
The app talks to the engine only through the `Engine` protocol.
"""

from __future__ import annotations

import gc
import sys
import threading
from typing import TYPE_CHECKING

from specterm.engine import DraftSettings, Engine, EngineError, Event, Finished
from specterm.engine.settings import DraftKind

from .config import ConfigError
from .engine_factory import make_engine

if TYPE_CHECKING:
    from .app import SpectermApp


class EngineService:
    """Owns the app's engine (None until started) and says when it is ready."""

    def __init__(self, app: "SpectermApp") -> None:
        self.app = app
        self.engine: Engine | None = None  # built from the settings once the app runs
        self.ready = threading.Event()
        self.acceptance_history: list[float] = []  # each finished request's acceptance (F9)

    def not_ready(self) -> str:
        """Why the engine cannot take a request now: still loading, or what made loading fail."""
        status = self.app.status_model
        if status.state == "error":
            return f"The model could not be loaded: {status.message}"
        return "The model is still loading."

    async def start(self) -> None:
        """Build and start the engine (in the app's worker), then hand it to whoever uses it."""
        app = self.app
        sys.setswitchinterval(0.0005)  # the engine thread gets the GIL back from the UI within 0.5 ms, not 5
        try:
            engine = self.engine = make_engine(
                app.settings, ui=True,
                on_progress=lambda message, fraction: app.status_bar.show_progress(message, fraction))
            await engine.start()
        except (EngineError, ConfigError) as err:
            app.status_model.state = "error"
            app.status_model.message = getattr(err, "message", str(err))
            app.status_bar.mark_dirty()
            app.notify(str(err), title="The model could not be loaded", severity="error", timeout=30)
            app.chat.engine_failed(app.status_model.message)
            return
        app.completer.engine = engine
        app.chat.set_engine(engine)
        app.status_model.update_info(engine.info, demo=app.settings.demo)
        app.status_model.state = "idle"
        app.status_bar.mark_dirty()
        # What is alive now (Textual, the UI, the engine's Python side) lives as long as the app.
        # A full collection walked all those objects every few seconds of typing, and the key
        # that set it off waited for it (the slowest keystrokes in a large file). Frozen, they are
        # not walked again (garbage is collected first, so none is kept; `close` thaws them).
        gc.collect()
        gc.freeze()
        self.ready.set()
        for note in engine.info.notes:
            app.notify(note, title="Session memory", timeout=10)
        await self.remember_open_files()  # files opened while the model loaded
        self._first_run_hints()

    async def remember_open_files(self) -> None:
        """Give the open files to a new session memory (the engine ignores them without one)."""
        for open_file in self.app.editor_tabs.files.values():
            await self.app.completer.remember(open_file.editor.text)

    def _first_run_hints(self) -> None:
        app = self.app
        if app.settings.demo:
            app.notify(
                "The target is the demo model (SmolLM2-135M): tiny and weak at code. "
                "For real work, `specterm pull qwen2.5-coder-7b` downloads and configures a real "
                "pair (`specterm models` lists others), or set [model] target and draft in "
                "~/.config/specterm/config.toml.",
                title="Demo model",
                timeout=12,
            )
        if not app.editor_tabs.files:
            app.notify("Pick a file in the tree (ctrl+b) to start; ctrl+p lists every action.", timeout=8)

    def event(self, kind: str, event: Event) -> None:
        """An engine event of a completion, chat or edit: into the status bar's figures."""
        app = self.app
        if isinstance(event, Finished):
            if event.stats.acceptance is not None and (event.stats.tokens or event.stats.target_passes):
                self.acceptance_history.append(event.stats.acceptance)
            if self.engine is not None:
                app.status_model.session = self.engine.session_stats()
        app.status_model.apply_event(kind, event, chat_running=app.chat.streaming)
        app.status_bar.mark_dirty()

    async def switch_draft(self, kind: DraftKind) -> None:
        """Switch the drafter at run time: "session", "lookup", "none" or "model" (the configured
        draft). The session drafter keeps the configured memory cap."""
        app = self.app
        if self.engine is None or not self.ready.is_set():
            app.notify(self.not_ready(), severity="warning")
            return
        configured = app.settings.engine_settings().draft
        if kind == "model":
            if configured.kind != "model":
                app.notify("No draft model is configured: set [model] draft to a GGUF path.",
                           severity="warning", timeout=8)
                return
            draft = configured
        else:
            draft = DraftSettings(kind=kind, session_mb=configured.session_mb,
                                  session_store=configured.session_store)
        app.status_model.message = f"switching draft to {kind}"
        try:
            await self.engine.set_drafter(draft)
        except EngineError as err:
            app.notify(str(err), title="Draft not switched", severity="error", timeout=15)
            return
        app.status_model.update_info(self.engine.info, demo=app.settings.demo)
        app.status_bar.mark_dirty()
        await self.remember_open_files()
        app.notify(f"Drafting with: {self.engine.info.draft_name}", timeout=4)

    async def forget_session(self) -> None:
        """Empty the session drafter's memory (a saved store is written empty on exit)."""
        if self.engine is None or not self.ready.is_set():
            self.app.notify(self.not_ready(), severity="warning")
            return
        await self.engine.forget_session()
        self.app.notify("The session memory is empty now.", timeout=4)

    async def close(self) -> None:
        """Close the engine (the app is unmounting)."""
        if self.engine is not None:
            try:
                await self.engine.close()
            except Exception:
                pass
        gc.unfreeze()  # what was frozen at start may be collected again once the app is gone
