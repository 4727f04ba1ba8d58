"""A scripted random walk through the real app (issue 16): keys, mouse clicks, resizes, tab
switches, pane toggles, saves, dialogs, draft switches, and files edited, deleted, renamed and
chmod-ed on disk behind the app's back (real watchfiles events), with a fixed seed.

After every event: no exception, the focus is somewhere, and the text of every open buffer equals a
model of the edits (a printable key inserts exactly that character at the cursor, over the
selection; Backspace, Delete, Enter and Tab change only what they should; everything else leaves the
text alone). Every few events and at the end: every file on disk holds exactly what the walk wrote
there itself or what the user saved — nothing the user did not save.

Completions are off (`completion.auto = false`, no ctrl+space): the demo model loads and then idles,
so the walk measures the editor, not the model. Engine "restarts" are draft switches
(`switch_draft` none/lookup: the engine's worker swaps its drafter); a full reload of the model is
not part of the walk (seconds per event on CI's two cores). SPECTERM_WALK_EVENTS sets the length
(default 5000).
"""

from __future__ import annotations

import asyncio
import os
import random
import string
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from textual import events
from textual.geometry import Offset, Size
from textual.keys import _character_to_key

from specterm.tui.screens.choice import ChoiceScreen
from specterm.tui.widgets.editor_tabs import OpenFile
from specterm.tui.widgets.indentation import dedent_to

from .conftest import make_app, wait_for

EVENTS = int(os.environ.get("SPECTERM_WALK_EVENTS", "5000"))
DISK_TIMEOUT = 30.0  # watch events on a busy two-core box can take seconds
CHARS = string.ascii_letters + string.digits + " ()[]{}:;.,=+-*/#'\"<>_!?"
MOVES = ["up", "down", "left", "right", "home", "end", "ctrl+home", "ctrl+end", "pageup", "pagedown",
         "ctrl+left", "ctrl+right", "shift+left", "shift+right", "shift+up", "shift+down", "shift+end"]
