"""The chat pane: ask about the code, get a streamed Markdown answer.

Each question goes to the engine with the conversation so far and a context block (the file name
plus the selection, or the lines around the cursor) under the configured system prompt; the
engine applies the model's chat template. Answers stream through Textual's `MarkdownStream` (which
batches fragments when they arrive faster than Markdown can re-render), the log stays anchored to
the bottom, and Esc cancels. Every answer carries its own acceptance and speed line.

A question asked while the model loads waits in the log ("queued") and is sent once the engine is
ready; if loading fails it goes back into the question box. A dim line under each question names
the context that went with it. An answer stopped before its end (Esc, the length limit) is marked
as incomplete, and its code is never inserted or copied: it may be half a block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Input, Markdown, Static

from specterm.engine import ChatMessage, ChatRequest, Engine, Event, Finished, Stats, StatsUpdate, TextDelta

from .status_bar import percent

_CODE_BLOCK = re.compile(r"```[^\n`]*\n(.*?)(?:```|\Z)", re.S)

EventSink = Callable[[str, Event], None]
StatsFormatter = Callable[[Stats, str], str]


def code_blocks(markdown: str) -> list[str]:
    """Fenced code blocks of an answer, in order (an unterminated last block counts)."""
    return [m.group(1).rstrip("\n") + "\n" for m in _CODE_BLOCK.finditer(markdown) if m.group(1).strip()]


# Why an answer ended before its end, said where the answer is shown and where its code is refused.
CUT_NOTES = {
    "cancelled": "cancelled (Esc) before its end",
    "length": "cut at the length limit ([chat] max_tokens)",
    "time": "cut by the time limit",
}


def format_answer_stats(stats: Stats, reason: str) -> str:
    tps = stats.tokens_per_second
    parts = [f"{stats.tokens} tok", f"acc {percent(stats.acceptance)}"]
    if stats.tokens_per_pass is not None:
        parts.append(f"{stats.tokens_per_pass:.2f} tok/pass")
    parts.append(f"{tps:.1f} tok/s" if tps is not None else "– tok/s")
    if reason in CUT_NOTES:
        parts.insert(0, f"⚠ incomplete: {CUT_NOTES[reason]}")
    elif reason not in ("eos", "stop"):
        parts.append(reason)
    return " · ".join(parts)


def context_label(context: str) -> str:
    """What a context block is, in a few words, from its header ("File: a.py (lines 1-30, cursor at
    line 12)", then "Selected code:" for a selection): the dim line under a question."""
    header = context.split("```", 1)[0].strip()
    if not header:
        return ""
    lines = [line.strip().rstrip(":") for line in header.splitlines() if line.strip()]
    label = ", ".join(lines).removeprefix("File: ")
    if len(lines) > 1 and lines[-1] == "Selected code":
        selected = context.split("```", 2)[1].split("\n", 1)[-1].rstrip("\n")
        count = selected.count("\n") + 1
        label = f"{lines[0].removeprefix('File: ')}, the selection ({count} line{'s' if count > 1 else ''})"
    return label


@dataclass
class Exchange:
    question: str
    answer: str = ""
    finished: bool = False
    reason: str = ""  # why the answer ended (the engine's finish reason), "" while it streams
    context: str = ""  # what went along with the question, in a few words

    @property
    def cut(self) -> str:
        """Why the answer is incomplete ("" when it ended by itself)."""
        return CUT_NOTES.get(self.reason, "")


