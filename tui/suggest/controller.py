"""The lifecycle of the suggestion at an editor's cursor, apart from the widget that draws it.

The editor (tui/widgets/editor.py) keeps its keys, drawing and highlighting, and tells the
controller what happened (an edit, a move, a key that accepts); the controller decides what to
ask the `Completer` for and when, follows the stream, and says what is shown.

Lifecycle of a suggestion:
- a pause in typing (debounce) or the complete key starts a request; the cache may answer at once;
  a cursor move alone asks for nothing (its prompt is only read ahead), so End and ctrl+right
  after a move move the cursor;
- text streams in token by token and is shown by the same rules as the finished text
  (`live_completion`), so a shown suggestion never vanishes unless the text under it changes;
- once shown in full, the next suggestion is computed as if it were accepted (prefetch); Tab then
  shows it at once (from the cache, or by following the prefetch still streaming);
- typing characters that match the suggestion consumes them (no new request);
- any other edit, cursor move, Esc or focus loss dismisses it and cancels the engine request and
  the prefetch;
- Tab accepts all, ctrl+right the next word, End the next line (`[keys]` in config.toml); each
  accept is one undo step;
- once it has finished, the next suggestion is prefetched (as if accepted), then alternatives are
  computed while nothing changes (tui/widgets/alternatives.py) and Alt+] / Alt+[ (alt+n / alt+p)
  cycle them.
The typing pause adapts to the user's typing speed and the measured response time (debounce.py).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Coroutine, Protocol

from specterm.engine import CompletionRequest, Finished, TextDelta
from specterm.engine.completion import live_completion

from ..widgets import alternatives
from ..widgets.alternatives import Alternatives
from ..widgets.debounce import AdaptiveDebounce
from ..widgets.ghost import cache_key, next_line, next_word, visible_ghost
from ..widgets.suggestions import CompletionRecord, Source
from .completer import Completer

FOLLOWING_LINES = 12  # document lines compared against a suggestion's tail
# While a suggestion streams, it is redrawn at most this often: the first text at once, then in
# batches. Drawing per token kept the UI thread busy and the engine thread waiting for the GIL;
# a redraw takes a core from the engine's next pass.
STREAM_REDRAW_S = 0.1

Location = tuple[int, int]


class Timer(Protocol):
    def stop(self) -> None: ...


class SuggestionHost(Protocol):
    """What the controller needs of the editor it serves (CodeEditor is one)."""

    path: Path | None
    read_only: bool

    @property
    def is_mounted(self) -> bool: ...
    @property
    def has_focus(self) -> bool: ...
    @property
    def cursor_location(self) -> Location: ...

    def cursor_is_caret(self) -> bool:
        """No selection: a suggestion can be shown at the cursor."""

    def prefix_suffix(self, at: Location | None = None) -> tuple[str, str]: ...

    def text_after(self, at: Location, lines: int) -> tuple[str, list[str]]:
        """The rest of `at`'s line and up to `lines` lines after it."""

    def insert_suggestion(self, piece: str, at: Location) -> None:
        """Insert accepted text at `at` as one undo step (through the editor's `edit`)."""

    def redraw_suggestion(self) -> None:
        """Draw what `SuggestionController.update_shown` says is shown."""

    def set_timer(self, delay: float, callback: Callable[[], Any]) -> Any: ...
    def run_worker(self, work: Coroutine[Any, Any, Any], *, group: str = ...,
                   exit_on_error: bool = ...) -> Any: ...
    def notify(self, message: str, *, title: str = ..., severity: Any = ..., timeout: float | None = ...,
               markup: bool = ...) -> None: ...


@dataclass
class Suggestion:
    """The suggestion being shown (or streamed) at `anchor`."""

    request_id: int | None  # None: served from the cache
    anchor: Location  # where the not-yet-consumed part starts
    full: str = ""  # everything the engine produced for this request so far
    consumed: str = ""  # the part the user has typed through or accepted
    streaming: bool = True
    alternatives: Alternatives | None = None  # once it has finished (Alt+] / Alt+[ cycle)
    source: Source = "engine"
    record: CompletionRecord | None = None  # the request that made it (None: from the cache)

    @property
    def remaining(self) -> str:
        return self.full[len(self.consumed):] if self.full.startswith(self.consumed) else ""


