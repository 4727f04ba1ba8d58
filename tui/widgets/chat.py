"""The chat pane: ask about the code, get a streamed Markdown answer.

Each question goes to the engine with the conversation so far and a context block (the file name
plus the selection, or the lines around the cursor) under the configured system prompt; the
engine applies the model's chat template. Answers stream through Textual's `MarkdownStream` (which
batches fragments when they arrive faster than Markdown can re-render), the log stays anchored to
the bottom, and Esc cancels. Every answer carries its own acceptance and speed line.
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


def format_answer_stats(stats: Stats, reason: str) -> str:
    tps = stats.tokens_per_second
    parts = [f"{stats.tokens} tok", f"acc {percent(stats.acceptance)}"]
    if stats.tokens_per_pass is not None:
        parts.append(f"{stats.tokens_per_pass:.2f} tok/pass")
    parts.append(f"{tps:.1f} tok/s" if tps is not None else "– tok/s")
    if reason not in ("eos", "stop"):
        parts.append(reason)
    return " · ".join(parts)


@dataclass
class Exchange:
    question: str
    answer: str = ""
    finished: bool = False


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
    def last_answer(self) -> str:
        for exchange in reversed(self.history):
            if exchange.answer:
                return exchange.answer
        return ""

    def last_code_block(self) -> str | None:
        blocks = code_blocks(self.last_answer)
        return blocks[-1] if blocks else None

    def focus_input(self) -> None:
        """Focus the question box now and once the pane is laid out (it may have just been shown,
        and a widget not yet on screen cannot take the focus)."""
        box = self.query_one("#chat-input", Input)
        box.focus()
        self.call_after_refresh(box.focus)

    def copy_last_code_block(self) -> None:
        """Copy the last answer's last code block to the clipboard (OSC 52: works over SSH)."""
        block = self.last_code_block()
        if block is None:
            self.notify("No code block in the last answer.", severity="warning", timeout=3)
            return
        self.app.copy_to_clipboard(block)
        self.notify("Code block copied.", timeout=2)

    @on(Input.Submitted, "#chat-input")
    def _submitted(self, event: Input.Submitted) -> None:
        question = event.value.strip()
        if not question:
            return
        if self.streaming:
            self.notify("An answer is still streaming; Esc stops it.", severity="warning", timeout=3)
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
        if self.engine is None:
            self.notify("The model is still loading.", severity="warning", timeout=3)
            return
        request = self.build_request(question)
        exchange = Exchange(question)
        self.history.append(exchange)
        log = self.query_one("#chat-log", VerticalScroll)
        answer = Markdown("", classes="chat-answer")
        stats_line = Static("…", classes="chat-stats")
        log.mount_all([Static(f"› {question}", classes="chat-question", markup=False), answer, stats_line])
        log.anchor()
        self.streaming = True
        self.post_message(self.Busy(True))
        self.run_worker(self._stream(request, exchange, answer, stats_line), group="chat", exit_on_error=False)

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
                        self.notify(event.error or "chat failed", title="Chat", severity="error", markup=False)
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
        finally:
            if not stopped:
                await stream.stop()
            exchange.finished = reason not in ("error", "busy")
            self.streaming = False
            self._cancel_requested = False
            self.post_message(self.Busy(False))

    async def action_cancel(self) -> None:
        if not self.streaming:
            self.post_message(self.Leave())
        elif self.engine is not None and not self._cancel_requested:
            self._cancel_requested = True
            await self.engine.cancel()

    def clear(self) -> None:
        self.history.clear()
        log = self.query_one("#chat-log", VerticalScroll)
        log.remove_children(".chat-question, .chat-answer, .chat-stats")