class ChatPane(Vertical):
    """Conversation log plus a question box."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel answer, or back to the editor", show=False),
    ]

    class Leave(Message):
        """Esc with no answer streaming: the user is done here (the app moves the focus back)."""

    class Busy(Message):
        """An answer started (busy=True) or ended."""

        def __init__(self, busy: bool) -> None:
            super().__init__()
            self.busy = busy

    def __init__(
        self,
        *,
        system_prompt: str,
        max_tokens: int,
        context: Callable[[], str],
        event_sink: EventSink | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.system_prompt = system_prompt
        self.max_tokens = max_tokens
        self.context = context
        self.event_sink = event_sink
        self.engine: Engine | None = None
        self.history: list[Exchange] = []
        self.streaming = False
        self.load_error: str | None = None  # why no engine will come (loading failed)
        self._queued: tuple[ChatRequest, Exchange, Markdown, Static] | None = None  # asked while loading
        self._cancel_requested = False

    def compose(self) -> ComposeResult:
        yield VerticalScroll(
            Static("Ask about the code: the file, your selection or the lines around the cursor go "
                   "along. Enter sends; Esc stops the answer, or goes back to the file.", classes="chat-hint"),
            id="chat-log",
        )
        yield Input(placeholder="Ask about this code…", id="chat-input")

    def on_mount(self) -> None:
        self.query_one("#chat-log", VerticalScroll).anchor()

    @property
    def last_answered(self) -> Exchange | None:
        for exchange in reversed(self.history):
            if exchange.answer:
                return exchange
        return None

    @property
    def last_answer(self) -> str:
        exchange = self.last_answered
        return exchange.answer if exchange is not None else ""

    def last_code_block(self) -> str | None:
        blocks = code_blocks(self.last_answer)
        return blocks[-1] if blocks else None

    def usable_code_block(self) -> tuple[str | None, str]:
        """The last answer's last code block, or None and why not (in words for a notice): an
        answer stopped before its end may hold half a block, which must not land in a file."""
        exchange = self.last_answered
        if exchange is None:
            return None, "no answer yet (ask in the chat: ctrl+l)"
        block = self.last_code_block()
        if block is None:
            return None, "the last answer has no code block"
        if exchange.cut:
            return None, f"the last answer was {exchange.cut}, so its code may be half-written; ask again"
        return block, ""

    def focus_input(self) -> None:
        """Focus the question box now and once the pane is laid out (it may have just been shown,
        and a widget not yet on screen cannot take the focus)."""
        box = self.query_one("#chat-input", Input)
        box.focus()
        self.call_after_refresh(box.focus)

    def copy_last_code_block(self) -> None:
        """Copy the last answer's last code block to the clipboard (OSC 52: works over SSH)."""
        block, why_not = self.usable_code_block()
        if block is None:
            self.notify(f"Not copied: {why_not}.", severity="warning", timeout=6)
            return
        self.app.copy_to_clipboard(block)
        self.notify("Code block copied.", timeout=2)

    @on(Input.Submitted, "#chat-input")
    def _submitted(self, event: Input.Submitted) -> None:
        question = event.value.strip()
        if not question:
            return
        if self.load_error is not None:
            self.notify(f"Not sent: the model could not be loaded ({self.load_error}). The question "
                        "stays in the box.", title="Chat", severity="error", timeout=8)
            return
        if self.streaming:
            self.notify("An answer is still streaming; Esc stops it.", severity="warning", timeout=3)
            return
        if self._queued is not None:
            self.notify("A question already waits for the model to load; this one stays in the box.",
                        severity="warning", timeout=5)
            return
        event.input.value = ""
        self.ask(question)

    def build_request(self, question: str) -> ChatRequest:
        messages = [ChatMessage("system", self.system_prompt)] if self.system_prompt else []
        for exchange in self.history:
            if exchange.finished and exchange.answer:
                messages.append(ChatMessage("user", exchange.question))
                messages.append(ChatMessage("assistant", exchange.answer))
        context = self.context()
        content = f"{context}\n\n{question}" if context else question
        messages.append(ChatMessage("user", content))
        return ChatRequest(messages=tuple(messages), max_tokens=self.max_tokens)

    def ask(self, question: str) -> None:
        """Send a question (with the context of now), or queue it while the model loads."""
        request = self.build_request(question)
        context = request.messages[-1].content.removesuffix(question).strip()
        exchange = Exchange(question, context=context_label(context))
        self.history.append(exchange)
        log = self.query_one("#chat-log", VerticalScroll)
        answer = Markdown("", classes="chat-answer")
        stats_line = Static("…", classes="chat-stats", markup=False)
        lines = [Static(f"› {question}", classes="chat-question", markup=False)]
        if exchange.context:
            lines.append(Static(f"with {exchange.context}", classes="chat-context", markup=False))
        log.mount_all([*lines, answer, stats_line])
        log.anchor()
        if self.engine is None:
            stats_line.update("queued: sent when the model has loaded")
            self._queued = (request, exchange, answer, stats_line)
            return
        self._send(request, exchange, answer, stats_line)

    def _send(self, request: ChatRequest, exchange: Exchange, answer: Markdown, stats_line: Static) -> None:
        stats_line.update("…")
        self.streaming = True
        self.post_message(self.Busy(True))
        self.run_worker(self._stream(request, exchange, answer, stats_line), group="chat", exit_on_error=False)

    def set_engine(self, engine: Engine) -> None:
        """The model has loaded: a question asked meanwhile goes now."""
        self.engine = engine
        self.load_error = None
        queued, self._queued = self._queued, None
        if queued is not None:
            self._send(*queued)

    def engine_failed(self, message: str) -> None:
        """No engine will come: a queued question goes back into the box, marked as not sent."""
        self.load_error = message
        self._unqueue(f"not sent: the model could not be loaded ({message}); the question is back in the box")

    def _unqueue(self, note: str) -> None:
        """Take back a question waiting for the model: out of the history, back into the box."""
        queued, self._queued = self._queued, None
        if queued is None:
            return
        _, exchange, _, stats_line = queued
        self.history.remove(exchange)
        stats_line.update(note)
        stats_line.add_class("-cut")
        self._give_back(exchange.question)

    def _give_back(self, question: str) -> None:
        """Put a question that got no answer back into an empty question box."""
        box = self.query_one("#chat-input", Input)
        if not box.value.strip():
            box.value = question
            box.cursor_position = len(question)

    async def _stream(self, request: ChatRequest, exchange: Exchange, answer: Markdown, stats_line: Static) -> None:
        assert self.engine is not None
        stream = Markdown.get_stream(answer)
        reason = "error"
        stopped = False
        try:
            async for event in self.engine.stream(request):
                if self.event_sink is not None:
                    self.event_sink("chat", event)
                if isinstance(event, TextDelta):
                    exchange.answer += event.text
                    await stream.write(event.text)
                elif isinstance(event, StatsUpdate):
                    stats_line.update(format_answer_stats(event.stats, "generating"))
                elif isinstance(event, Finished):
                    reason = event.reason
                    if event.reason == "error":
                        stats_line.update(f"error: {event.error}")
                        stats_line.add_class("-cut")
                        self.notify(event.error or "chat failed", title="Chat", severity="error", markup=False)
                        if not exchange.answer:  # e.g. the backend went away: ask again from the box
                            self._give_back(exchange.question)
                    elif event.reason == "busy":
                        stats_line.update("the engine is busy; ask again")
                    else:
                        if event.text and event.text != exchange.answer:
                            # Post-processed final text (e.g. trimmed stop string): show that.
                            exchange.answer = event.text
                            await stream.stop()
                            stopped = True
                            await answer.update(event.text)
                        stats_line.update(format_answer_stats(event.stats, event.reason))
                        if event.reason in CUT_NOTES:
                            stats_line.add_class("-cut")
        finally:
            if not stopped:
                await stream.stop()
            exchange.reason = reason
            exchange.finished = reason not in ("error", "busy")
            self.streaming = False
            self._cancel_requested = False
            self.post_message(self.Busy(False))

    async def action_cancel(self) -> None:
        if self._queued is not None:
            self._unqueue("not sent (Esc): the question is back in the box")
        elif not self.streaming:
            self.post_message(self.Leave())
        elif self.engine is not None and not self._cancel_requested:
            self._cancel_requested = True
            await self.engine.cancel()

    def clear(self) -> None:
        self.history.clear()
        self._queued = None
        log = self.query_one("#chat-log", VerticalScroll)
        log.remove_children(".chat-question, .chat-context, .chat-answer, .chat-stats")
