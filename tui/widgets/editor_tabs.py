"""EditorTabs: the open files, one CodeEditor tab each, and everything that keeps them and the disk
in step — open, save (asking before overwriting a disk version the user has not seen, offering
UTF-8 when the file's encoding cannot hold the text, saying why a save failed), close and quit
(asking about unsaved work: edits, or a buffer whose file was deleted), reload a clean buffer
changed on disk, ask before replacing a dirty one, and mark a tab whose file was deleted.

The app composes it and routes keys and disk events to it; the tabs post `FilesChanged` when the set
of open paths changed (the app re-aims its file watcher) and `Saved` when a save created a file
(the app shows it in the tree).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Static, TabbedContent, TabPane

from specterm.engine import ContextFile

from ..context_ring import CHUNK_LINES, ContextRing
from ..memory import release_after_reading
from ..screens.choice import ChoiceScreen
from ..suggest.completer import Completer
from ..suggest.prewarm import Prewarmer
from ..textfile import DiskSignature, FileLoadError, FileSaveError, TextFile, UnencodableText, encoding_name
from ..themes import SpectermTheme
from .document import BlockLines
from .editor import CodeEditor

WELCOME = (
    "specterm\n\n"
    "ctrl+b  files          ctrl+p  every action\n"
    "ctrl+l  ask the chat   ctrl+q  quit\n\n"
    "Suggestions appear when you pause typing:\n"
    "Tab accepts · ctrl+right a word · End a line · Esc dismisses"
)


class FileTabs(TabbedContent):
    """Textual's tabbed content, except that a focus reported by a pane no longer shown does not
    switch back to it. Focusing a widget reaches its pane's tab through several message queues;
    a tab key pressed meanwhile (right after a file opened, on a busy machine) switched to another
    tab, and then the late report of the opened editor's focus switched back. Every focus here
    goes to the active tab's editor, so a report from any other pane is stale."""

    def _on_tab_pane_focused(self, event: TabPane.Focused) -> None:
        if event.tab_pane.id != self.active:
            event.stop()
            event.prevent_default()  # Textual's handler would make that pane active again


@dataclass
class OpenFile:
    """One tab: the file as loaded, its editor, and what was last read from or written to disk.

    The saved version is kept as a copy of the document's lines (`BlockLines.copy`: the blocks are
    shared, not the text copied): the dirty check runs on every keystroke, and comparing them
    compares unchanged blocks by identity, where comparing texts would join a multi-megabyte file
    each time.
    """

    file: TextFile
    editor: CodeEditor
    pane_id: str
    saved_lines: BlockLines = field(default_factory=BlockLines)
    deleted: bool = False  # no file at its path on disk now: the buffer is the text's only copy
    kept_over: DiskSignature | None = None  # the disk version the user kept their edits over

    def mark_saved(self) -> None:
        """The buffer as it is now is what the disk holds."""
        self.saved_lines = self.editor.lines.copy()
        self.kept_over = None

    @property
    def saved_text(self) -> str:
        return self.saved_lines.join(self.editor.document.newline)

    @property
    def dirty(self) -> bool:
        return self.editor.lines != self.saved_lines

    @property
    def unsaved(self) -> bool:
        """Closing or quitting would lose text: it has edits, or its file is gone from disk."""
        return self.deleted or self.dirty

    @property
    def name(self) -> str:
        """The file's name, saying so when it is unsaved because its file is gone from disk."""
        name = self.file.path.name
        if not self.deleted:
            return name
        return f"{name} (not a file on disk now)" if self.file.path.exists() else f"{name} (deleted on disk)"

    @property
    def label(self) -> str:
        """The tab's title: ● for unsaved edits, "(deleted)" when the file is gone from disk."""
        name = self.file.path.name
        marked = f"● {name}" if self.dirty else name
        return f"{marked} (deleted)" if self.deleted else marked