class SuggestionController:
    """One editor's suggestion: what is asked for and when, what streams, what is shown."""

    def __init__(self, host: SuggestionHost, completer: Completer | None) -> None:
        self.host = host
        self.completer = completer
        self.ghost: Suggestion | None = None
        self.shown = ""  # the part of the suggestion on screen now
        self.marker = ""  # "1/3" drawn after a suggestion that has alternatives
        self.debounce = AdaptiveDebounce(completer.options.debounce_s if completer else 0.25)
        self.keystroke_at = time.monotonic()  # the latest edit or cursor move
        # The cursor moved and nothing was typed since: the move's prompt read (the Prewarmer) is
        # what the next request there needs, and no idle prewarm may replace it.
        self.rests_after_move = False
        self._debounce: Timer | None = None
        self._redraw: Timer | None = None

    # -- what is shown ----------------------------------------------------------------------------

    @property
    def source(self) -> Source | None:
        return self.ghost.source if self.ghost is not None else None

    @property
    def pending(self) -> bool:
        """A debounce timer or an engine request is under way."""
        return (self._debounce is not None) or (self.ghost is not None and self.ghost.streaming)

    def update_shown(self, *, drawn: bool) -> bool:
        """Work out what of the suggestion shows at the cursor now; False when nothing changed
        (`drawn`: the editor still draws suggestion rows)."""
        if self._redraw is not None:
            self._redraw.stop()
            self._redraw = None
        host, ghost = self.host, self.ghost
        shown = ""
        if ghost is not None and host.cursor_is_caret() and host.cursor_location == ghost.anchor:
            line_after, following = host.text_after(ghost.anchor, FOLLOWING_LINES)
            shown = visible_ghost(ghost.remaining, line_after, following)
        alts = ghost.alternatives if ghost is not None and shown else None
        marker = alts.marker if alts is not None else ""
        if shown == self.shown and marker == self.marker and (shown or not drawn):
            return False
        self.shown, self.marker = shown, marker
        if shown and ghost is not None and ghost.record is not None and not ghost.record.shown:
            ghost.record.shown = True
            if ghost.source == "engine":  # how long a request takes to show: the pause adapts
                self.debounce.response(time.monotonic() - ghost.record.keystroke_at)
        return True

    # -- what the editor reports ------------------------------------------------------------------

    def consumes(self, text: str, start: Location, end: Location) -> bool:
        """An edit replacing start..end with `text` types through the suggestion."""
        ghost, host = self.ghost, self.host
        return (ghost is not None and bool(text) and start == end == ghost.anchor == host.cursor_location
                and host.cursor_is_caret() and ghost.remaining.startswith(text))

    def keystroke(self, *, line_break: bool = False) -> None:
        self.keystroke_at = time.monotonic()
        self.debounce.keystroke(self.keystroke_at, line_break=line_break)

    def edited(self, text: str, consumed: bool, end: Location, *, line_break: bool) -> None:
        """An edit is in the document (`consumed`: it typed through the suggestion; `end`: where
        it ended). `keystroke_at` was set before it (the time budget counts from the key)."""
        self.rests_after_move = False
        self.debounce.keystroke(self.keystroke_at, line_break=line_break)
        ghost = self.ghost
        if consumed and ghost is not None:
            self._stop_alternatives(ghost)  # any edit stops them; those found stay
            ghost.consumed += text
            ghost.anchor = end
            self.host.redraw_suggestion()
            if not self.shown and not ghost.streaming:
                self._after_accept()  # typed or accepted through to its end: the next one
        else:
            self.dismiss()
            self.schedule()

    def moved(self, selection_end: Location, caret: bool) -> bool:
        """The selection changed without an edit; False when that is the suggestion's own place."""
        ghost = self.ghost
        if ghost is not None and caret and selection_end == ghost.anchor:
            return False
        self.keystroke()
        self.dismiss()
        self.stop_schedule()  # a move asks for nothing: a suggestion follows typing or the complete key
        self.rests_after_move = True
        return True

    # -- accepting --------------------------------------------------------------------------------

    def accept(self, how: str = "all") -> None:
        """Accept all of the suggestion shown, its next "word" or its next "line"."""
        piece = {"all": self.shown, "word": next_word(self.shown), "line": next_line(self.shown)}[how]
        ghost = self.ghost
        if not piece or ghost is None:
            return
        self.host.insert_suggestion(piece, ghost.anchor)  # consumed through edited(): the rest stays
        if how == "all" and self.ghost is ghost:  # (edited() already moved on when it consumed it all)
            self._after_accept()

    def _after_accept(self) -> None:
        """The whole suggestion is in the document now: show the next one (prefetched: at once)."""
        self.dismiss(keep_prefetch=True)
        if self.completer is not None and self.completer.options.auto:
            self.complete(manual=False)

    def alternative(self, step: int) -> None:
        """Show the next (1) or previous (-1) alternative suggestion."""
        ghost = self.ghost
        alts = ghost.alternatives if ghost is not None else None
        if ghost is None or alts is None or not self.shown:
            return
        text = alts.step(step, ghost.consumed)
        if text is not None:
            ghost.full = text
            self.host.redraw_suggestion()

    def dismiss(self, *, cancel: bool = True, keep_prefetch: bool = False) -> None:
        """Drop the suggestion; `cancel` its engine request and (unless `keep_prefetch`) the prefetch."""
        ghost, host = self.ghost, self.host
        self.ghost = None
        self._stop_alternatives(ghost)
        completer = self.completer
        if cancel and completer is not None and host.is_mounted:
            if ghost is not None and ghost.streaming and ghost.request_id is not None:
                host.run_worker(completer.cancel(ghost.request_id), exit_on_error=False)
            prefetch = None if keep_prefetch else completer.drop_prefetch()
            if prefetch is not None:
                host.run_worker(completer.cancel(prefetch), exit_on_error=False)
        host.redraw_suggestion()

    # -- requests ---------------------------------------------------------------------------------

    def stop_schedule(self) -> None:
        if self._debounce is not None:
            self._debounce.stop()
            self._debounce = None

    def schedule(self) -> None:
        """(Re)start the typing-pause timer for an automatic completion (adaptive length)."""
        self.stop_schedule()
        completer = self.completer
        if completer is None or not completer.options.auto or not self.host.has_focus:
            return
        self.debounce.start_s = completer.options.debounce_s
        self._debounce = self.host.set_timer(self.debounce.delay_s, self._debounced)

    def _debounced(self) -> None:
        self._debounce = None
        self.complete(manual=False)

    def _before_much_text(self) -> bool:
        """More than `max_line_suffix` characters follow the cursor on its line: a suggestion
        there would be drawn into the middle of existing code (and from a model without FIM
        tokens, written without seeing it), so only the complete key asks (llama.vim's rule)."""
        completer = self.completer
        if completer is None:
            return False
        line_after, _ = self.host.text_after(self.host.cursor_location, 0)
        return len(line_after.rstrip()) > completer.options.max_line_suffix

    def complete(self, *, manual: bool) -> None:
        """Ask for a suggestion at the cursor (the complete key, or the typing pause)."""
        # The keystroke that asked: the complete key itself, or the last edit before the pause
        # (the time budget and the info line's "first text" count from it).
        asked_at = time.monotonic() if manual else self.keystroke_at
        completer, host = self.completer, self.host
        if completer is None or host.read_only or not host.cursor_is_caret():
            return
        if not completer.ready:
            if manual:
                host.notify("The model is still loading.", severity="warning", timeout=3)
            return
        if not manual and (completer.blocked_by or self._before_much_text()):
            return
        if self.ghost is not None and self.shown:
            return  # a suggestion is on screen: asking again must not make it vanish
        prefix, suffix = host.prefix_suffix()
        cached = completer.cache.get(prefix, suffix)
        self.dismiss(cancel=False)
        if cached is not None:
            self.ghost = Suggestion(None, host.cursor_location, full=cached, streaming=False, source="cache",
                                    record=completer.log.answered(cache_key(prefix, suffix)))
            host.redraw_suggestion()
            if not self.shown:
                self.ghost = None
            else:
                self._prefetch_next()
            return
        pre = completer.prefetch
        if pre is not None and pre.key == cache_key(prefix, suffix):  # asked ahead: follow it
            self.ghost = Suggestion(pre.request_id, host.cursor_location, full=pre.shown,
                                    source="prefetch", record=pre.record)
            host.redraw_suggestion()
            return
        completer.prefetch = None  # the engine supersedes it with the request below
        request_id = completer.new_request_id()
        path = str(host.path) if host.path else None
        request = completer.build_request(prefix, suffix, path, keystroke_at=asked_at)
        record = completer.record(request_id, request, asked_at)
        self.ghost = Suggestion(request_id, host.cursor_location, record=record)
        host.run_worker(self._stream(completer, request_id, request, record), group="completion",
                        exit_on_error=False)

    def _prefetch_next(self) -> None:
        """Ask now for the suggestion that follows the shown one, as if it were accepted: Tab then
        shows it at once. Never while a chat answers; a user request supersedes it."""
        completer, host = self.completer, self.host
        if completer is None or not completer.options.auto or completer.blocked_by or not self.shown:
            return
        prefix, suffix = host.prefix_suffix()
        prefix += self.shown
        key = cache_key(prefix, suffix)
        if key in completer.cache or (completer.prefetch is not None and completer.prefetch.key == key):
            return
        request_id = completer.new_request_id()
        request = completer.build_request(prefix, suffix, str(host.path) if host.path else None)
        pre = completer.start_prefetch(request_id, request, key)
        host.run_worker(self._stream(completer, request_id, request, pre.record), group="completion",
                        exit_on_error=False)

    async def _stream(self, completer: Completer, request_id: int, request: CompletionRequest,
                      record: CompletionRecord) -> None:
        text = ""
        async for event in completer.stream(request_id, request, record):
            ghost = self.ghost
            if ghost is not None and ghost.request_id != request_id:
                ghost = None  # another request's suggestion
            if isinstance(event, TextDelta):
                text += event.text
                live = live_completion(text, request)  # the finished text's rules: it only grows
                pre = completer.prefetch
                if pre is not None and pre.request_id == request_id:
                    pre.shown = live
                if ghost is not None and live != ghost.full:
                    ghost.full = live
                    if not self.shown:
                        self.host.redraw_suggestion()  # the first text: at once
                    elif self._redraw is None:
                        self._redraw = self.host.set_timer(STREAM_REDRAW_S, self._redraw_now)
            elif isinstance(event, Finished):
                if ghost is None:
                    continue
                if event.reason == "error" and event.error:
                    self.host.notify(event.error, title="Completion failed", severity="error", markup=False)
                if event.answered:
                    ghost.full = event.text  # post-processed (e.g. FIM-trimmed) final text
                ghost.streaming = False
                self.host.redraw_suggestion()
                if not self.shown:
                    self.ghost = None
                else:
                    self._prefetch_next()
                    if event.answered:  # a suggestion the predict budget cut too
                        self._fetch_alternatives(ghost, request)

    def _redraw_now(self) -> None:
        self._redraw = None
        self.host.redraw_suggestion()

    # -- alternatives -----------------------------------------------------------------------------

    def _fetch_alternatives(self, ghost: Suggestion, request: CompletionRequest) -> None:
        """The suggestion shown has finished: compute alternatives while nothing changes."""
        completer = self.completer
        engine = completer.engine if completer is not None else None
        if completer is None or engine is None or not engine.info.alternatives:
            return
        alts = ghost.alternatives = Alternatives([ghost.full])

        async def after_prefetch() -> None:
            # The prefetch (what Tab shows next) goes first: the engine runs one completion at a
            # time, and a newer one would end it.
            while completer.prefetch is not None and self.ghost is ghost:
                await asyncio.sleep(0.02)
            if self.ghost is ghost:
                await alternatives.fetch(completer, request, alts, lambda: self.ghost is ghost,
                                         self.host.redraw_suggestion)

        self.host.run_worker(after_prefetch(), group="alternatives", exit_on_error=False)

    def _stop_alternatives(self, ghost: Suggestion | None) -> None:
        alts = ghost.alternatives if ghost is not None else None
        if alts is not None and alts.fetching is not None and self.completer is not None and self.host.is_mounted:
            self.host.run_worker(self.completer.cancel(alts.fetching), exit_on_error=False)
            alts.fetching = None
