"""The app's engine prewarms: the prompt the next suggestion will read, read ahead while the user
moves, types or pauses, so the suggestion at the next pause reads only what is new.

The editor tabs tell the `Prewarmer` what happened (a file opened, the context ring changed, the
user typed, the cursor moved); it decides when to read what, and asks the `Completer`:
- after a move, the new place's prompt at once (its first read bounded, FIRST_READ_S), while the
  typing pause runs and the user is not typing (every core is the engine's);
- while typing, the prompt start at most every TYPING_PREWARM_S, so the next pause reads the last
  line only; typing on for GROW_TYPING_S after a move, these read the whole window again;
- once the user pauses (GROW_IDLE_S, no suggestion being written), the whole window (the grow-back);
- after a file opened or the ring changed and PREWARM_DELAY_S without a request, the next
  request's prompt (a file's head as far as a request's window reaches), and the ring's chunks are
  picked again then (EditorTabs.context_files).
With automatic completions off nothing runs in the background.
"""

from __future__ import annotations

import time
from typing import Callable, Protocol

from textual.css.query import NoMatches
from textual.dom import DOMNode
from textual.timer import Timer

from .completer import Completer

PREWARM_DELAY_S = 1.0  # after the context ring changed, this long without a request: prewarm
TYPING_PREWARM_S = 0.25  # while typing, the prompt start is read at most this often
MOVE_PREWARM_S = 0.05  # after the cursor stops moving (a held arrow key repeats faster): read there
GROW_IDLE_S = 1.0  # this long without a key (and no suggestion being written): read the whole window
GROW_TYPING_S = 2.0  # typing this long after a move: the typing prewarms read the whole window too


class PrewarmedEditor(Protocol):
    """What the prewarmer reads of the active editor (CodeEditor is one)."""

    @property
    def path(self) -> object: ...
    @property
    def completion_pending(self) -> bool: ...
    @property
    def rests_after_move(self) -> bool: ...
    def prefix_suffix(self) -> tuple[str, str]: ...
    def head_window(self) -> tuple[str, str]: ...


class Prewarmer:
    """Decides and issues the engine's prewarms for the active editor."""

    def __init__(self, node: DOMNode, completer: Completer, active: Callable[[], PrewarmedEditor | None],
                 paused: Callable[[], None] = lambda: None) -> None:
        self.node = node  # whose timers and workers these are (the app)
        self.completer = completer
        self.active = active  # the editor a prewarm reads for, None when no file is open
        self.paused = paused  # the user paused after the ring changed: pick its chunks again
        self._idle: Timer | None = None
        self._typing: Timer | None = None
        self._move: Timer | None = None
        self._grow: Timer | None = None  # the whole window read back once the user pauses
        self._moved_at = 0.0  # when the cursor last moved without an edit (monotonic)

    # -- what happened ----------------------------------------------------------------------------

    def opened(self) -> None:
        """A file was opened (it is the active one): its head, once the user pauses."""
        self._schedule_idle(whole=True)

    def ring_changed(self) -> None:
        """The context ring changed: the next request's prompt, once the user pauses."""
        self._schedule_idle()

    def typed(self) -> None:
        """The active file's text changed. Typing that starts before a move's read did (a person
        moves and types at once) starts that read now: the place is chosen, its prompt start
        (all but the line being typed) is what the pause's request reads, and every millisecond
        the read waits is one the first suggestion waits."""
        if self._move is not None:
            self._move.stop()
            self._after_move()
        if self._idle is not None:
            self._schedule_idle()  # only once typing pauses
        if self._typing is None:
            self._typing = self.node.set_timer(TYPING_PREWARM_S, self._while_typing)
        self._schedule_grow()

    def moved(self) -> None:
        """The cursor moved (a jump, a click, arrow keys): read the prompt there while the typing
        pause runs, with every core (the user is not typing), instead of after it. After a jump
        the new place's lines are not in the KV cache, and reading them takes longer on a CPU
        than the typing pause, which now hides part of it (the first read is bounded, FIRST_READ_S)."""
        self._moved_at = time.monotonic()
        if self._move is not None:
            self._move.stop()
        self._move = self.node.set_timer(MOVE_PREWARM_S, self._after_move)

    # -- when -------------------------------------------------------------------------------------

    def _schedule_idle(self, *, whole: bool = False) -> None:
        if self._idle is not None:
            self._idle.stop()
        self._idle = self.node.set_timer(PREWARM_DELAY_S, lambda: self._start(whole=whole))

    def _schedule_grow(self) -> None:
        if self._grow is not None:
            self._grow.stop()
        self._grow = self.node.set_timer(GROW_IDLE_S, self._grow_window)

    def _grow_window(self) -> None:
        self._grow = None
        self._start(grow=True)

    def _while_typing(self) -> None:
        """The user types here: read this place's prompt start now (the engine does it on the
        threads it leaves the UI free of, and only what its KV cache lacks), so the suggestion
        at the next pause reads the last line only. Without it the first pause after a jump to
        another part of a file read every line in between then."""
        self._typing = None
        self._start(typing=True)

    def _after_move(self) -> None:
        self._move = None
        self._start(moved=True)

    # -- what -------------------------------------------------------------------------------------

    def _start(self, *, whole: bool = False, typing: bool = False, moved: bool = False,
               grow: bool = False) -> None:
        """The ring changed (or, `whole`, a file was opened) and the user paused: decode the next
        request's prompt start now. `whole` warms the file's head as far as a request's prefix
        window reaches, so the first suggestion anywhere in it reuses what was read (a cold
        prompt of a whole window takes seconds for a small model on a CPU). After a move and
        while typing, what is read is what the next request reads (its first read is bounded: a
        short window after a move); `grow` (the user paused) and the idle ones read the whole
        window, which later requests then use."""
        if not grow:
            self._idle = None
        try:
            if not (typing or moved or grow):
                self.paused()  # the user paused after the ring changed: pick its chunks again
            editor = self.active()
        except NoMatches:
            return  # the app is closing: its editors are gone
        if editor is None or not self.completer.options.auto:
            return  # with automatic completions off, nothing runs in the background either
        if not self.completer.ready:
            self._schedule_idle(whole=whole)  # the model is still loading: once it is there
            return
        # (then a pause's request is pending, or the move's read stays)
        if (editor.completion_pending or editor.rests_after_move) and not (typing or moved):
            if grow and editor.completion_pending:
                self._schedule_grow()  # once the suggestion is written
            return
        prefix, suffix = editor.head_window() if whole else editor.prefix_suffix()
        settled = typing and time.monotonic() - self._moved_at >= GROW_TYPING_S
        request = self.completer.build_request(prefix, suffix, str(editor.path),
                                               whole=settled or not (typing or moved))
        self.node.run_worker(self.completer.prewarm(request, urgent=moved), group="prewarm", exit_on_error=False)
