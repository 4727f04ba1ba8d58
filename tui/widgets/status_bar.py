"""The status bar: which models run, how well drafting pays, how fast, and what the engine is doing.

Figures come from the engine's one statistics type (`Stats`). Engine events can arrive dozens of
times a second; the bar only marks itself dirty and redraws on a timer, at most `MAX_HZ` times a
second. Acceptance is shown only once something was drafted ("–" before, never a made-up 0 %).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from rich.text import Text
from textual.widgets import Static

from specterm.engine import EngineInfo, Event, Finished, Stats, StatsUpdate

from .suggestions import SuggestionLog, info_line

MAX_HZ = 4
MIN_RATE_S = 0.05  # a live tokens/s over less generation time is noise (the first token is free)


def percent(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.0f}%"


@dataclass
class StatusModel:
    """Everything the bar shows, updated by the app from engine events."""

    target: str = ""
    draft: str = ""
    demo: bool = False
    gpu: bool | None = None  # None: not known yet (loading)
    state: str = "loading"  # loading | idle | completing | chatting | editing | error
    live: Stats | None = None  # the request in progress
    last: Stats | None = None  # the last finished request
    session: Stats = field(default_factory=Stats)
    message: str = ""  # e.g. loading progress
    file_label: str = ""  # cursor position and language of the active editor
    show_stats: bool = True  # [ui] show_stats
    suggestions: SuggestionLog | None = None  # the editor's completion records
    show_info: bool = False  # the bar shows what the last suggestion cost (stats screen: i)

    def update_info(self, info: EngineInfo, *, demo: bool = False) -> None:
        self.target = info.target_name
        self.draft = info.draft_name
        self.demo = demo or info.demo
        self.gpu = info.gpu

    def apply_event(self, kind: str, event: Event, *, chat_running: bool = False) -> None:
        """Follow one engine event of a "chat" or completion request; `chat_running`: a chat
        answer is still streaming (the state a finished completion returns to)."""
        if isinstance(event, StatsUpdate):
            self.live = event.stats
        elif isinstance(event, Finished):
            self.live = None
            if event.stats.tokens or event.stats.target_passes:
                self.last = event.stats
            self.state = "chatting" if chat_running and kind != "chat" else "idle"
            return
        self.state = {"chat": "chatting", "edit": "editing"}.get(kind, "completing")


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar { height: 1; width: 1fr; background: $panel; color: $foreground; padding: 0 1; }
    """

    def __init__(self, model: StatusModel, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.model = model
        self._dirty = True
        self._info_shown = model.show_info

    def on_mount(self) -> None:
        self.set_interval(1 / MAX_HZ, self._tick)
        self._tick()

    def on_resize(self) -> None:
        self._dirty = True

    def mark_dirty(self) -> None:
        self._dirty = True

    def toggle_info(self) -> None:
        """Show what the last suggestion cost instead of the figures, or the figures again."""
        self.model.show_info = not self.model.show_info
        self._dirty = True

    def show_progress(self, message: str, fraction: float) -> None:
        """Loading progress; callable from any thread (the engine loads on its own)."""
        def show() -> None:
            self.model.message = f"{message} ({fraction:.0%})"
            self._dirty = True

        if threading.current_thread() is threading.main_thread():
            show()
        else:
            try:
                self.app.call_from_thread(show)
            except RuntimeError:
                pass  # the app is shutting down

    def _tick(self) -> None:
        if self._dirty or self._info_shown != self.model.show_info:  # (toggled elsewhere: F9, i)
            self._dirty = False
            self._info_shown = self.model.show_info
            # One row of fixed size: a new text never needs a layout pass (Static.update asks for
            # one by default, which re-arranges and repaints the whole screen four times a second).
            self.update(self.render_status(), layout=False)

    @staticmethod
    def figure(name: str, stats: Stats | None) -> float | None:
        return None if stats is None else getattr(stats, name)

    def render_status(self) -> Text:
        """One line: model names (shortened first when space is short), then the figures."""
        m = self.model
        width = max(20, (self.size.width or 120) - 2)
        t = Text(no_wrap=True, overflow="ellipsis")
        if m.state in ("loading", "error") and not m.target:
            t.append("loading… " if m.state == "loading" else "error: ", "bold")
            t.append(m.message or "starting the engine")
            return t
        if m.show_info and m.suggestions is not None:
            t.append("last suggestion: ", "bold")
            t.append(info_line(m.suggestions.last_shown()))
            return t
        current = m.live or m.last
        acc_last = percent(self.figure("acceptance", current))
        acc_session = percent(self.figure("acceptance", m.session))
        tpp = self.figure("tokens_per_pass", current)
        tps = self.figure("tokens_per_second", current)
        if current is m.live and current is not None and current.generation_time_s < MIN_RATE_S:
            tps = None
        if m.draft in ("server", "unknown"):  # a remote backend (engine/remote/engine.py) drafts on its own
            draft = f"draft: {m.draft}"
        elif m.draft == "none":
            draft = "draft none"
        elif current is not None and not self.figure("drafting", current):
            draft = "drafting off"
        elif current is not None:
            draft = f"draft {int(self.figure('draft_length', current) or 0)}/{current.draft_max}"
        else:
            draft = "draft –"
        acc = f"acc {acc_last} · {acc_session} this session"
        if current is not None and not current.acceptance_reported:
            acc = "acceptance: not reported by server"  # never a made-up figure
        state = "GPU" if m.gpu else "CPU"
        if not m.show_stats:  # [ui] show_stats = false: names and state only
            figures_off = f" │ {m.state} │ {state}"
            t.append(f"{_short(m.target)} + {_short(m.draft)}", "bold")
            if m.demo:
                t.append(" [demo]", "reverse")
            t.append(figures_off)
            return t
        if width >= 100:
            figures = [
                acc,
                f"{tpp:.2f} tok/pass" if tpp is not None else "– tok/pass",
                f"{tps:.1f} tok/s" if tps is not None else "– tok/s",
                draft, m.state, state,
            ]
            share = getattr(m.session, "drafter_share", None) or {}
            if len(share) > 1:  # a hybrid: which drafter produced the accepted tokens
                figures.insert(1, " ".join(f"{k} {v:.0%}" for k, v in share.items()))
        else:  # 80 columns: the same figures, abbreviated
            figures = [
                f"acc {acc_last}/{acc_session}" if acc.startswith("acc ") else "acc n/a",
                f"{tpp:.1f}/pass" if tpp is not None else "–/pass",
                f"{tps:.0f} t/s" if tps is not None else "– t/s",
                _abbreviate_draft(draft), m.state, state,
            ]
        tail = (" │ " if width >= 100 else " ") + (" │ " if width >= 100 else " ").join(figures)
        if m.file_label and len(tail) + len(m.file_label) + 30 < width:
            tail += f" │ {m.file_label}"
        target = _short(m.target)
        draft_name = _short(m.draft)
        demo = " [demo]" if m.demo else ""
        room = width - len(tail) - len(demo)
        names = f"{target} + {draft_name}"
        if len(names) > room:
            names = _squeeze(target, max(6, room - len(draft_name) - 3)) + f" + {draft_name}"
            if len(names) > room:
                names = _squeeze(names, max(6, room))
        t.append(names, "bold")
        if demo:
            t.append(demo, "reverse")
        t.append(tail)
        return t


def _abbreviate_draft(draft: str) -> str:
    if draft == "drafting off":
        return "draft off"
    if draft == "draft none":
        return "no draft"
    return draft.replace("draft ", "d")


def _short(name: str) -> str:
    """Model file names without the .gguf suffix."""
    return name[:-5] if name.lower().endswith(".gguf") else name


def _squeeze(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"
