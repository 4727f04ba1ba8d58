"""The edit flow in the app: the key opens the instruction box under the region (and starts
reading the edit's prompt), Enter streams the rewrite into an `EditReview` in the editor's place,
the review's choice is applied to the document as one undo step. Apply-from-chat starts the same
review with an instruction to merge the answer's code block. One edit at a time; completions wait
while one is open (they would take the engine and its cache from it)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from textual.css.query import NoMatches
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets.text_area import Selection

from specterm.engine import EditRequest, Finished, TextDelta
from specterm.engine.edit_prompt import AFTER_SHARE

from ..suggest.completer import MIN_WINDOW_CHARS
from .box import InstructionBox, InstructionHistory
from .merge import merge_instruction, merge_rows
from .region import EditTarget, pick_rows, target_for
from .review import EditReview

if TYPE_CHECKING:
    from ..app import SpectermApp
    from ..widgets.editor import CodeEditor

BOX_ROWS = 3


def context_around(target: EditTarget, chars: int) -> tuple[str, str]:
    """The whole lines before and after the region that fit `chars` characters with it: the text
    after gets at most 1/AFTER_SHARE of the room (its start), the text before the rest (its end)."""
    room = max(chars - len(target.region), 0)
    after = target.after[: room // AFTER_SHARE]
    if after != target.after:
        after = after[: after.rfind("\n") + 1]
    room -= len(after)
    before = target.before[len(target.before) - room:] if room < len(target.before) else target.before
    if before != target.before:
        before = before[before.find("\n") + 1:] if "\n" in before else ""
    return before, after


def _pane(editor: CodeEditor) -> Widget:
    """The editor's container (its tab's pane): the instruction box and the review go there."""
    pane = editor.parent
    assert isinstance(pane, Widget), "an editor is mounted in its tab's pane"
    return pane


class EditFlow:
    """The app's one edit at a time: its box, its review, its engine stream."""

    def __init__(self, app: "SpectermApp") -> None:
        self.app = app
        self.history = InstructionHistory()
        self.box: InstructionBox | None = None
        self.review: EditReview | None = None
        self.request: EditRequest | None = None  # the edit streaming or last streamed
        self.finished: Finished | None = None  # its end (tests and the bench read it)
        self.sent_at: float | None = None  # monotonic(): when it was sent (Enter, the apply key)
        self.last_review: EditReview | None = None  # kept after it ends (its first_change_at)
        self._editor: "CodeEditor | None" = None
        self._target: EditTarget | None = None
        self._selection: Selection | None = None
        self._streaming = False
        self._warmed = ""  # the instruction's words read ahead so far
        self._context: tuple[EditTarget, str, str] | None = None  # the target and the file around it

    @property
    def active(self) -> bool:
        return self.box is not None or self.review is not None or self._streaming

    # -- checks -----------------------------------------------------------------------------------

    def _ready_editor(self) -> "CodeEditor | None":
        app = self.app
        editor = app.active_editor
        shown = self.box or self.review
        if shown is not None:
            shown.focus()  # (its tab was left)
        elif self.active:
            app.notify("The last edit is still stopping.", severity="warning", timeout=3)
        elif editor is None:
            app.notify("Open a file to edit (ctrl+b shows the files).", severity="warning", timeout=3)
        elif app.engine is None or not app.engine_ready.is_set():
            app.notify("The model is still loading.", severity="warning", timeout=3)
        elif app.chat.streaming:
            app.notify("A chat answer is streaming: wait for it, or stop it with Esc.", severity="warning", timeout=3)
        elif editor.read_only:
            app.notify("This file is read-only.", severity="warning", timeout=3)
        else:
            return editor
        return None

    def _target_for(self, editor: "CodeEditor", rows: tuple[int, int] | None) -> EditTarget | None:
        target = target_for(editor.document.lines, *rows) if rows is not None else None
        if target is None or not target.region.strip():
            self.app.notify("Nothing to rewrite here: select the lines to edit.", severity="warning", timeout=4)
            return None
        return target

    # -- the instruction box ----------------------------------------------------------------------

    def open(self) -> None:
        """The edit key: pick the region, show it selected, open the box under it."""
        editor = self._ready_editor()
        if editor is None:
            return
        top, bottom = sorted(editor.selection)
        target = self._target_for(editor, pick_rows(editor.document.lines, top, bottom))
        if target is None:
            return
        self._begin(editor, target)
        editor.selection = Selection(target.from_location, target.to_location)
        editor.scroll_to_region(Region(0, target.start, 1, target.end - target.start + BOX_ROWS),
                                animate=False, immediate=True, force=True)
        self.box = InstructionBox(self.history, self._send, self._close_box, on_typed=self._typed,
                                  placeholder=f"Edit {target.label}: what should change? (Enter sends, Esc closes)")
        y = max(0, min(target.end - int(editor.scroll_offset.y), editor.size.height - BOX_ROWS))
        self.box.styles.offset = (editor.gutter_width, y)
        self.box.styles.width = max(20, editor.size.width - editor.gutter_width - 2)
        _pane(editor).mount(self.box)
        self.box.focus()
        self.app.call_after_refresh(self._focus_box)
        self._warmed = ""
        if self.app.engine is not None:  # read everything but the instruction while the user types it
            self.app.run_worker(self._prewarm(self._request("", target, editor)),
                                group="edit-prewarm", exit_on_error=False)

    async def _prewarm(self, request: EditRequest) -> None:
        """Read the edit's prompt ahead; what the read took sizes the next edit's context, as
        the completions' reads size their window (an edit may come before any completion)."""
        engine = self.app.engine
        read = await engine.prewarm(request, urgent=True) if engine is not None else None
        if read is not None and not request.instruction:
            self.app.completer.window.observe(len(request.before) + len(request.region) + len(request.after), read)

    def _typed(self, value: str) -> None:
        """The instruction so far: its words but the last (which may still grow) are read now,
        so that Enter leaves only the last word and the answer's header to read."""
        words = value.strip()
        head = words.rsplit(None, 1)[0] if len(words.split()) > 1 else ""
        editor, target = self._editor, self._target
        if not head or head == self._warmed or editor is None or target is None or self.app.engine is None:
            return
        self._warmed = head
        self.app.run_worker(self._prewarm(self._request(head, target, editor)), group="edit-prewarm",
                            exit_on_error=False)

    def _focus_box(self) -> None:
        if self.box is not None:
            self.box.focus()

    def _begin(self, editor: "CodeEditor", target: EditTarget) -> None:
        editor.action_dismiss_completion()
        self._editor, self._target, self._selection = editor, target, editor.selection
        self.app.completer.blocked_by = "edit"

    def _release(self) -> None:
        try:
            chat_busy = self.app.chat.streaming
        except NoMatches:  # the app is closing
            chat_busy = False
        self.app.completer.blocked_by = "chat" if chat_busy else None

    def _close_box(self) -> None:
        box, self.box = self.box, None
        if box is not None:
            box.remove()
        if self.review is None and not self._streaming:
            self._restore_editor()
            self._release()

    def _send(self, instruction: str) -> None:
        if not instruction:
            self.app.notify("Type what should change (Esc closes the box).", severity="warning", timeout=3)
            return
        self.history.add(instruction)
        editor, target = self._editor, self._target
        with self.app.batch_update():
            if editor is not None and target is not None:
                self._start(editor, target, instruction, f"Edit ({instruction[:40]})")
            self._close_box_keep()

    def _close_box_keep(self) -> None:
        box, self.box = self.box, None
        if box is not None:
            box.remove()

    # -- apply from the chat ----------------------------------------------------------------------

    def apply_chat_block(self) -> None:
        """The last answer's last code block merged into the selection, the function it
        redefines, or the file: the same reviewable diff as an edit."""
        block, why_not = self.app.chat.usable_code_block()
        if block is None:
            self.app.notify(f"Not applied: {why_not}.", severity="warning", timeout=6)
            return
        editor = self._ready_editor()
        if editor is None:
            return
        top, bottom = sorted(editor.selection)
        target = self._target_for(editor, merge_rows(editor.document.lines, block, top, bottom))
        if target is None:
            return
        self._begin(editor, target)
        self._start(editor, target, merge_instruction(block), "Apply code block")

    # -- the rewrite and its review ---------------------------------------------------------------

    def _request(self, instruction: str, target: EditTarget, editor: "CodeEditor") -> EditRequest:
        """The edit's request. The file around the region is cut to what the engine reads, with
        the region, in about the completions' read budget (their prefix window, measured from the
        engine's prompt reads): the box reads it while the instruction is typed, so on a slow CPU
        a whole file's context would still be reading when Enter is pressed."""
        if self._context is None or self._context[0] is not target:  # one context for the edit's reads
            window = self.app.completer.window
            # until a read was measured, the least window: a slow CPU would still be reading the rest
            self._context = (target, *context_around(target, window.chars if window.rate is not None
                                                     else MIN_WINDOW_CHARS))
        _, before, after = self._context
        return EditRequest(instruction=instruction, region=target.region, before=before,
                           after=after, path=self._prompt_path(editor))

    def _prompt_path(self, editor: "CodeEditor") -> str | None:
        """The file's name as the prompt gives it: relative to the opened folder (the model needs
        no more, and the user's home need not be in every prompt)."""
        if editor.path is None:
            return None
        try:
            return str(editor.path.resolve().relative_to(self.app.root.resolve()))
        except ValueError:
            return editor.path.name

    def _start(self, editor: "CodeEditor", target: EditTarget, instruction: str, label: str) -> None:
        self.request = self._request(instruction, target, editor)
        self.finished = None
        self.sent_at = time.monotonic()
        self.review = self.last_review = EditReview(editor, target, label, self._done, self._stop)
        _pane(editor).mount(self.review, after=editor)
        editor.display = False
        editor.can_focus = False  # a tab switched back must not give it the keys meanwhile
        self.review.focus()
        self._streaming = True
        self.app.run_worker(self._stream(self.request, self.review), group="edit", exit_on_error=False)

    async def _stream(self, request: EditRequest, review: EditReview) -> None:
        engine = self.app.engine
        text = ""
        try:
            if engine is None:
                return
            async for event in engine.stream(request):
                self.app.engines.event("edit", event)
                if isinstance(event, Finished):
                    self.finished = event
                if review.ended:
                    continue  # stopped: wait for the engine's end, show nothing
                if isinstance(event, TextDelta):
                    text += event.text
                    review.stream_text(text)
                elif isinstance(event, Finished):
                    if event.answered:
                        review.finish(event.text, cut=event.reason == "length")
                        if review.ended:
                            self.app.notify("The model changed nothing.", timeout=4)
                    else:
                        if event.reason == "error":
                            self.app.notify(event.error or "The edit failed.", title="Edit", severity="error")
                        elif event.reason == "busy":
                            self.app.notify("The engine is busy; try again.", severity="warning", timeout=4)
                        review.abandon()
        finally:
            self._streaming = False
            if self.review is None and self.box is None:
                self._release()

    def _stop(self) -> None:
        """Esc while it streams: the engine stops within a pass (the stream then ends)."""
        engine = self.app.engine
        if engine is not None and self._streaming:
            self.app.run_worker(engine.cancel(), exit_on_error=False)

    def _done(self, text: str | None) -> None:
        """The review ended: apply `text` as the new region (None: leave it as it was)."""
        review, self.review = self.review, None
        editor, target = self._editor, self._target
        if review is not None and not review.unmounted:
            review.remove()
        if editor is None or target is None:
            return
        editor.can_focus = True
        if not editor.is_attached:  # its tab was closed
            self._editor = None
            if not self._streaming:
                self._release()
            return
        editor.display = True
        if text is not None and text != target.region:
            if editor.document.get_text_range(target.from_location, target.to_location) != target.region:
                self.app.notify("The file changed meanwhile: the edit was not applied.", severity="warning")
            else:
                editor.history.checkpoint()
                result = editor.replace(text, target.from_location, target.to_location)
                editor.history.checkpoint()
                editor.selection = Selection.cursor(target.from_location)
                editor.scroll_to_region(Region(0, target.start, 1, max(1, result.end_location[0] - target.start)),
                                        animate=False, force=True)
                self._selection = None
        self._restore_editor()
        if not self._streaming:
            self._release()

    def _restore_editor(self) -> None:
        editor = self._editor
        if editor is None:
            return
        if self._selection is not None and editor.is_attached:
            editor.selection = self._selection
        self._selection = None
        editor.display = True
        editor.focus()
        self.app.call_after_refresh(editor.focus)
