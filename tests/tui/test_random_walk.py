"""A scripted random walk through the real app (issues 16 and 33): keys, mouse clicks, resizes, tab
switches, pane toggles, saves, dialogs, draft switches, theme switches, attempts to quit, and files
edited, deleted, recreated with other content, renamed, chmod-ed and replaced by a folder on disk
behind the app's back (real watchfiles events), with a fixed seed.

After every event: no exception, the focus is somewhere, and the text of every open buffer equals a
model of the edits (a printable key inserts exactly that character at the cursor, over the
selection; Backspace, Delete, Enter and Tab change only what they should; everything else leaves the
text alone). Every few events and at the end: every file on disk holds exactly the bytes the walk
wrote there itself or the user saved, in the encoding the file had (a Latin-1 file stays Latin-1
until the user agrees to UTF-8) — nothing the user did not save.

The model also knows what the app last loaded or saved of each file: a save over another version
(written by "another program" since, "Keep my edits" answered or not) must ask first; a save that
cannot happen (a folder where the file was, a "€" in a Latin-1 file) keeps the buffer unsaved, the
disk as it was, and says so; ctrl+q with any buffer not on disk as it reads (edits, or its file
deleted) must ask. A theme switch (the palette's "Theme: X", every shipped theme) keeps the app
running and every buffer's text, and saves a theme that loads.

Completions are off in the first walk (`completion.auto = false`, no ctrl+space): the demo model
loads and then idles, so the walk measures the editor, not the model. A second, shorter walk turns
them on and pauses after typing so suggestions show: Tab, End and ctrl+right after typing may accept
(a part of) the suggestion shown, but right after a pure cursor move (no typing since) End and
ctrl+right only move the cursor and Tab only indents. Engine "restarts" are draft switches
(`switch_draft` none/lookup: the engine's worker swaps its drafter); a full reload of the model is
not part of the walk (seconds per event on CI's two cores). SPECTERM_WALK_EVENTS sets the length
(default 5000), SPECTERM_WALK_SUGGESTION_EVENTS the second walk's (default a tenth of that).
"""

from __future__ import annotations

import asyncio
import os
import random
import string
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from textual import events
from textual.geometry import Offset, Size
from textual.keys import _character_to_key

from specterm.tui.screens.choice import ChoiceScreen
from specterm.tui.textfile import decode, read_text
from specterm.tui.themes import builtin_theme_dir
from specterm.tui.theming import stylesheet_problem
from specterm.tui.widgets.editor_tabs import OpenFile
from specterm.tui.widgets.indentation import dedent_to

from .conftest import make_app, wait_for

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

