"""The find bar (ctrl+f): a one-line question box under the editor; Enter and F3 select the next
match in the active editor, wrapping at the end; Esc (routed by the app) closes it.

Case follows the query by default (smart case: a query in lower case finds any case, one with an
upper-case letter only that case); alt+c cycles smart / match case / ignore case, and the bar says
which is on and where the selection is among the matches ("2 of 5").
"""

from __future__ import annotations

import re
from typing import Callable, Literal

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Input, Static
from textual.widgets.text_area import Selection

from .editor import CodeEditor

CaseMode = Literal["smart", "match", "ignore"]
CASE_MODES: tuple[CaseMode, ...] = ("smart", "match", "ignore")
CASE_LABELS = {"smart": "smart case", "match": "match case", "ignore": "ignore case"}
CASE_KEY = "alt+c"


def location_of(text: str, index: int) -> tuple[int, int]:
    """(row, column) of the character offset `index` in `text`."""
    before = text[:index]
    return before.count("\n"), index - (before.rfind("\n") + 1)


def offset_of(text: str, location: tuple[int, int]) -> int:
    row, col = location
    index = 0
    for _ in range(row):
        index = text.index("\n", index) + 1
    return index + col


def matches_case(needle: str, mode: CaseMode) -> bool:
    """Whether a search for `needle` tells upper from lower case in `mode`."""
    if mode == "smart":
        return needle != needle.lower()
    return mode == "match"


def find_all(text: str, needle: str, mode: CaseMode) -> list[tuple[int, int]]:
    """(start, end) offsets of every match of `needle` in `text`, left to right, none overlapping."""
    if not needle:
        return []
    flags = 0 if matches_case(needle, mode) else re.IGNORECASE
    return [m.span() for m in re.finditer(re.escape(needle), text, flags)]


class FindInput(Input):
    """The query box; alt+c changes the case mode. A terminal sends alt+c as a printable "c",
    which Input would type before any binding ran, so it is caught here first."""

    async def _on_key(self, event: events.Key) -> None:
        if event.key == CASE_KEY:
            event.stop()
            event.prevent_default()
            bar = self.parent
            if isinstance(bar, FindBar):
                bar.cycle_case()
            return
        await super()._on_key(event)


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
        self.case: CaseMode = "smart"

    def compose(self) -> ComposeResult:
        yield Static("Find:")
        yield FindInput(placeholder="text (Enter: next, Esc: close)", id="find-input")
        yield Static("", id="find-count")
        yield Static(self._case_label(), id="find-case")

    @property
    def input(self) -> Input:
        return self.query_one("#find-input", Input)

    @property
    def count_text(self) -> str:
        """What the bar says about the matches: "2 of 5", "5 matches", "no matches" or ""."""
        return str(self.query_one("#find-count", Static).content)

    @property
    def case_text(self) -> str:
        return str(self.query_one("#find-case", Static).content)

    def _case_label(self) -> str:
        return f"{CASE_KEY}: {CASE_LABELS[self.case]}"

    def open(self) -> None:
        self.add_class("-open")
        self.input.focus()
        self.call_after_refresh(self.input.focus)  # again once shown: a hidden box cannot take it
        self._count()

    def close(self) -> None:
        self.remove_class("-open")
        editor = self.editor()
        if editor is not None:
            editor.focus()

    def cycle_case(self) -> None:
        """alt+c: smart case -> match case -> ignore case -> smart case."""
        self.case = CASE_MODES[(CASE_MODES.index(self.case) + 1) % len(CASE_MODES)]
        self.query_one("#find-case", Static).update(self._case_label())
        self._count()

    @on(Input.Changed, "#find-input")
    def _changed(self) -> None:
        self._count()

    @on(Input.Submitted, "#find-input")
    def _submitted(self) -> None:
        self.find_next()

    def _count(self, current: int | None = None, total: int | None = None) -> None:
        """Show how many matches there are (and which one is selected, when one is)."""
        if total is None:
            editor = self.editor()
            needle = self.input.value
            if editor is None or not needle:
                self.query_one("#find-count", Static).update("")
                return
            spans = find_all(editor.text, needle, self.case)
            total = len(spans)
        if not total:
            label = "no matches"
        elif current is None:
            label = f"{total} match" + ("" if total == 1 else "es")
        else:
            label = f"{current} of {total}"
        self.query_one("#find-count", Static).update(label)

    def find_next(self) -> None:
        editor = self.editor()
        needle = self.input.value
        if editor is None or not needle:
            return
        text = editor.text
        spans = find_all(text, needle, self.case)
        if not spans:
            self._count(total=0)
            self.notify(f"Not found: {needle}", severity="warning", timeout=2, markup=False)
            return
        after = offset_of(text, editor.selection.end)
        index = next((i for i, (start, _) in enumerate(spans) if start >= after), 0)  # wraps
        start, end = spans[index]
        editor.selection = Selection(location_of(text, start), location_of(text, end))
        editor.scroll_cursor_visible()
        self._count(index + 1, len(spans))
