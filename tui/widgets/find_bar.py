"""The find bar (ctrl+f): a one-line question box under the editor; Enter and F3 select the next
match in the active editor, wrapping at the end; Esc (routed by the app) closes it."""

from __future__ import annotations

from typing import Callable

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Input, Static
from textual.widgets.text_area import Selection

from .editor import CodeEditor


def location_of(text: str, index: int) -> tuple[int, int]:
    """(row, column) of the character offset `index` in `text`."""
    before = text[:index]
    return before.count("\n"), index - (before.rfind("\n") + 1)


def offset_of(text: str, location: tuple[int, int]) -> int:
    row, col = location
    return sum(len(line) + 1 for line in text.split("\n")[:row]) + col


class FindBar(Horizontal):
    """ctrl+f: find text in the active editor; Enter and F3 go to the next match."""

    DEFAULT_CSS = """
    FindBar { height: 1; display: none; background: $panel; }
    FindBar.-open { display: block; }
    FindBar Input { border: none; height: 1; padding: 0 1; width: 1fr; }
    FindBar Input:focus { border: none; }  /* Input:focus draws a tall border: the text had no row */
    FindBar Static { width: auto; padding: 0 1; }
    """

    def __init__(self, editor: Callable[[], CodeEditor | None], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.editor = editor  # the editor to search: the active tab's, looked up at each search

    def compose(self) -> ComposeResult:
        yield Static("Find:")
        yield Input(placeholder="text (Enter: next, Esc: close)", id="find-input")

    @property
    def input(self) -> Input:
        return self.query_one("#find-input", Input)

    def open(self) -> None:
        self.add_class("-open")
        self.input.focus()
        self.call_after_refresh(self.input.focus)  # again once shown: a hidden box cannot take it

    def close(self) -> None:
        self.remove_class("-open")
        editor = self.editor()
        if editor is not None:
            editor.focus()

    @on(Input.Submitted, "#find-input")
    def _submitted(self) -> None:
        self.find_next()

    def find_next(self) -> None:
        editor = self.editor()
        needle = self.input.value
        if editor is None or not needle:
            return
        text = editor.text
        index = text.find(needle, offset_of(text, editor.selection.end))
        if index < 0:
            index = text.find(needle)
        if index < 0:
            self.notify(f"Not found: {needle}", severity="warning", timeout=2, markup=False)
            return
        editor.selection = Selection(location_of(text, index), location_of(text, index + len(needle)))
        editor.scroll_cursor_visible()