EVENTS = int(os.environ.get("SPECTERM_WALK_EVENTS", "5000"))
SUGGESTION_EVENTS = int(os.environ.get("SPECTERM_WALK_SUGGESTION_EVENTS", str(max(1, EVENTS // 10))))
DISK_TIMEOUT = 30.0  # watch events on a busy two-core box can take seconds
CHARS = string.ascii_letters + string.digits + " ()[]{}:;.,=+-*/#'\"<>_!?"
ODD_CHARS = "€é→"  # beyond ASCII: "é" fits a Latin-1 file, "€" and "→" do not
ACCEPT_MOVES = ("end", "ctrl+right")  # accept keys that are moves without a suggestion
SUGGESTION_WAIT = 8.0  # seconds a pause after typing waits for a suggestion (the model shares two cores)
SNIPPETS = ["def add_", "return x", "x = ", "for i in ", "if x", "print(", "# "]  # typed where suggestions come
MOVES = ["up", "down", "left", "right", "home", "end", "ctrl+home", "ctrl+end", "pageup", "pagedown",
         "ctrl+left", "ctrl+right", "shift+left", "shift+right", "shift+up", "shift+down", "shift+end"]
SIZES = [(120, 40), (80, 24), (150, 45), (100, 30), (60, 20)]
LATIN = "latin.py"  # a Latin-1 file: saving a character Latin-1 has no byte for must ask first
FILES = {
    "main.py": b"def main(x):\n    if x:\n        return 1\n    return 2\n",
    "notes.md": b"# Notes\n\nSome text.\n",
    "util.py": b"import os\n\n\ndef f():\n    pass\n",
    LATIN: "# café\nname = 'crème'\n".encode("latin-1"),
}


class Folder:
    """The disk model's mark for a folder put where a file was."""

    def __repr__(self) -> str:
        return "<a folder>"


FOLDER = Folder()


def text_of(data: bytes) -> str:
    """The text the app shows for a file's bytes (tui/textfile.py reads every file)."""
    return read_text(data, "walk")[0]


def offset(text: str, location: tuple[int, int]) -> int:
    row, col = location
    lines = text.split("\n")
    return sum(len(line) + 1 for line in lines[:row]) + col


def handling(pump) -> bool:
    """Whether `pump` has a message waiting or is still handling one. An empty queue is not enough:
    a handler that awaits a thread (DirectoryTree's Enter checks is_dir in one) has taken its
    message off the queue, and only a pump waiting for its next message is done."""
    queue = pump._message_queue
    if queue.values or pump._pending_message is not None:
        return True
    return pump._running and not pump._closed and not queue.ready_event._waiters


@dataclass
class Snapshot:
    """What the walk knows before an event: each open buffer's text, and the active one's cursor."""

    texts: dict[str, str]
    active: OpenFile | None
    focused_editor: bool
    focus: str = ""  # who had the focus, for failure messages
    start: int = 0
    end: int = 0
    ghost: str = ""  # the suggestion shown in the active editor
    typed: bool = False  # the active editor was typed in, and its cursor not moved since

    @classmethod
    def take(cls, app) -> "Snapshot":
        texts = {pane: f.editor.text for pane, f in app.editor_tabs.files.items()}
        active = app.active_file
        focused = active is not None and app.focused is active.editor and not isinstance(app.screen, ChoiceScreen)
        snap = cls(texts, active, focused, f"{app.focused!r} on {app.screen!r}")
        if active is not None:
            a, b = sorted(active.editor.selection)
            snap.start, snap.end = offset(active.editor.text, a), offset(active.editor.text, b)
            snap.ghost = active.editor.ghost_text
        return snap


def accepted(before: Snapshot, text: str, after: str) -> bool:
    """Whether `after` is `text` with (a part of) the suggestion accepted at the cursor: an insertion
    there and nothing else, the start of the suggestion shown (or of one that came meanwhile)."""
    if before.start != before.end or len(after) <= len(text):
        return False
    head, tail = text[: before.start], text[before.start:]
    if not (after.startswith(head) and after.endswith(tail)):
        return False
    inserted = after[len(head): len(after) - len(tail)]
    ghost = before.ghost
    assert not ghost or ghost.startswith(inserted) or inserted.startswith(ghost), (
        f"accepted {inserted!r}, which is not the suggestion shown ({ghost!r})")
    return True


def backspace_to(before: Snapshot, text: str) -> int:
    """Where Backspace at `before.start` (no selection) deletes back to: one character, or in the
    leading spaces of a line one level of the file's indentation (tui/widgets/indentation.py)."""
    at = before.start
    line_start = text.rfind("\n", 0, at) + 1
    editor = before.active.editor
    if at > line_start and editor.indent_type == "spaces" and not text[line_start:at].strip(" "):
        return line_start + dedent_to(at - line_start, editor.indent_width)
    return max(0, at - 1)


@dataclass
class Walk:
    app: object
    pilot: object
    rng: random.Random
    root: Path
    disk: dict[Path, bytes | Folder | None] = field(default_factory=dict)  # what must be on disk (None: absent)
    auto: bool = False  # suggestions on: the walk pauses after typing for them to show
    seen: dict[Path, bytes | None] = field(default_factory=dict)  # what the app last loaded or saved
    encoding: dict[Path, str] = field(default_factory=dict)  # what the app writes each file in
    typed: dict[str, tuple] = field(default_factory=dict)  # pane -> (selection, text) after typing there
    read_only: set[Path] = field(default_factory=set)  # files chmod-ed 0o444: a save asks first
    themes_checked: set[str] = field(default_factory=set)
    counts: dict[str, int] = field(default_factory=dict)
    history: list[str] = field(default_factory=list)  # the events so far, for failure messages

    def count(self, what: str) -> None:
        self.counts[what.split(" ")[0]] = self.counts.get(what.split(" ")[0], 0) + 1
        self.history.append(what)

    def loaded(self, path: Path, data: bytes | None) -> None:
        """The app read `data` from `path` (opened or reloaded it): what it saw, and its encoding."""
        self.seen[path] = data
        if data is not None:
            self.encoding[path] = decode(data)[1]

    def encoded(self, path: Path, text: str, encoding: str | None = None) -> bytes | None:
        """`text` as a save writes it (None when the file's encoding cannot hold it)."""
        try:
            return text.encode(encoding or self.encoding.get(path, "utf-8"))
        except UnicodeEncodeError:
            return None

    def typed_since(self, open_file: OpenFile | None) -> bool:
        """Typed in that editor, and neither the cursor nor the text changed otherwise since."""
        if open_file is None:
            return False
        editor = open_file.editor
        return self.typed.get(open_file.pane_id) == (editor.selection, editor.text)

    def unsaved(self) -> list[str]:
        """Open buffers whose text is not on disk as it reads there (edits, or the file gone)."""
        names = []
        for open_file in self.app.editor_tabs.files.values():
            data = self.disk.get(open_file.file.path)
            if not isinstance(data, bytes) or text_of(data) != open_file.editor.text:
                names.append(open_file.file.path.name)
        return names

    def new_notices(self, before: set[int], title: str) -> list[str]:
        return [n.message for n in self.app._notifications if id(n) not in before and n.title == title]

    def file_named(self, question: str) -> Path:
        return next(p for p in self.disk if question.startswith(f"{p.name} "))

    # -- checks -----------------------------------------------------------------------------------

    def check_text(self, kind: str, key: str, before: Snapshot) -> None:
        app = self.app
        for pane, text in before.texts.items():
            open_file = app.editor_tabs.files.get(pane)
            if open_file is None:
                continue  # closed by this event
            after = open_file.editor.text
            if before.active is None or pane != before.active.pane_id or not before.focused_editor:
                assert after == text, (
                    f"{kind} {key!r}: a buffer the key did not go to changed ({pane}; active "
                    f"{before.active and before.active.pane_id}, focus was {before.focus}, is {app.focused!r})")
                continue
            head, tail = text[: before.start], text[before.end:]
            if kind == "char":
                assert after == head + key + tail, (
                    f"keystroke {key!r} lost or misplaced: before {text!r} cursor {before.start}-{before.end}, "
                    f"after {after!r}, cursor now {before.active.editor.selection}")
            elif kind == "backspace":
                expected = head + tail if before.start != before.end else text[: backspace_to(before, text)] + tail
                assert after == expected, ("Backspace did not delete exactly one character, one level of "
                                           "leading spaces or the selection")
            elif kind == "delete":
                expected = head + tail if before.start != before.end else head + text[before.end + 1:]
                assert after == expected, "Delete did not delete exactly one character or the selection"
            elif kind == "tab" and before.typed and accepted(before, text, after):
                pass  # a suggestion after typing, accepted
            elif kind in ("enter", "tab"):
                assert after.startswith(head) and after.endswith(tail), f"{key} changed text around the cursor"
                middle = after[len(head): len(after) - len(tail)]
                assert middle.strip(" \t") in (("\n",) if kind == "enter" else ("",)), (
                    f"{key} inserted {middle!r}" + ("" if before.typed else " (after a pure cursor move)"))
            elif kind == "move" and key in ACCEPT_MOVES and after != text:
                assert before.typed, (
                    f"{key} right after a pure cursor move changed the text: before {text!r} cursor "
                    f"{before.start}, after {after!r} (suggestion shown {before.ghost!r})")
                assert accepted(before, text, after), f"{key} changed the text other than by accepting"
            else:
                assert after == text, f"{kind} {key!r} changed the text"

    def check_disk(self) -> None:
        for path, expected in self.disk.items():
            actual = path.read_bytes() if path.is_file() else FOLDER if path.is_dir() else None
            assert actual == expected, (
                f"{path.name} on disk is not what the walk or the user wrote: {actual!r}, expected {expected!r}")
        strays = [p.name for p in self.root.iterdir() if p not in self.disk]
        assert not strays, f"files nobody wrote: {strays}"

    async def press(self, *keys: str) -> None:
        """Pilot.press without its two waits for an idle CPU (>= 40 ms a key, minutes over a walk):
        the key goes through the driver exactly as Pilot sends it, then the walk waits until the
        screen and its widgets have processed every pending message."""
        for key in keys:
            name = _character_to_key(key) if len(key) == 1 and not key.isalnum() else key
            event = events.Key(name, key if len(key) == 1 else None)
            event.set_sender(self.app)
            await self.app._post_message(event)  # what the driver schedules, without a loop hop
            await self.settle()

    async def fast_click(self, widget, x: int, y: int) -> None:
        """Pilot.click's events (down, up, click at widget offset x, y), without its idle waits."""
        at = widget.region.offset + Offset(x, y)
        arguments = dict(widget=widget, x=at.x, y=at.y, delta_x=0, delta_y=0, button=1, shift=False,
                         meta=False, ctrl=False, screen_x=at.x, screen_y=at.y)
        for event_type in (events.MouseDown, events.MouseUp, events.Click):
            event = event_type(**arguments, **({"chain": 1} if event_type is events.Click else {}))
            self.app.mouse_position = at
            self.app.screen._forward_event(event)
            await self.settle()

    async def fast_resize(self, width: int, height: int) -> None:
        """Pilot.resize_terminal without its idle wait."""
        size = Size(width, height)
        self.app._driver._size = size
        self.app.post_message(events.Resize(size, size))
        await asyncio.sleep(0.03)  # the app applies a resize on a 1/120 s timer
        await self.settle()
        self.app.screen._on_timer_update()  # lay the screen out for the new size, as Pilot does

    async def settle(self) -> None:
        """Until no message is waiting or being handled anywhere: a key hops from the app to the
        focused widget and bubbles back up to the bindings, each hop a message of its own. (Pilot's
        wait posts a callback to every widget, ~70 here, each time: too dear for thousands of
        events.)"""
        quiet = 0
        pumps = [self.app, *self.app.screen.walk_children(with_self=True)]
        for turn in range(1000):
            await asyncio.sleep(0)
            if turn % 20 == 19:  # widgets mounted meanwhile (a new tab) join the watch
                pumps = [self.app, *self.app.screen.walk_children(with_self=True)]
            busy = any(handling(pump) for pump in pumps)
            if not busy and self.app.screen._callbacks:
                # call_after_refresh work (a focus moved once a tab is shown) waits for a repaint:
                # paint now, as the screen's timer would, so a key never races it
                self.app.screen._on_timer_update()
                busy = True
            quiet = 0 if busy else quiet + 1
            if quiet >= 3:
                return
        await self.pilot._wait_for_screen()

    # -- events -----------------------------------------------------------------------------------

    async def step(self) -> None:
        app, rng = self.app, self.rng
        if isinstance(app.screen, ChoiceScreen):
            await self.answer_dialog()
            return
        if self.auto:
            extra = rng.random()
            if extra < 0.06:
                await self.type_at_line_end()
                return
            if extra < 0.09:
                await self.pause_for_suggestion()
                return
            if extra < 0.12:
                await self.move_then_accept_key()
                return
        before = Snapshot.take(app)
        before.typed = self.typed_since(before.active)
        roll = rng.random()
        if roll < 0.40:
            kind, key = "char", rng.choice(CHARS) if rng.random() < 0.97 else rng.choice(ODD_CHARS)
        elif roll < 0.62:
            kind, key = "move", rng.choice(MOVES)
        elif roll < 0.67:
            kind, key = "backspace", "backspace"
        elif roll < 0.70:
            kind, key = "delete", "delete"
        elif roll < 0.74:
            kind, key = "enter", "enter"
        elif roll < 0.75:
            kind, key = "tab", "tab"
        elif roll < 0.78:
            kind, key = "escape", "escape"
        elif roll < 0.81:
            await self.click(before)
            return
        elif roll < 0.82:
            await self.resize()
            return
        elif roll < 0.845:
            await self.save()
            return
        elif roll < 0.855:
            kind, key = "toggle", rng.choice(["ctrl+b", "ctrl+t", "ctrl+t", "ctrl+b"])
        elif roll < 0.865:
            kind, key = "tab-switch", rng.choice(["ctrl+pagedown", "ctrl+pageup"])
        elif roll < 0.87:
            await self.open_another()
            return
        elif roll < 0.874:
            await self.switch_theme(before)
            return
        elif roll < 0.878:
            await self.try_quit()
            return
        elif roll < 0.975:
            kind, key = "move", rng.choice(MOVES)
        elif roll < 0.978:
            await self.switch_draft()
            return
        else:
            await self.disk_event()
            return
        self.count(f"{kind} {key}" + (f" typed-since {before.typed} ghost {before.ghost!r}" if self.auto else ""))
        await self.press(key)
        self.check_text(kind, key, before)
        for pane, open_file in self.app.editor_tabs.files.items():
            if pane not in before.texts:  # Enter on a file in the tree opened it: read from disk now
                self.loaded(open_file.file.path, self.disk.get(open_file.file.path))
        self.track_typing(kind, before)
        if kind == "escape" and before.focused_editor:
            assert app.focused is before.active.editor, "Esc took the focus away from the editor"
        if kind == "toggle" and key == "ctrl+t" and app.chat.display and not isinstance(app.screen, ChoiceScreen):
            assert app.focused is app.chat.query_one("#chat-input"), "ctrl+t left the focus elsewhere"

    def track_typing(self, kind: str, before: Snapshot) -> None:
        """Remember where typing (or accepting) left the active editor; forget it on a pure move."""
        active = before.active
        if active is None or not before.focused_editor or active.pane_id not in self.app.editor_tabs.files:
            return
        editor = active.editor
        if editor.text != before.texts[active.pane_id]:
            self.typed[active.pane_id] = (editor.selection, editor.text)
            if kind in ("move", "tab") and before.typed and before.ghost:
                self.counts["accepted"] = self.counts.get("accepted", 0) + 1
        else:
            a, b = sorted(editor.selection)
            if (offset(editor.text, a), offset(editor.text, b)) != (before.start, before.end):
                self.typed.pop(active.pane_id, None)

    async def type_at_line_end(self) -> None:
        """End, Enter and a line's start typed key by key (each checked as a keystroke), then a
        pause: where suggestions come (at a line's end, after typing)."""
        self.count("type-line")
        for key in ["end", "enter", *self.rng.choice(SNIPPETS)]:
            before = Snapshot.take(self.app)
            before.typed = self.typed_since(before.active)
            kind = "move" if key == "end" else "enter" if key == "enter" else "char"
            self.history[-1] += f" {key}"
            await self.press(key)
            self.check_text(kind, key, before)
            self.track_typing(kind, before)
            if isinstance(self.app.screen, ChoiceScreen) or not before.focused_editor:
                return
        await self.pause_for_suggestion(count=False, limit=SUGGESTION_WAIT)
        if self.app.active_file is not None and self.rng.random() < 0.5:
            await self.move_then_accept_key(count=False)

    async def pause_for_suggestion(self, count: bool = True, limit: float = 1.0) -> None:
        """A pause after typing, as a person's: long enough for a suggestion to show."""
        if count:
            self.count("pause")
        editor = self.app.active_editor
        if editor is None or self.app.focused is not editor:
            return
        loop = asyncio.get_running_loop()
        start = loop.time()
        while (not editor.ghost_text and not isinstance(self.app.screen, ChoiceScreen)
               and loop.time() < start + limit and (editor.completion_pending or loop.time() < start + 0.5)):
            await self.pilot.pause(0.05)
        await self.settle()
        if editor.ghost_text:
            self.history[-1] += f" shown {editor.ghost_text!r}"
            self.counts["suggestion-shown"] = self.counts.get("suggestion-shown", 0) + 1

    async def move_then_accept_key(self, count: bool = True) -> None:
        """A suggestion shows, the user moves the cursor (and pauses, or not), then presses End or
        ctrl+right: a move, never an insertion (issue 33 item 5)."""
        if count:
            self.count("move-accept")
        active = self.app.active_file
        if active is None or self.app.focused is not active.editor or not active.editor.ghost_text:
            return
        # (up, down and ctrl+end often land at a line's end: where a suggestion would show)
        for key in (self.rng.choice(["left", "right", "up", "down", "up", "down", "ctrl+end", "home", "ctrl+left"]),
                    self.rng.choice(ACCEPT_MOVES)):
            before = Snapshot.take(self.app)
            before.typed = self.typed_since(before.active)
            self.history[-1] += f" {key} (typed-since {before.typed}, ghost {before.ghost!r})"
            await self.press(key)
            self.check_text("move", key, before)
            self.track_typing("move", before)
            if isinstance(self.app.screen, ChoiceScreen) or self.app.focused is not active.editor:
                return
            if key not in ACCEPT_MOVES and self.rng.random() < 0.5:
                await self.pause_for_suggestion(count=False, limit=SUGGESTION_WAIT)  # none may come now
        self.counts["moved-then-accept-key"] = self.counts.get("moved-then-accept-key", 0) + 1

    async def click(self, before: Snapshot) -> None:
        self.count("click")
        editor = self.app.active_editor
        if editor is None or not editor.region.area:
            return
        self.app.screen._on_timer_update()  # the screen as the user sees it (Pilot does this too)
        await self.settle()  # and what runs after that refresh, as before a human's click
        x = self.rng.randrange(0, max(1, editor.region.width))
        y = self.rng.randrange(0, max(1, editor.region.height))
        screen = self.app.screen
        hit, _ = screen.get_widget_at(editor.region.x + x, editor.region.y + y)
        await self.fast_click(editor, x, y)
        self.check_text("click", f"{x},{y}", before)
        self.track_typing("click", before)
        # not a notice drawn over it, nor a dialog (a change on disk) that came up during the click
        if hit is editor and self.app.screen is screen:
            assert self.app.focused is editor, "a click into the editor did not focus it"

    async def resize(self) -> None:
        size = self.rng.choice(SIZES)
        self.count(f"resize {size} from {self.app.size} focus {self.app.focused!r}")
        await self.fast_resize(*size)

    def saving(self) -> bool:
        return any(w.group == "save" and not w.is_finished for w in self.app.workers)

    def asking(self) -> bool:
        return isinstance(self.app.screen, ChoiceScreen) and self.app.focused is not None

    async def save(self) -> None:
        """ctrl+s. It must ask where it would write over a version the app has not shown (another
        program's, "Keep my edits" answered or not) or in an encoding that cannot hold the text;
        where a folder stands in the file's place it must write nothing, keep the buffer unsaved
        and say why."""
        self.count("save")
        open_file = self.app.active_file
        if open_file is None or self.app.focused is not open_file.editor:
            return
        path = open_file.file.path
        text = open_file.editor.text
        on_disk = self.disk.get(path)
        must_ask = isinstance(on_disk, bytes) and on_disk != self.seen.get(path)
        read_only = isinstance(on_disk, bytes) and path in self.read_only
        data = self.encoded(path, text)
        notices = {id(n) for n in self.app._notifications}
        self.history[-1] += (f" {path.name} dirty {open_file.dirty} deleted {open_file.deleted} disk "
                             f"{'folder' if on_disk is FOLDER else 'absent' if on_disk is None else 'file'} "
                             f"must-ask {must_ask} read-only {read_only} encodable {data is not None}")
        await self.press("ctrl+s")
        # until the save is done or asks: a buffer equal to its saved text may still be asked
        # about ("changed on disk ... Overwrite?") once the save worker has read the disk
        await wait_for(self.pilot, lambda: self.asking() or not self.saving(), timeout=10)
        if isinstance(self.app.screen, ChoiceScreen):
            question = self.app.screen.question
            if must_ask or read_only:
                assert "Overwrite" in question and ("changed on disk" in question) >= must_ask, (
                    f"{path.name}: a save over another program's version or a read-only file asked {question!r}")
            elif data is None:
                assert "UTF-8" in question, f"{path.name}: a save its encoding cannot hold asked {question!r}"
            else:
                self.counts["asked-without-need"] = self.counts.get("asked-without-need", 0) + 1
            return
        assert not must_ask, (f"{path.name}: ctrl+s wrote over what another program put there since the app "
                              "last loaded or saved it, without asking")
        assert not read_only, f"{path.name}: ctrl+s wrote over a read-only file without asking"
        if on_disk is FOLDER:
            assert open_file.editor.text == text and open_file.unsaved, \
                f"{path.name}: a save into a folder's place left the buffer marked saved"
            await wait_for(self.pilot, lambda: self.new_notices(notices, "Not saved"), timeout=10)
            self.check_disk()
            return
        assert data is not None, f"{path.name}: saved text its encoding cannot hold without asking"
        assert not open_file.unsaved, f"{path.name}: saved, but the buffer still reads unsaved"
        self.disk[path] = data
        self.seen[path] = data
        self.check_disk()

    async def answer_dialog(self) -> None:
        """Enter (the focused answer), Esc (the last), or Tab then Enter (the next one); the quit
        dialog always Esc (Cancel): the walk goes on."""
        self.count("dialog")
        screen = self.app.screen
        question = screen.question
        ids = [a for a, _ in screen.answers]
        focused = self.app.focused.id.removeprefix("answer-") if self.app.focused is not None else ids[-1]
        how = "escape" if question.startswith("Unsaved changes") else self.rng.choice(["enter", "escape", "tab"])
        if how == "enter":
            answer = focused
            await self.press("enter")
        elif how == "escape":
            answer = ids[-1]
            await self.press("escape")
        else:
            answer = ids[(ids.index(focused) + 1) % len(ids)]
            await self.press("tab", "enter")
        self.history[-1] += f" {question[:70]!r} -> {answer}"
        await wait_for(self.pilot, lambda: self.app.screen is not screen, timeout=10)
        if answer in ("overwrite", "utf-8"):
            path = self.file_named(question)
            open_file = self.app.editor_tabs.find_open(path)
            encoding = "utf-8" if answer == "utf-8" else None
            data = self.encoded(path, open_file.editor.text, encoding)
            await wait_for(self.pilot, lambda: self.asking() or not self.saving(), timeout=10)
            if not isinstance(self.app.screen, ChoiceScreen):
                assert data is not None, f"{path.name}: saved text its encoding cannot hold without asking"
                self.disk[path] = data
                self.seen[path] = data
                if encoding:
                    self.encoding[path] = encoding
        elif "unsaved edits" in question and answer == "reload":
            path = self.file_named(question)
            data = self.disk[path]
            await wait_for(self.pilot, lambda: self.app.editor_tabs.find_open(path).editor.text == text_of(data),
                           timeout=10)
            self.loaded(path, data)
        self.check_disk()

    async def open_another(self) -> None:
        self.count("open")
        present = [p for p, data in self.disk.items() if isinstance(data, bytes)]
        if present and len(self.app.editor_tabs.files) < 4:
            path = self.rng.choice(present)
            if self.app.editor_tabs.find_open(path) is None:
                self.loaded(path, self.disk[path])
            await self.app.open_file(path)
            await self.pilot.pause()

    async def switch_draft(self) -> None:
        self.count("draft")
        if self.app.engine_ready.is_set():
            await self.app.action_switch_draft(self.rng.choice(["none", "lookup"]))

    async def switch_theme(self, before: Snapshot) -> None:
        """The palette's "Theme: X" for a shipped theme, with whatever buffers are dirty: the app
        goes on with every buffer's text, X applied, and X saved as a theme that loads."""
        app = self.app
        shipped = builtin_theme_dir().resolve()
        names = sorted(n for n, t in app.themes.items()
                       if t.source is not None and t.source.parent.resolve() == shipped)
        name = self.rng.choice(names)
        dirty = [f.file.path.name for f in app.editor_tabs.files.values() if f.unsaved]
        self.count(f"theme {name} unsaved {dirty}")
        switch = next(run for title, _, run in app.theming.choices() if title == f"Theme: {name}")
        switch()
        await self.settle()
        assert app.is_running, f"switching to the theme {name} stopped the app"
        self.check_text("theme", name, before)
        assert app.theme == name and app.theming.current.name == name, f"the shipped theme {name} was not applied"
        saved = tomllib.loads(app.user_config.read_text())["ui"]["theme"]
        assert saved == name, f"the theme saved in {app.user_config} is {saved!r}, not {name!r}"
        if name not in self.themes_checked:  # (a whole stylesheet build: once per theme)
            assert stylesheet_problem(app, app.themes[name].textual) is None, f"the saved theme {name} does not load"
            self.themes_checked.add(name)

    async def try_quit(self) -> None:
        """ctrl+q while a buffer's text is not on disk (edits, or its file deleted or replaced): it
        must ask, naming each; the walk answers Cancel. (With nothing unsaved it would quit.)"""
        unsaved = self.unsaved()
        self.count(f"quit unsaved {unsaved}")
        if not unsaved:
            return
        await self.press("ctrl+q")
        await wait_for(self.pilot, lambda: not self.app.is_running or self.asking(), timeout=10)
        assert self.app.is_running, f"ctrl+q quit without asking, losing {unsaved}"
        question = self.app.screen.question
        missing = [name for name in unsaved if name not in question]
        assert question.startswith("Unsaved changes") and not missing, (
            f"the quit dialog does not name {missing}: {question!r}")
        await self.answer_dialog()
        assert self.app.is_running, "Cancel in the quit dialog quit"

    async def disk_event(self) -> None:
        """Change an open file behind the app's back and wait until the app has seen it: another
        program's edit, a delete, a rename, a chmod, a delete and a new file with other content
        (seen deleted first or not), or a folder put in the file's place (and taken away)."""
        app, rng = self.app, self.rng
        files = list(app.editor_tabs.files.values())
        if not files:
            return
        open_file = rng.choice(files)
        path = open_file.file.path
        what = rng.choice(["edit", "edit", "delete", "rename", "chmod", "recreate", "recreate", "folder"])
        on_disk = self.disk.get(path)
        if on_disk is FOLDER:
            what = "unfolder"
        elif on_disk is None and what in ("delete", "rename", "chmod"):
            what = "edit"  # a new file where there was none: a recreation
        self.count(f"disk-{what} {path.name} unsaved {open_file.unsaved} dirty {open_file.dirty} "
                   f"deleted {open_file.deleted} active {self.app.active_file is open_file} focus {self.app.focused!r}")
        if what == "chmod":
            mode = rng.choice([0o600, 0o644, 0o444])
            os.chmod(path, mode)
            (self.read_only.add if mode == 0o444 else self.read_only.discard)(path)
            return
        was_read_only = path in self.read_only
        if what != "edit":  # (an edit writes in place: the mode stays)
            self.read_only.discard(path)
        if what in ("recreate", "folder") and on_disk is not None:
            path.unlink()
            self.disk[path] = None
            if what == "recreate" and rng.random() < 0.5:  # the app sees the delete, then the new file
                await self.seen_deleted(open_file)
        if what == "unfolder":
            path.rmdir()
            self.disk[path] = None
            if rng.random() < 0.5:
                return
        if what in ("edit", "recreate", "unfolder"):
            await self.write_outside(open_file)
            return
        if what == "folder":
            path.mkdir()
            self.disk[path] = FOLDER
            await self.seen_deleted(open_file)
            return
        if what == "rename":
            moved = path.with_name(path.stem + ".moved" + path.suffix)
            if moved in self.disk and self.disk[moved] is not None:
                return
            path.rename(moved)
            self.disk[moved] = self.disk[path]
            if was_read_only:
                self.read_only.add(moved)
        else:
            path.unlink()
        self.disk[path] = None
        await self.seen_deleted(open_file)

    async def seen_deleted(self, open_file: OpenFile) -> None:
        try:
            await wait_for(self.pilot, lambda: open_file.deleted, timeout=DISK_TIMEOUT)
        except AssertionError:
            raise AssertionError(f"{open_file.file.path.name}: no file at its path on disk any more, but its "
                                 f"tab is not marked deleted within {DISK_TIMEOUT} s") from None
        assert "(deleted)" in self.app.editor_tabs.tab_label(open_file)

    async def write_outside(self, open_file: OpenFile) -> None:
        """Another program writes other content at the file's path (Latin-1 for the Latin-1 file):
        a clean buffer reloads it; one with edits, or whose file was deleted, may ask first."""
        path = open_file.file.path
        old = self.disk.get(path)
        text = f"# written outside {self.rng.randrange(10**9)}\n" + (text_of(old) if isinstance(old, bytes) else "")
        data = ("# é\n" + text).encode("latin-1", "replace") if path.name == LATIN else text.encode()
        expected = text_of(data)
        was_dirty, was_deleted = open_file.dirty, open_file.deleted
        path.write_bytes(data)
        self.disk[path] = data
        await wait_for(
            self.pilot,
            lambda: self.asking() or (not open_file.unsaved and open_file.editor.text == expected),
            timeout=DISK_TIMEOUT,
        )
        if not was_dirty and not was_deleted:
            assert open_file.editor.text == expected, "a clean buffer was not reloaded"
        if not open_file.unsaved and open_file.editor.text == expected:
            self.loaded(path, data)


async def run_walk(app, pilot, walk: Walk, events_count: int, label: str) -> None:
    app.animation_level = "none"  # as over SSH: no tab-underline animation to wait for after each switch
    await app.open_file(walk.root / "notes.md")
    await app.open_file(walk.root / "main.py")
    await wait_for(pilot, lambda: app.watcher.ready.is_set(), timeout=DISK_TIMEOUT)
    if walk.auto:
        await wait_for(pilot, lambda: app.engine_ready.is_set(), timeout=120)
    # The first snapshot waits as every later one does: the tab just opened takes the focus
    # once it is shown (call_after_refresh), and a key sent before that lands there anyway.
    await walk.settle()
    spent: dict[str, float] = {}  # seconds per kind of event, printed for tuning
    for index in range(events_count):
        t0 = time.perf_counter()
        n = len(walk.history)
        try:
            await walk.step()
        except AssertionError as err:
            raise AssertionError(f"{label}: event {index}, after {walk.history[-6:]}: {err}") from None
        what = walk.history[-1].split(" ")[0] if len(walk.history) > n else "none"
        spent[what] = spent.get(what, 0) + time.perf_counter() - t0
        if isinstance(app.screen, ChoiceScreen) and app.focused is None:
            # a dialog pushed during the event (a save's "Overwrite?") takes its focus when the
            # screen resumes, a few messages later
            await wait_for(pilot, lambda: app.focused is not None, timeout=5)
        assert app.is_running and app.focused is not None, (
            f"{label}: event {index} ({walk.history[-3:]}): the focus is gone; size {app.size} "
            f"tree {app.file_tree.display} chat {app.chat.display} "
            f"active {app.active_file and app.active_file.file.path.name} screen {app.screen!r}")
        if index % 50 == 0:
            walk.check_disk()
    try:
        while isinstance(app.screen, ChoiceScreen):
            await walk.answer_dialog()
        await walk.try_quit()
    except AssertionError as err:
        raise AssertionError(f"{label}: at the end, after {walk.history[-6:]}: {err}") from None
    walk.check_disk()
    print(f"{label}: seconds by kind: {dict(sorted((k, round(v, 1)) for k, v in spent.items()))}")
    print(f"{label}: {events_count} events: {dict(sorted(walk.counts.items()))}")


@pytest.mark.parametrize("suggestions", [False, True], ids=["keys", "suggestions"])
@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_random_walk_loses_no_keystroke_and_writes_nothing_unsaved(tmp_path, settings_for, env, seed,
                                                                        suggestions):
    root = tmp_path / "walk"
    root.mkdir()
    for name, data in FILES.items():
        (root / name).write_bytes(data)
    settings = settings_for(root, **{"completion.auto": suggestions})
    app = make_app(settings, root / "main.py", env, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        walk = Walk(app, pilot, random.Random(seed), root, {root / n: d for n, d in FILES.items()}, auto=suggestions)
        for path, data in walk.disk.items():
            walk.loaded(path, data)
        label = f"seed {seed}{' with suggestions' if suggestions else ''}"
        await run_walk(app, pilot, walk, SUGGESTION_EVENTS if suggestions else EVENTS, label)
    walk.check_disk()  # leaving the app writes nothing either