SIZES = [(120, 40), (80, 24), (150, 45), (100, 30), (60, 20)]
FILES = {
    "main.py": "def main(x):\n    if x:\n        return 1\n    return 2\n",
    "notes.md": "# Notes\n\nSome text.\n",
    "util.py": "import os\n\n\ndef f():\n    pass\n",
}


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

    @classmethod
    def take(cls, app) -> "Snapshot":
        texts = {pane: f.editor.text for pane, f in app.editor_tabs.files.items()}
        active = app.active_file
        focused = active is not None and app.focused is active.editor and not isinstance(app.screen, ChoiceScreen)
        snap = cls(texts, active, focused, f"{app.focused!r} on {app.screen!r}")
        if active is not None:
            a, b = sorted(active.editor.selection)
            snap.start, snap.end = offset(active.editor.text, a), offset(active.editor.text, b)
        return snap


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
    disk: dict[Path, str | None] = field(default_factory=dict)  # what must be on disk (None: absent)
    counts: dict[str, int] = field(default_factory=dict)
    history: list[str] = field(default_factory=list)  # the events so far, for failure messages

    def count(self, what: str) -> None:
        self.counts[what.split(" ")[0]] = self.counts.get(what.split(" ")[0], 0) + 1
        self.history.append(what)

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
            elif kind in ("enter", "tab"):
                assert after.startswith(head) and after.endswith(tail), f"{key} changed text around the cursor"
                middle = after[len(head): len(after) - len(tail)]
                assert middle.strip(" \t") in (("\n",) if kind == "enter" else ("",)), f"{key} inserted {middle!r}"
            else:
                assert after == text, f"{kind} {key!r} changed the text"

    def check_disk(self) -> None:
        for path, expected in self.disk.items():
            actual = path.read_text() if path.exists() else None
            assert actual == expected, f"{path.name} on disk is not what the walk or the user wrote"
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
        before = Snapshot.take(app)
        roll = rng.random()
        if roll < 0.40:
            kind, key = "char", rng.choice(CHARS)
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
        elif roll < 0.993:
            kind, key = "move", rng.choice(MOVES)
        elif roll < 0.995:
            await self.switch_draft()
            return
        else:
            await self.disk_event()
            return
        self.count(f"{kind} {key}")
        await self.press(key)
        self.check_text(kind, key, before)
        if kind == "escape" and before.focused_editor:
            assert app.focused is before.active.editor, "Esc took the focus away from the editor"
        if kind == "toggle" and key == "ctrl+t" and app.chat.display and not isinstance(app.screen, ChoiceScreen):
            assert app.focused is app.chat.query_one("#chat-input"), "ctrl+t left the focus elsewhere"

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
        # not a notice drawn over it, nor a dialog (a change on disk) that came up during the click
        if hit is editor and self.app.screen is screen:
            assert self.app.focused is editor, "a click into the editor did not focus it"

    async def resize(self) -> None:
        size = self.rng.choice(SIZES)
        self.count(f"resize {size} from {self.app.size} focus {self.app.focused!r}")
        await self.fast_resize(*size)

    async def save(self) -> None:
        self.count("save")
        open_file = self.app.active_file
        if open_file is None or self.app.focused is not open_file.editor:
            return
        text = open_file.editor.text
        await self.press("ctrl+s")
        # until the save is done or asks: a buffer equal to its saved text may still be asked
        # about ("changed on disk ... Overwrite?") once the save worker has read the disk
        await wait_for(
            self.pilot,
            lambda: (isinstance(self.app.screen, ChoiceScreen) and self.app.focused is not None)
            or (open_file.editor.text == open_file.saved_text
                and all(w.is_finished for w in self.app.workers if w.group == "save")),
            timeout=10,
        )
        if not isinstance(self.app.screen, ChoiceScreen):
            self.disk[open_file.file.path] = text
            self.check_disk()

    async def answer_dialog(self) -> None:
        """Enter (the focused answer), Esc (the last), or Tab then Enter (the next one)."""
        self.count("dialog")
        screen = self.app.screen
        ids = [a for a, _ in screen.answers]
        focused = self.app.focused.id.removeprefix("answer-") if self.app.focused is not None else ids[-1]
        how = self.rng.choice(["enter", "escape", "tab"])
        if how == "enter":
            answer = focused
            await self.press("enter")
        elif how == "escape":
            answer = ids[-1]
            await self.press("escape")
        else:
            answer = ids[(ids.index(focused) + 1) % len(ids)]
            await self.press("tab", "enter")
        await wait_for(self.pilot, lambda: self.app.screen is not screen, timeout=10)
        open_file = self.app.active_file
        question = screen.question
        if "Overwrite" in question and answer == "overwrite":
            await wait_for(self.pilot, lambda: open_file.editor.text == open_file.saved_text, timeout=10)
            self.disk[open_file.file.path] = open_file.editor.text
        elif "unsaved edits" in question and answer == "reload":
            path = next(p for p in self.disk if question.startswith(f"{p.name} "))
            await wait_for(self.pilot, lambda: self.app.editor_tabs.find_open(path).editor.text == self.disk[path], timeout=10)
        self.check_disk()

    async def open_another(self) -> None:
        self.count("open")
        present = [p for p, text in self.disk.items() if text is not None]
        if present and len(self.app.editor_tabs.files) < 4:
            await self.app.open_file(self.rng.choice(present))
            await self.pilot.pause()

    async def switch_draft(self) -> None:
        self.count("draft")
        if self.app.engine_ready.is_set():
            await self.app.action_switch_draft(self.rng.choice(["none", "lookup"]))

    async def disk_event(self) -> None:
        """Change an open file behind the app's back and wait until the app has seen it."""
        app, rng = self.app, self.rng
        files = list(app.editor_tabs.files.values())
        if not files:
            return
        open_file = rng.choice(files)
        path = open_file.file.path
        what = rng.choice(["edit", "edit", "delete", "rename", "chmod"])
        self.count(f"disk-{what} {path.name} active {self.app.active_file is open_file} focus {self.app.focused!r}")
        if what == "chmod":
            if path.exists():
                os.chmod(path, rng.choice([0o600, 0o644, 0o444]))
            return
        if what in ("delete", "rename") and not path.exists():
            what = "edit"
        if what == "edit":
            text = f"# written outside {rng.randrange(10**9)}\n" + (self.disk.get(path) or "")
            was_dirty = open_file.dirty
            path.write_text(text)
            self.disk[path] = text
            await wait_for(
                self.pilot,
                lambda: (isinstance(app.screen, ChoiceScreen) and app.focused is not None)
                or (not open_file.dirty and open_file.editor.text == text),
                timeout=DISK_TIMEOUT,
            )
            if not was_dirty:
                assert open_file.editor.text == text, "a clean buffer was not reloaded"
            return
        if what == "rename":
            moved = path.with_name(path.stem + ".moved" + path.suffix)
            if moved in self.disk and self.disk[moved] is not None:
                return
            path.rename(moved)
            self.disk[moved] = self.disk[path]
        else:
            path.unlink()
        self.disk[path] = None
        await wait_for(self.pilot, lambda: open_file.deleted, timeout=DISK_TIMEOUT)
        assert "(deleted)" in app.editor_tabs.tab_label(open_file)


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_random_walk_loses_no_keystroke_and_writes_nothing_unsaved(tmp_path, settings_for, env, seed):
    root = tmp_path / "walk"
    root.mkdir()
    for name, text in FILES.items():
        (root / name).write_text(text)
    app = make_app(settings_for(root, **{"completion.auto": False}), root / "main.py", env, watch=True)
    app.animation_level = "none"  # as over SSH: no tab-underline animation to wait for after each switch
    async with app.run_test(size=(120, 40)) as pilot:
        walk = Walk(app, pilot, random.Random(seed), root, {root / n: t for n, t in FILES.items()})
        await app.open_file(root / "notes.md")
        await app.open_file(root / "main.py")
        await wait_for(pilot, lambda: app.watcher.ready.is_set(), timeout=DISK_TIMEOUT)
        # The first snapshot waits as every later one does: the tab just opened takes the focus
        # once it is shown (call_after_refresh), and a key sent before that lands there anyway.
        await walk.settle()
        spent: dict[str, float] = {}  # seconds per kind of event, printed for tuning
        for index in range(EVENTS):
            t0 = time.perf_counter()
            n = len(walk.history)
            try:
                await walk.step()
            except AssertionError as err:
                raise AssertionError(f"event {index}, after {walk.history[-4:]}: {err}") from None
            what = walk.history[-1].split(" ")[0] if len(walk.history) > n else "none"
            spent[what] = spent.get(what, 0) + time.perf_counter() - t0
            if isinstance(app.screen, ChoiceScreen) and app.focused is None:
                # a dialog pushed during the event (a save's "Overwrite?") takes its focus when the
                # screen resumes, a few messages later
                await wait_for(pilot, lambda: app.focused is not None, timeout=5)
            assert app.is_running and app.focused is not None, f"event {index} ({walk.history[-3:]}): the focus is gone; size {app.size} tree {app.file_tree.display} chat {app.chat.display} active {app.active_file and app.active_file.file.path.name} screen {app.screen!r}"
            if index % 50 == 0:
                walk.check_disk()
        while isinstance(app.screen, ChoiceScreen):
            await walk.answer_dialog()
        walk.check_disk()
        print(f"seed {seed}: seconds by kind: {dict(sorted((k, round(v, 1)) for k, v in spent.items()))}")
        print(f"seed {seed}: {EVENTS} events: {dict(sorted(walk.counts.items()))}")
    walk.check_disk()  # leaving the app writes nothing either
