"""The one-line instruction box an edit starts from, with this session's earlier instructions.

It opens under the region (placed over the editor, which keeps its scroll), Enter sends, Esc
closes it, up/down recall earlier instructions as a shell's history does (the line being typed is
kept while browsing and comes back past the newest).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from textual.binding import Binding
from textual.widgets import Input


@dataclass
class InstructionHistory:
    """Instructions sent this session, oldest first (a repeat moves to the end)."""

    items: list[str] = field(default_factory=list)

    def add(self, instruction: str) -> None:
        if instruction in self.items:
            self.items.remove(instruction)
        self.items.append(instruction)


class InstructionBox(Input):
    """Input for one instruction; `on_send(text)` on Enter, `on_close()` on Esc, `on_typed(text)`
    as it changes."""

    DEFAULT_CSS = """
    InstructionBox { position: absolute; height: 3; border: tall $accent; background: $surface; }
    """
    BINDINGS = [
        Binding("up", "recall(-1)", "Earlier instruction", show=False),
        Binding("down", "recall(1)", "Later instruction", show=False),
        Binding("escape", "close", "Close", show=False),
    ]

    def __init__(self, history: InstructionHistory, on_send: Callable[[str], None],
                 on_close: Callable[[], None], *, placeholder: str,
                 on_typed: Callable[[str], None] | None = None) -> None:
        super().__init__(placeholder=placeholder, id="edit-instruction")
        self.history = history
        self.on_send = on_send
        self.on_close = on_close
        self.on_typed = on_typed
        self._at: int | None = None  # index in history while browsing
        self._typed = ""

    def action_recall(self, step: int) -> None:
        items = self.history.items
        if not items:
            return
        if self._at is None:
            if step > 0:
                return
            self._typed = self.value
            at = len(items) - 1
        else:
            at = self._at + step
        if at < 0:
            return
        if at >= len(items):
            self._at = None
            self.value = self._typed
        else:
            self._at = at
            self.value = items[at]
        self.cursor_position = len(self.value)

    def on_input_changed(self, event: Input.Changed) -> None:
        if self.on_typed is not None:
            self.on_typed(event.value)

    def action_close(self) -> None:
        self.on_close()

    async def action_submit(self) -> None:
        self.on_send(self.value.strip())
