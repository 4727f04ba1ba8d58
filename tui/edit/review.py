"""An edit on screen: the rewrite streaming in as a diff, then its review.

`EditReview` takes the editor's place in its tab (the editor is hidden, its document untouched)
and shows the file with the diff inline (`DiffView`) and a one-line bar with the keys. Keys while
it streams: Esc stops it and the region is as it was. Keys while reviewing: a accepts all, r (or
Esc) rejects all, y / n accept / reject the hunk under the marker and go to the next undecided one
(the edit is applied once every hunk is decided), up/down (j/k) move between hunks, pageup/
pagedown scroll. Any other key does nothing: nothing can be typed into the region meanwhile.
The result is applied with one replace between two history checkpoints: one undo step.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable

from textual.binding import Binding
from textual.containers import Vertical
from textual.timer import Timer
from textual.widgets import Static

from .diff import EditDiff
from .region import EditTarget
from .view import DiffView

if TYPE_CHECKING:
    from ..widgets.editor import CodeEditor

REDRAW_S = 0.1  # the streamed diff is redrawn at most this often (as the editor's ghost text)


class EditReview(Vertical, can_focus=True):
    """The diff of one edit and its keys; `on_done(text | None)` once it ends (None: the
    region stays as it was)."""

    DEFAULT_CSS = """
    EditReview { height: 1fr; }
    EditReview #edit-bar { height: 1; background: $panel; color: $foreground; padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape", "escape", "Stop / reject all", show=False),
        Binding("a", "accept_all", "Accept all", show=False),
        Binding("r", "reject_all", "Reject all", show=False),
        Binding("y", "decide(True)", "Accept hunk", show=False),
        Binding("n", "decide(False)", "Reject hunk", show=False),
        Binding("down,j", "move(1)", "Next hunk", show=False),
        Binding("up,k", "move(-1)", "Previous hunk", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
    ]

    def __init__(self, editor: "CodeEditor", target: EditTarget, label: str,
                 on_done: Callable[[str | None], None], on_stop: Callable[[], None]) -> None:
        super().__init__(id="edit-review")
        self.editor = editor
        self.target = target
        self.label = label
        self.diff = EditDiff(target.region)
        self.on_done = on_done
        self.on_stop = on_stop
        self.streaming = True
        self.ended = False
        self.unmounted = False
        self._text = ""
        self.first_change_at: float | None = None  # monotonic(): the first changed line drawn
        self._redraw: Timer | None = None
        self.view = DiffView(editor, target, self.diff)

    def compose(self):
        yield self.view
        yield Static("", id="edit-bar", markup=False)

    def on_mount(self) -> None:
        self._show_bar()

    def on_show(self) -> None:
        self.focus()  # its tab is shown again: the keys are the review's

    def on_unmount(self) -> None:
        self.unmounted = True
        if not self.ended:  # its tab was closed: stop the rewrite, change nothing
            if self.streaming:
                self.on_stop()
            self._end(None)

    # -- streaming --------------------------------------------------------------------------------

    def stream_text(self, text: str) -> None:
        """The rewrite so far: diffed and redrawn in batches (the first text at once), so the UI
        thread does not take the engine's core for every token. (Not a zero-delay timer for the
        first: Textual's timer divides by its interval and never fires at 0.)"""
        self._text = text
        if self._redraw is not None:
            return
        if self.diff.new_text:
            self._redraw = self.set_timer(REDRAW_S, self._redraw_now)
        else:
            self._redraw_now()

    def _redraw_now(self) -> None:
        self._redraw = None
        if not self.streaming:
            return
        self.diff.update(self._text, final=False)
        self.view.update_diff()
        frontier = self.diff.frontier()
        if frontier is not None:
            self.view.follow_row(frontier)
        if self.first_change_at is None and self.diff.changed:  # a whole line that differs
            self.first_change_at = time.monotonic()

    def finish(self, text: str, *, cut: bool) -> None:
        """The rewrite has ended: review it (`cut`: it stopped at its length limit, so the
        region's lines it did not reach are kept)."""
        if self._redraw is not None:
            self._redraw.stop()
            self._redraw = None
        self.streaming = False
        self.diff.update(text, final=True, cut=cut)
        if not self.diff.changed:
            self._end(None)
            return
        self.view.current_hunk = 0
        self.view.update_diff()
        if self.first_change_at is None:
            self.first_change_at = time.monotonic()
        self.view.show_row(self.diff.hunk_row(0))
        self._show_bar(cut=cut)

    def _show_bar(self, *, cut: bool = False) -> None:
        bar = self.query_one("#edit-bar", Static)
        if self.streaming:
            bar.update(f"{self.label}: rewriting {self.target.label}…  Esc stops and restores")
            return
        hunks = self.diff.hunks
        at = self.view.current_hunk or 0
        decided = sum(h.accepted is not None for h in hunks)
        note = "  (cut at its length limit: the rest is kept)" if cut else ""
        bar.update(f"hunk {at + 1}/{len(hunks)} ({decided} decided) · a accept all · r/Esc reject all · "
                   f"y/n accept/reject hunk · ↑↓ hunks{note}")

    # -- review keys ------------------------------------------------------------------------------

    def action_escape(self) -> None:
        if self.streaming:
            self.on_stop()
            self._end(None)
        else:
            self.action_reject_all()

    def action_accept_all(self) -> None:
        if self.streaming:
            return
        for hunk in self.diff.hunks:
            hunk.accepted = True
        self._end(self.diff.result())

    def action_reject_all(self) -> None:
        if self.streaming:
            return
        self._end(None)

    def action_decide(self, accept: bool) -> None:
        if self.streaming or self.view.current_hunk is None:
            return
        hunks = self.diff.hunks
        hunks[self.view.current_hunk].accepted = accept
        undecided = [i for i, h in enumerate(hunks) if h.accepted is None]
        if not undecided:
            self._end(self.diff.result())
            return
        after = [i for i in undecided if i > self.view.current_hunk]
        self._select(after[0] if after else undecided[0])

    def action_move(self, step: int) -> None:
        if self.streaming or self.view.current_hunk is None:
            return
        self._select(max(0, min(len(self.diff.hunks) - 1, self.view.current_hunk + step)))

    def action_page(self, step: int) -> None:
        (self.view.scroll_page_down if step > 0 else self.view.scroll_page_up)(animate=False)

    def _select(self, hunk: int) -> None:
        self.view.current_hunk = hunk
        self.view.update_diff()
        self.view.show_row(self.diff.hunk_row(hunk))
        self._show_bar()

    def abandon(self) -> None:
        """The rewrite ended without an answer (an error, the engine busy): nothing changes."""
        self._end(None)

    def _end(self, text: str | None) -> None:
        if self.ended:
            return
        self.ended = True
        self.streaming = False
        self.on_done(text)