class EditorTabs(Vertical):
    """The open files as tabs (a welcome text while none is open)."""

    DEFAULT_CSS = """
    EditorTabs { height: 1fr; }
    """

    class FilesChanged(Message):
        """A file was opened or closed: the set of paths worth watching changed."""

    class Saved(Message):
        """A file was written; `created` when it did not exist before."""

        def __init__(self, path: Path, created: bool) -> None:
            super().__init__()
            self.path = path
            self.created = created

    def __init__(self, *, theme: SpectermTheme, completer: Completer, prewarmer: Prewarmer,
                 blink: bool = True, id: str | None = None) -> None:
        super().__init__(id=id)
        self.prewarmer = prewarmer  # told what happens here (tui/suggest/prewarm.py)
        self.spectheme = theme
        self.completer = completer
        self.blink = blink  # off over SSH: every blink is a redraw sent over the connection
        self.files: dict[str, OpenFile] = {}  # by pane id
        self._pane_counter = 0
        self._prompting: set[str] = set()  # pane ids with an open "changed on disk" question
        self._saving: set[str] = set()  # pane ids with a save under way (it may be asking)
        self.ring = ContextRing()  # extra context for completions (tui/context_ring.py)
        self._ring_rows: dict[str, int] = {}  # pane id -> the row its last chunk was taken around
        self._left: OpenFile | None = None  # the tab active before the current one
        # path -> (epoch, the context ring's chunks its requests carry); see context_files
        self._picks: dict[str, tuple[int, tuple[ContextFile, ...]]] = {}
        self._pick_epoch = 0

    def compose(self) -> ComposeResult:
        yield Static(WELCOME, id="welcome", markup=False)
        tabs = FileTabs(id="tabs")
        tabs.display = False  # until a file is open
        yield tabs

    # -- lookups ----------------------------------------------------------------------------------

    @property
    def tabbed(self) -> TabbedContent:
        return self.query_one(TabbedContent)

    @property
    def active_file(self) -> OpenFile | None:
        active = self.tabbed.active
        return self.files.get(active) if active else None

    @property
    def active_editor(self) -> CodeEditor | None:
        open_file = self.active_file
        return open_file.editor if open_file else None

    def find_open(self, path: Path) -> OpenFile | None:
        path = Path(path).absolute()
        return next((f for f in self.files.values() if f.file.path == path), None)

    def file_of(self, editor: object) -> OpenFile | None:
        return next((f for f in self.files.values() if f.editor is editor), None)

    def paths(self) -> set[Path]:
        return {f.file.path for f in self.files.values()}

    def unsaved_files(self) -> list[OpenFile]:
        """The tabs whose text is on disk nowhere else: edited, or their file deleted."""
        return [f for f in self.files.values() if f.unsaved]

    def tab_label(self, open_file: OpenFile) -> str:
        """The label the tab bar shows for `open_file` right now."""
        return str(self.tabbed.get_tab(open_file.pane_id).label)

    def chat_context(self, lines: int) -> str:
        """What goes along with a chat question: the active file's selection, or `lines` lines
        around its cursor ("" with no file open)."""
        open_file = self.active_file
        if open_file is None:
            return ""
        editor = open_file.editor
        name = open_file.file.path.name
        language = editor.language_label.lower()
        if not editor.selection.is_empty:
            return f"File: {name}\nSelected code:\n```{language}\n{editor.selected_text}\n```"
        row, _ = editor.cursor_location
        text = editor.document.lines
        start, end = max(0, row - lines // 2), min(len(text), row + lines // 2)
        snippet = "\n".join(text[start:end])
        return f"File: {name} (lines {start + 1}-{end}, cursor at line {row + 1})\n```{language}\n{snippet}\n```"

    def context_files(self, path: str | None, count: int, around: int) -> tuple[ContextFile, ...]:
        """Up to `count` chunks of the context ring, picked by similarity to the `around` lines
        about the cursor of `path`'s editor (its own chunks the request holds anyway left out).

        The picks come first in the prompt, and a changed pick makes the engine read everything
        after it again (hundreds of tokens: seconds on a CPU). So a file keeps its picks while
        the user types and moves; they are picked again only when the ring changed and the user
        then paused (the idle prewarm, which reads the new prompt in the background), as
        llama.vim updates its ring only when idle. Picked per request, the picks changed with a
        few rows typed or moved (a chunk leaving the request's own rows, other lines about the
        cursor), and each change re-read the prompt from there (models with FIM tokens: the demo
        model has none, and its prompt is the prefix alone)."""
        key = path or ""
        held = self._picks.get(key)
        if held is not None and held[0] == self._pick_epoch:
            return held[1]
        before = held[1] if held else ()
        open_file = self.find_open(Path(path)) if path else None
        if open_file is None:
            picks = self.ring.pick([], count, held=before)
        else:
            editor = open_file.editor
            row = editor.cursor_location[0]
            lines = editor.document.lines[max(0, row - around // 2): row + around // 2]
            picks = self.ring.pick(lines, count, path=str(open_file.file.path), rows=(row - 400, row + 120),
                                   held=before)
        self._picks[key] = (self._pick_epoch, picks)
        return picks

    def _ring_add(self, open_file: OpenFile | None, row: int | None = None) -> None:
        """Take a chunk of `open_file` around `row` (its cursor) into the ring (the prewarmer
        reads the new prompt once the user pauses)."""
        if open_file is None or open_file.pane_id not in self.files:
            return
        editor = open_file.editor
        row = editor.cursor_location[0] if row is None else row
        self._ring_rows[open_file.pane_id] = row
        if self.ring.add_around(str(open_file.file.path), editor.document.lines, row):
            self.prewarmer.ring_changed()

    def on_code_editor_copied(self, event: CodeEditor.Copied) -> None:
        open_file = self.file_of(event.editor)
        if open_file is not None and self.ring.add_text(str(open_file.file.path), event.text):
            self.prewarmer.ring_changed()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        left, self._left = self._left, self.active_file
        if left is not None and left is not self._left:
            self._ring_add(left)  # where the user worked in the file being left

    def new_picks(self) -> None:
        """The user paused after the ring changed: the next requests pick its chunks again."""
        self._pick_epoch += 1

    def on_code_editor_moved(self, event: CodeEditor.Moved) -> None:
        self.prewarmer.moved()

    def apply_theme(self, theme: SpectermTheme) -> None:
        self.spectheme = theme
        for open_file in self.files.values():
            open_file.editor.apply_theme(theme)

    # -- opening, switching, closing --------------------------------------------------------------

    async def open_file(self, path: Path, *, create: bool = False) -> CodeEditor | None:
        """Open `path` in a tab (or switch to it); with `create`, a missing file opens empty and
        the first save creates it. A file that cannot be opened is a notice naming it and why."""
        path = Path(path).absolute()
        existing = self.find_open(path)
        tabs = self.tabbed
        if existing is not None:
            tabs.active = existing.pane_id
            self.focus_editor(existing.editor)
            return existing.editor
        try:
            text_file = TextFile(path, "") if create and not path.exists() else TextFile.load(path)
        except FileLoadError as err:
            self.notify(str(err), title="Cannot open", severity="error", timeout=15, markup=False)
            if not self.files:  # the welcome text says it too, for as long as it is shown
                self.query_one("#welcome", Static).update(f"{WELCOME}\n\nNot opened: {err}")
            return None
        self._pane_counter += 1
        pane_id = f"file-{self._pane_counter}"
        text = text_file.take_text()
        editor = CodeEditor(text, path=path, theme=self.spectheme, completer=self.completer)
        editor.cursor_blink = self.blink
        open_file = OpenFile(text_file, editor, pane_id)
        open_file.mark_saved()
        self.files[pane_id] = open_file
        await tabs.add_pane(TabPane(open_file.label, editor, id=pane_id))
        tabs.display = True
        self.query_one("#welcome").display = False
        tabs.active = pane_id
        editor.move_cursor((0, 0))
        self.focus_editor(editor)
        self.post_message(self.FilesChanged())
        self._ring_add(open_file, 0)  # its head (imports, names) until the user works elsewhere
        self.prewarmer.opened()
        await self.completer.remember(text)  # the session drafter's memory (queued)
        release_after_reading(text)  # what reading and splitting it took, back to the system
        return editor

    async def _remember_all(self, texts: list[str]) -> None:
        for text in texts:
            await self.completer.remember(text)

    def focus_editor(self, editor: CodeEditor) -> None:
        """Focus `editor` at once and again once its tab is on screen. At once is the screen's
        `set_focus`: `Widget.focus` queues the change behind the keys already waiting in the app's
        queue (typed while a file opened from the tree), which then went to the tree. Again: a tab
        switched to this moment is still hidden, and focusing a hidden widget does nothing (the next
        keystrokes went nowhere). The second focus is skipped if another tab is active by then: it
        would put the focus in a hidden editor (`FileTabs` no longer lets that switch back to its
        tab; before, it did), and the focus left on a hidden widget ends on the tab strip, typed keys
        going nowhere."""
        self.screen.set_focus(editor)

        def again() -> None:
            if self.active_editor is editor:
                editor.focus()

        self.call_after_refresh(again)

    def refresh_label(self, open_file: OpenFile) -> None:
        try:
            tab = self.tabbed.get_tab(open_file.pane_id)
        except Exception:
            return  # closed meanwhile
        if str(tab.label) != open_file.label:  # every keystroke lands here: relabel only on a change
            tab.label = open_file.label

    def on_text_area_changed(self, event: CodeEditor.Changed) -> None:
        open_file = self.file_of(event.text_area)
        if open_file is not None:
            self.refresh_label(open_file)
            self.prewarmer.typed()
            row = open_file.editor.cursor_location[0]
            last = self._ring_rows.get(open_file.pane_id)
            if last is None or abs(row - last) >= CHUNK_LINES // 2:
                self._ring_add(open_file, row)  # a recently edited place

    def cycle(self, step: int) -> None:
        ids = list(self.files)
        if not ids:
            return
        tabs = self.tabbed
        index = ids.index(tabs.active) if tabs.active in ids else 0
        tabs.active = ids[(index + step) % len(ids)]
        self.focus_editor(self.files[tabs.active].editor)

    async def close_active(self) -> None:
        open_file = self.active_file
        if open_file is None:
            return
        if open_file.unsaved:
            self._confirm_close(open_file)
        else:
            await self._close(open_file)

    @work(group="close", exit_on_error=False)
    async def _confirm_close(self, open_file: OpenFile) -> None:
        answer = await self.app.push_screen_wait(
            ChoiceScreen(
                f"{open_file.name} has unsaved changes.",
                [("save", "Save and close"), ("discard", "Discard"), ("cancel", "Cancel")],
            )
        )
        if answer == "save" and await self.save_asking(open_file):
            await self._close(open_file)
        elif answer == "discard":
            await self._close(open_file)

    async def _close(self, open_file: OpenFile) -> None:
        self.files.pop(open_file.pane_id, None)
        tabs = self.tabbed
        await tabs.remove_pane(open_file.pane_id)
        if not self.files:
            tabs.display = False
            self.query_one("#welcome").display = True
        elif self.active_editor is not None:
            self.focus_editor(self.active_editor)
        self.post_message(self.FilesChanged())

    @work(group="quit", exit_on_error=False)
    async def ask_before_quit(self, leave: Callable[[], None]) -> None:
        """Unsaved work and the user wants to quit: save all, discard, or stay; `leave` quits.
        "Save all" saves each file as ctrl+s does (asking where ctrl+s asks) and quits only when
        every one was written: otherwise it stays, naming what was not saved."""
        names = ", ".join(f.name for f in self.unsaved_files())
        answer = await self.app.push_screen_wait(
            ChoiceScreen(
                f"Unsaved changes in {names}.",
                [("save", "Save all and quit"), ("discard", "Quit without saving"), ("cancel", "Cancel")],
            )
        )
        if answer == "discard":
            leave()
        elif answer == "save":
            failed = [f.name for f in self.unsaved_files() if not await self.save_asking(f)]
            if not failed:
                leave()
                return
            self.notify(f"Not saved: {', '.join(failed)}. specterm stays open with the edits.",
                        title="Did not quit", severity="warning", timeout=10, markup=False)

    # -- saving -----------------------------------------------------------------------------------

    def save_active(self) -> None:
        open_file = self.active_file
        if open_file is None:
            self.notify("No file to save.", severity="warning", timeout=3)
            return
        self._save(open_file)

    @work(group="save", exit_on_error=False)
    async def _save(self, open_file: OpenFile) -> bool:
        return await self.save_asking(open_file)

    async def save_asking(self, open_file: OpenFile) -> bool:
        """Save `open_file`, asking first wherever writing could lose something: over a disk version
        other than the one the user last saw (as loaded, saved or reloaded: whatever happened on
        disk in between, "Keep my edits" included), over a read-only file, or in UTF-8 when the
        file's encoding cannot hold the text. A save that fails says why and leaves the buffer unsaved. True once
        written; False when it failed, the user said no, or a save of it is already asking."""
        if open_file.pane_id in self._saving:
            return False
        self._saving.add(open_file.pane_id)
        try:
            return await self._save_asking(open_file)
        finally:
            self._saving.discard(open_file.pane_id)

    async def _save_asking(self, open_file: OpenFile) -> bool:
        file = open_file.file
        try:
            file.check_writable()
        except FileSaveError as err:
            if not open_file.deleted:  # the save found it before the watcher did: the tab says so now
                open_file.deleted = True
                self.refresh_label(open_file)
            return self._not_saved(err)
        changed, read_only = file.changed_on_disk(), file.read_only()
        if changed or read_only:  # one question for both: each asked alone, two dialogs in a row
            why = [("changed on disk since you last loaded or saved it", changed), ("is read-only", read_only)]
            stays = " (It stays read-only.)" if read_only else ""
            answer = await self.app.push_screen_wait(
                ChoiceScreen(
                    f"{file.path.name} {' and '.join(w for w, yes in why if yes)}. "
                    f"Overwrite it with your version?{stays}",
                    [("overwrite", "Overwrite"), ("cancel", "Cancel")],
                )
            )
            if answer != "overwrite":
                return False
        try:
            self._write(open_file)
        except UnencodableText as err:
            if file.encoding.startswith("utf-8"):
                return self._not_saved(err)  # (text no encoding holds: a lone surrogate)
            answer = await self.app.push_screen_wait(
                ChoiceScreen(
                    f"{file.path.name} is saved as {encoding_name(err.encoding)}, which cannot hold "
                    f"{err.char!r} (line {err.line}). Save it as UTF-8 from now on?",
                    [("utf-8", "Save as UTF-8"), ("cancel", "Cancel")],
                )
            )
            if answer != "utf-8":
                return False
            try:
                self._write(open_file, encoding="utf-8")
            except FileSaveError as err:
                return self._not_saved(err)
        except FileSaveError as err:
            return self._not_saved(err)
        return True

    def _not_saved(self, err: FileSaveError) -> bool:
        """Say why a save failed (the message names the file); False, for the caller to return."""
        self.notify(str(err), title="Not saved", severity="error", timeout=15, markup=False)
        return False

    def _write(self, open_file: OpenFile, *, encoding: str | None = None) -> None:
        """Write the buffer (raising FileSaveError when that fails) and mark it saved."""
        text = open_file.editor.text
        written = open_file.editor.lines.changed_since(open_file.saved_lines)
        path = open_file.file.path
        created = not path.exists()
        open_file.file.save(text, encoding=encoding)
        open_file.mark_saved()
        open_file.deleted = False
        self.refresh_label(open_file)
        # What the user wrote, for the session memory: the blocks changed since the last save (the
        # rest was remembered then, or when the file was opened). A whole file each time re-read up
        # to REMEMBER_MAX_CHARS on the engine's worker per ctrl+s and filled the memory with
        # copies of it.
        self.run_worker(self._remember_all(written), group="remember", exit_on_error=False)
        self.post_message(self.Saved(path, created))
        saved_as = f" as {encoding_name(encoding)}" if encoding else ""
        self.notify(f"Saved {path.name}{saved_as}", timeout=2, markup=False)

    # -- the disk changed -------------------------------------------------------------------------

    async def file_changed_on_disk(self, open_file: OpenFile) -> None:
        """A watched file changed: mark it deleted, reload a clean buffer, or ask about a dirty one
        (specterm's own saves are recognised by content and change nothing)."""
        path = open_file.file.path
        if not path.is_file():
            if not open_file.deleted:
                open_file.deleted = True
                self.refresh_label(open_file)
                if path.exists():
                    self.notify(f"{path.name} is no longer a file on disk; its text is only in this tab.",
                                severity="warning", timeout=8, markup=False)
                else:
                    self.notify(f"{path.name} was deleted on disk; ctrl+s writes it again.",
                                severity="warning", timeout=8, markup=False)
            return
        if open_file.deleted:  # written again: the tab holds a version of a file on disk again
            open_file.deleted = False
            self.refresh_label(open_file)
        if not open_file.file.changed_on_disk():
            return  # our own save, or a touch without a content change
        if not open_file.dirty:
            self.reload(open_file)
            self.notify(f"Reloaded {path.name} (changed on disk).", timeout=3, markup=False)
            return
        if open_file.pane_id in self._prompting:
            return
        on_disk = DiskSignature.read(path)
        if open_file.kept_over is not None and open_file.kept_over.same_content(on_disk):
            return  # answered already: a chmod or a second event for the same version asks nothing
        self._ask_reload(open_file, on_disk)

    @work(group="ask-reload", exit_on_error=False)
    async def _ask_reload(self, open_file: OpenFile, on_disk: DiskSignature | None) -> None:
        self._prompting.add(open_file.pane_id)
        try:
            answer = await self.app.push_screen_wait(
                ChoiceScreen(
                    f"{open_file.file.path.name} changed on disk and you have unsaved edits.",
                    [("reload", "Load disk version"), ("keep", "Keep my edits")],
                    default="keep",  # Enter, the likeliest key, must not throw the edits away
                )
            )
        finally:
            self._prompting.discard(open_file.pane_id)
        if answer == "reload":
            self.reload(open_file)
        else:
            open_file.kept_over = on_disk
            self.notify("Kept your edits; saving will ask before overwriting the disk version.", timeout=5)

    def reload(self, open_file: OpenFile) -> None:
        """Replace the buffer with the disk version, keeping the cursor and scroll where they were."""
        try:
            fresh = TextFile.load(open_file.file.path)
        except FileLoadError as err:
            self.notify(str(err), severity="error", markup=False)
            return
        editor = open_file.editor
        cursor = editor.cursor_location
        scroll = editor.scroll_offset
        open_file.file = fresh
        text = fresh.take_text()
        editor.load_text(text)
        self.run_worker(self.completer.remember(text), group="remember", exit_on_error=False)
        release_after_reading(text)
        open_file.mark_saved()
        open_file.deleted = False
        row = min(cursor[0], editor.document.line_count - 1)
        col = min(cursor[1], len(editor.document[row]))
        editor.move_cursor((row, col))
        editor.scroll_to(scroll.x, scroll.y, animate=False)
        self.refresh_label(open_file)
