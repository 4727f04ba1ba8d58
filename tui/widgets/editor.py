"""The code editor: Textual's TextArea with pygments highlighting and multi-line ghost text.

Ghost text is a suggestion drawn at the cursor that is not (yet) part of the document. Textual's
own `TextArea.suggestion` draws a single line in a single style; here the first suggested line is
spliced into the cursor line and further lines are drawn as virtual rows below it (pushing the
document down), each coloured like code in the theme's dimmed ghost style.

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
from typing import Mapping

from pygments.token import Comment
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.color import Color
from textual.document._document_navigator import DocumentNavigator
from textual.geometry import Offset, Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.timer import Timer
from textual.widgets import TextArea
from textual.widgets.text_area import Edit, EditResult, Selection, TextAreaTheme

from specterm.engine import Finished, TextDelta
from specterm.engine.completion import live_completion

from ..themes import SpectermTheme
from . import alternatives
from .alternatives import Alternatives
from .completion import DEFAULT_ACCEPT_KEYS, Completer
from .debounce import AdaptiveDebounce
from .document import BlockLines, EditorDocument, UnwrappedDocument
from .ghost import cache_key, next_line, next_word, visible_ghost
from .highlight import (
    WHOLE_FILE_LINES,
    WINDOW_MARGIN_LINES,
    ghost_texts,
    highlight_map,
    highlight_rows,
    language_name,
    lexer_for,
    window_bounds,
)
from .indentation import dedent_to, detect_indentation
from .suggestions import CompletionRecord, Source

# Alternative suggestions: handled in _on_key, since a terminal's alt+n arrives as a printable "n"
# that TextArea would insert before any binding ran.
ALTERNATIVE_KEYS = {"alt+right_square_bracket": 1, "alt+n": 1, "alt+left_square_bracket": -1, "alt+p": -1}
FOLLOWING_LINES = 12  # document lines compared against a suggestion's tail
PREFIX_ROWS, SUFFIX_ROWS = 400, 120  # the rows around the cursor a completion request sees
# The prefix window's first row moves in steps of this many rows: moved a row at a time, every new
# line would change the prompt's start, and the model would read it all again (3,700 tokens, 15 s
# for the demo model on 2 cores, past row 400 of a file).
PREFIX_STEP = 100
SAMPLE_CHARS = 200_000  # the start of a file its indentation is read from
INCREMENTAL_HIGHLIGHT_LINES = 100  # above this, keystrokes re-lex only the edited lines at once (6-20 ms a 4 KB file)
FULL_HIGHLIGHT_DELAY_S = 0.3
# The pass after a pause waits while a suggestion generates, at most this long from the pause: it
# lexes the file and redraws every row (~20 ms for 13 KB here), which on 2 cores took the UI's
# core from the engine exactly when the user waits for it.
FULL_HIGHLIGHT_WAIT_S = 2.0
FULL_HIGHLIGHT_RETRY_S = 0.1
LINE_CACHE_ROWS = 128  # rendered rows kept (Textual's default is 1,024)
# While a suggestion streams, it is redrawn at most this often: the first text at once, then in
# batches. Drawing per token kept the UI thread busy and the engine thread waiting for the GIL.
# Not 30 a second: a redraw takes a core from the engine's next pass. Measured in session 16,
# when the app still kept a core for the UI on 2-core machines: in-app / headless 0.69-0.87 in
# eight replays at 30 Hz, 0.77-0.97 in five at 10 Hz (within this host's noise).
STREAM_REDRAW_S = 0.1


@dataclass
class _Ghost:
    """The suggestion being shown (or streamed) at `anchor`."""

    request_id: int | None  # None: served from the cache
    anchor: tuple[int, int]  # where the not-yet-consumed part starts
    full: str = ""  # everything the engine produced for this request so far
    consumed: str = ""  # the part the user has typed through or accepted
    streaming: bool = True
    alternatives: Alternatives | None = None  # once it has finished (Alt+] / Alt+[ cycle)
    source: Source = "engine"
    record: CompletionRecord | None = None  # the request that made it (None: from the cache)

    @property
    def remaining(self) -> str:
        return self.full[len(self.consumed):] if self.full.startswith(self.consumed) else ""


class CodeEditor(TextArea):
    """A TextArea for one file, with ghost-text completions from a `Completer`."""

    BINDINGS = [
        Binding("ctrl+@,ctrl+space,ctrl+backslash", "complete", "Complete", show=False),
        Binding("ctrl+home", "document_start", "Start of file", show=False),
        Binding("ctrl+end", "document_end", "End of file", show=False),
        Binding("ctrl+shift+home", "document_start(True)", "Select to start of file", show=False),
        Binding("ctrl+shift+end", "document_end(True)", "Select to end of file", show=False),
    ]

    class Copied(Message):
        """The user copied a selection (the context ring keeps it)."""

        def __init__(self, editor: "CodeEditor", text: str) -> None:
            super().__init__()
            self.editor = editor
            self.text = text

    class Moved(Message):
        """The cursor moved without an edit (keys or the mouse): a request there follows the
        typing pause, so its prompt can be read now (EditorTabs prewarms)."""

        def __init__(self, editor: "CodeEditor") -> None:
            super().__init__()
            self.editor = editor

    class GhostChanged(Message):
        """The visible ghost text changed (tests and the replay bench listen); `at` is when it was
        drawn (time.monotonic()), the message may be handled later; `edits` is the editor's edit
        count then (a change of it means the text changed: a shorter ghost is no vanish)."""

        def __init__(self, editor: "CodeEditor", text: str) -> None:
            super().__init__()
            self.editor = editor
            self.text = text
            self.at = time.monotonic()
            self.edits = editor.edits

    def __init__(
        self,
        text: str = "",
        *,
        path: Path | None = None,
        theme: SpectermTheme,
        completer: Completer | None = None,
        id: str | None = None,
    ) -> None:
        # Set before TextArea.__init__, which already builds the highlight map.
        self.path = path
        self.completer = completer
        self._lexer = lexer_for(path)
        self.language_label = language_name(self._lexer)
        self._ghost: _Ghost | None = None
        self._ghost_visible = ""
        self._ghost_lines: list[Text] = []
        self._ghost_moves_tail = False
        self._ghost_marker = ""  # "1/3" drawn after a suggestion that has alternatives
        self._editing = False
        self._debounce: Timer | None = None
        self.edits = 0  # edits made so far (GhostChanged carries it)
        # The cursor moved and nothing was typed since: the move's prompt read (EditorTabs) is
        # what the next request there needs, and no idle prewarm may replace it.
        self.rests_after_move = False
        self._redraw: Timer | None = None
        self.debounce = AdaptiveDebounce(completer.options.debounce_s if completer else 0.25)
        self._keystroke_at = time.monotonic()  # the latest edit or cursor move
        self._full_highlight: Timer | None = None
        self._full_highlight_by = 0.0  # monotonic(): the pass after a pause waits no longer
        self._highlight_window: tuple[int, int] | None = None  # rows lexed in a large file
        self._current_edit: Edit | None = None
        self._spectheme = theme
        self._rendering = False  # inside render_line (see `text`)
        # Textual's __init__ builds a plain Document and its wrapped view of the text, then ours
        # (`_set_document`), then ours again from a join of the text when it sets the language:
        # for a 5 MB file three sets of line strings, a 10 MB join and a wrap table per line,
        # seconds and tens of MB that the allocator keeps. It gets an empty text; ours is built
        # once, below (for an empty file too: every editor's lines are `BlockLines`).
        super().__init__(
            "",
            id=id,
            soft_wrap=False,
            tab_behavior="indent",
            show_line_numbers=True,
            highlight_cursor_line=True,
            compact=True,
        )
        # Rendered rows now outlive edits elsewhere (`_forget_rendered_row`): Textual's 1,024 kept
        # strips were 1.6 MB per editor; a few screens' worth is what scrolling back reuses.
        self._line_cache.maxsize = LINE_CACHE_ROWS
        self._follow_indentation(text)
        self._set_document(text, None)
        self.apply_theme(theme)

    @property
    def lines(self) -> BlockLines:
        """The document's lines (the editor's own document keeps them in blocks)."""
        return self.document.lines  # type: ignore[return-value]

    def _set_document(self, text: str, language: str | None) -> None:
        """Textual's, with a document and view that stay fast in multi-megabyte files
        (tui/widgets/document.py). Highlighting is pygments', so a tree-sitter `language` is not
        used: every editor has this document."""
        self._highlight_query = None
        self.document = EditorDocument(text)
        self.wrapped_document = UnwrappedDocument(self.document, tab_width=self.indent_width)
        self.navigator = DocumentNavigator(self.wrapped_document)
        self._build_highlight_map()
        self.move_cursor((0, 0))
        self._rewrap_and_refresh_virtual_size()

    # -- theme and highlighting -----------------------------------------------------------------

    def apply_theme(self, theme: SpectermTheme) -> None:
        self._spectheme = theme
        name = f"specterm-{theme.name}"
        self.register_theme(TextAreaTheme(name=name, syntax_styles=theme.syntax_styles()))
        if self.theme == name:
            self._set_theme(name)  # same name, reloaded file: apply the new styles
        else:
            self.theme = name
        self._build_highlight_map()
        self._ghost_lines = []  # re-colour a visible suggestion for the new background
        self._ghost_visible = ""
        self._render_ghost()

    def _build_highlight_map(self) -> None:
        """Re-highlight after a change. Small files: lex everything now. Large files: re-lex only
        the edited lines now (shifting the rest) and the whole file once typing pauses, so a
        keystroke never waits for pygments to lex thousands of lines."""
        edit = getattr(self, "_current_edit", None)
        if (
            edit is not None
            and self.is_mounted
            and self._lexer is not None
            and edit._edit_result is not None
            and self.document.line_count > INCREMENTAL_HIGHLIGHT_LINES
        ):
            row = edit.top[0]
            if edit.bottom[0] == row == edit._edit_result.end_location[0] and not self.soft_wrap:
                self._forget_rendered_row(row)  # the other rows' text and colours are unchanged
            else:
                self._line_cache.clear()
            self._highlight_edited_lines(edit)
            if self._full_highlight is not None:
                self._full_highlight.stop()
            self._full_highlight_by = time.monotonic() + FULL_HIGHLIGHT_WAIT_S
            self._full_highlight = self.set_timer(FULL_HIGHLIGHT_DELAY_S, self._highlight_after_pause)
            return
        self._line_cache.clear()
        self._highlight_all()

    def _forget_rendered_row(self, row: int) -> None:
        """Drop the rendered strips of one document row. Why: a keystroke used to drop every
        visible row's (Textual clears its line cache on each edit), and re-rendering ~40 rows was
        most of a keystroke's time in a large file. Textual keys the cache by (size, scroll x,
        the row's absolute y, ...); a key of another shape drops everything."""
        cache = self._line_cache
        stale = []
        for key in cache.keys():
            if not (isinstance(key, tuple) and len(key) > 2 and isinstance(key[2], int)):
                cache.clear()
                return
            if key[2] == row:
                stale.append(key)
        for key in stale:
            cache.discard(key)

    def _highlight_after_pause(self) -> None:
        """The whole-file pass after typing paused (it mends what the edited lines' own re-lex
        cannot see, such as a string opened above them), once no suggestion is generating."""
        completer = self.completer
        if completer is not None and completer.generating and time.monotonic() < self._full_highlight_by:
            self._full_highlight = self.set_timer(FULL_HIGHLIGHT_RETRY_S, self._highlight_after_pause)
            return
        self._highlight_all()

    def _highlight_all(self) -> None:
        """Lex the whole file, or in a large one the rows around the viewport (lexing a
        megabyte per pause would freeze the editor for seconds)."""
        self._full_highlight = None
        self._line_cache.clear()
        self._highlights.clear()
        doc = self.document
        if doc.line_count <= WHOLE_FILE_LINES or self._lexer is None:
            self._highlight_window = None
            self._highlights.update(highlight_map(self._lexer, self.text))
        else:
            top = self.scroll_offset.y if self.is_mounted else 0
            start, end = window_bounds(doc.lines, top, top + max(self.size.height, 1))
            self._highlight_window = (start, end)
            self._highlights.update(highlight_rows(self._lexer, doc.lines, start, end))
        self.refresh()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        window = self._highlight_window
        if window is None or self._full_highlight is not None:
            return
        top, bottom = int(new_value), int(new_value) + self.size.height
        start, end = window
        near = WINDOW_MARGIN_LINES
        if (start > 0 and top < start + near) or (end < self.document.line_count and bottom > end - near):
            self._full_highlight = self.set_timer(0.05, self._highlight_all)

    def _highlight_edited_lines(self, edit: Edit) -> None:
        top = edit.top[0]
        old_bottom = edit.bottom[0]
        assert edit._edit_result is not None  # the caller checked
        new_bottom = edit._edit_result.end_location[0]
        shift = new_bottom - old_bottom
        old = dict(self._highlights)
        self._highlights.clear()
        for row, ranges in old.items():
            if row < top:
                self._highlights[row] = ranges
            elif row > old_bottom:
                self._highlights[row + shift] = ranges
        lines = [self.document[r] for r in range(top, new_bottom + 1)]
        for offset, ranges in highlight_map(self._lexer, "\n".join(lines)).items():
            self._highlights[top + offset] = ranges

    # -- public ghost API -----------------------------------------------------------------------

    @property
    def ghost_text(self) -> str:
        """The suggestion as currently shown ("" when none)."""
        return self._ghost_visible

    @property
    def ghost_source(self) -> Source | None:
        """Where the suggestion at the cursor (shown or still coming) is from: the engine, a
        prefetch or the cache; None when there is none."""
        return self._ghost.source if self._ghost is not None else None

    @property
    def accept_keys(self) -> Mapping[str, str]:
        """Key name -> accept action while a suggestion is shown (`[keys]` in config.toml)."""
        return self.completer.options.accept_keys if self.completer is not None else DEFAULT_ACCEPT_KEYS

    @property
    def completion_pending(self) -> bool:
        """A debounce timer or an engine request is under way."""
        return (self._debounce is not None) or (self._ghost is not None and self._ghost.streaming)

    def action_complete(self) -> None:
        """Ask for a suggestion now (the manual completion key)."""
        self._start_completion(manual=True)

    def action_accept_completion(self) -> None:
        self._accept(self._ghost_visible, finish=True)

    def action_accept_word(self) -> None:
        self._accept(next_word(self._ghost_visible), finish=False)

    def action_accept_line(self) -> None:
        self._accept(next_line(self._ghost_visible), finish=False)

    @property
    def alternatives_marker(self) -> str:
        """"2/3" while a suggestion with alternatives is shown ("" otherwise)."""
        return self._ghost_marker

    def action_alternative(self, step: int) -> None:
        """Show the next (1) or previous (-1) alternative suggestion."""
        ghost = self._ghost
        alts = ghost.alternatives if ghost is not None else None
        if ghost is None or alts is None or not self._ghost_visible:
            return
        text = alts.step(step, ghost.consumed)
        if text is not None:
            ghost.full = text
            self._render_ghost()

    def _fetch_alternatives(self, ghost: _Ghost, request) -> None:
        """The suggestion shown has finished: compute alternatives while nothing changes."""
        completer = self.completer
        engine = completer.engine if completer is not None else None
        if completer is None or engine is None or not engine.info.alternatives:
            return
        alts = ghost.alternatives = Alternatives([ghost.full])

        async def after_prefetch() -> None:
            # The prefetch (what Tab shows next) goes first: the engine runs one completion at a
            # time, and a newer one would end it.
            while completer.prefetch is not None and self._ghost is ghost:
                await asyncio.sleep(0.02)
            if self._ghost is ghost:
                await alternatives.fetch(completer, request, alts, lambda: self._ghost is ghost,
                                         self._render_ghost)

        self.run_worker(after_prefetch(), group="alternatives", exit_on_error=False)

    def _stop_alternatives(self, ghost: _Ghost | None) -> None:
        alts = ghost.alternatives if ghost is not None else None
        if alts is not None and alts.fetching is not None and self.completer is not None and self.is_mounted:
            self.run_worker(self.completer.cancel(alts.fetching), exit_on_error=False)
            alts.fetching = None

    def action_dismiss_completion(self) -> None:
        self._dismiss(cancel=True)

    def insert_block(self, block: str) -> None:
        """Insert a code block (e.g. from a chat answer) over the selection or at the cursor, on
        lines of its own: text before it on the line stays above, text after it goes below. One
        undo step."""
        start, end = sorted(self.selection)
        after = self.document[end[0]][end[1]:]
        text = ("\n" if start[1] > 0 else "") + block.rstrip("\n") + ("\n" if after else "")
        self.history.checkpoint()
        self.replace(text, start, end)
        self.history.checkpoint()

    def action_copy(self) -> None:
        super().action_copy()
        self.post_message(self.Copied(self, self.selected_text))

    def action_document_start(self, select: bool = False) -> None:
        self.move_cursor((0, 0), select=select)

    def action_document_end(self, select: bool = False) -> None:
        last = self.document.line_count - 1
        self.move_cursor((last, len(self.document[last])), select=select)

    # -- keys -------------------------------------------------------------------------------------

    async def _on_key(self, event: events.Key) -> None:
        if event.key in ALTERNATIVE_KEYS:
            event.stop()
            event.prevent_default()
            self.action_alternative(ALTERNATIVE_KEYS[event.key])
            return
        accept = self.accept_keys.get(event.key) if self._ghost_visible else None
        if accept is not None:
            event.stop()
            event.prevent_default()
            await self.run_action(accept)
            return
        if event.key == "escape":
            event.prevent_default()  # TextArea's own Esc moves the focus on: the next keys went nowhere
            if self._ghost_visible or self.completion_pending:
                event.stop()
                self._dismiss(cancel=True)
            return  # nothing to dismiss: the focus stays, the key goes on to the app (find bar)
        if event.key == "enter" and not self.read_only:
            event.stop()
            event.prevent_default()
            self._replace_via_keyboard("\n" + self._next_line_indent(), *self.selection)
            return
        if await self._run_own_binding(event):
            return
        await super()._on_key(event)

    async def _run_own_binding(self, event: events.Key) -> bool:
        """Run the editor's own binding for a key here, in order with the keys it inserts.
        Textual runs a focused widget's bindings once the key has bubbled up to the app, while
        TextArea inserts characters at once: keys that arrived together (a fast typist on a busy
        app; tmux send-keys) had `Down End Y` put Y on the line the cursor was leaving."""
        if event.is_printable:
            return False
        active = self.screen.active_bindings.get(event.key)
        if active is None or active.node is not self or not active.enabled or active.binding.priority:
            return False  # someone else's key (the app's, a screen's): it goes on as before
        event.stop()
        event.prevent_default()
        await self.run_action(active.binding.action)
        return True

    def action_delete_left(self) -> None:
        """Backspace: in leading spaces, one level of the file's indentation; else TextArea's."""
        row, col = self.selection.end
        if (not self.read_only and self.selection.is_empty and self.indent_type == "spaces" and col
                and not self.document[row][:col].strip(" ")):
            self._delete_via_keyboard((row, dedent_to(col, self.indent_width)), (row, col))
            return
        super().action_delete_left()

    def _next_line_indent(self) -> str:
        """Keep the cursor line's indentation; one level more after an opening `:` or bracket."""
        row, col = self.cursor_location
        line = self.document[row]
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if line[:col].rstrip().endswith((":", "{", "[", "(")):
            indent += "\t" if self.indent_type == "tabs" else " " * self.indent_width
        return indent[: max(0, col)] if col < len(indent) else indent

    # -- edits and cursor moves -----------------------------------------------------------------

    def edit(self, edit: Edit) -> EditResult:
        ghost = self._ghost
        consumes = (
            ghost is not None
            and bool(edit.text)
            and edit.from_location == edit.to_location == ghost.anchor == self.cursor_location
            and self.selection.is_empty
            and ghost.remaining.startswith(edit.text)
        )
        self._keystroke_at = time.monotonic()  # before the edit: the time budget counts from the key
        self.rests_after_move = False
        self.edits += 1
        self._editing = True
        self._current_edit = edit
        try:
            result = super().edit(edit)
        finally:
            self._editing = False
            self._current_edit = None
        # Between lines (Enter, or the new line's indentation fixed with Backspace or Tab: blanks
        # typed or deleted, the cursor left in the line's indentation): people pause there, so
        # the request goes out at once.
        row, col = result.end_location
        self.debounce.keystroke(self._keystroke_at, line_break=not edit.text.strip(" \t\r\n") and (
            "\n" in edit.text or not self.document[row][:col].strip()))
        if consumes and ghost is not None:
            self._stop_alternatives(ghost)  # any edit stops them; those found stay
            ghost.consumed += edit.text
            ghost.anchor = result.end_location
            self._render_ghost()
            if not self._ghost_visible and not ghost.streaming:
                self._after_accept()  # typed or accepted through to its end: the next one
        else:
            self._dismiss(cancel=True)
            self._schedule()
        return result

    def undo(self) -> None:
        self._dismiss(cancel=True)
        super().undo()

    def redo(self) -> None:
        self._dismiss(cancel=True)
        super().redo()

    def load_text(self, text: str) -> None:
        self._dismiss(cancel=True)
        self._follow_indentation(text)
        super().load_text(text)

    def _follow_indentation(self, text: str) -> None:
        """Indent as the file does (tabs, or its unit of spaces): Enter, Tab and Backspace add
        and remove the file's levels. Set before the document's view is built (its tab width)."""
        found = detect_indentation(text[:SAMPLE_CHARS].split("\n"))
        self.indent_type = found.kind
        self.set_reactive(TextArea.indent_width, found.width)

    def _watch_selection(self, previous_selection: Selection, selection: Selection) -> None:
        super()._watch_selection(previous_selection, selection)
        if self._editing or not self.is_mounted or previous_selection == selection:
            return
        ghost = self._ghost
        if ghost is not None and selection.is_empty and selection.end == ghost.anchor:
            return
        self._keystroke()
        self._dismiss(cancel=True)
        self._stop_schedule()  # a move asks for nothing: a suggestion follows typing or the complete key
        self.rests_after_move = True
        if selection.is_empty:
            self.post_message(self.Moved(self))

    def _on_blur(self, event: events.Blur) -> None:
        # The suggestion stays (hidden while unfocused) so the command palette can accept it;
        # only a pending automatic request is dropped.
        self._stop_schedule()
        self._line_cache.clear()

    # -- requests ---------------------------------------------------------------------------------

    def _keystroke(self, *, line_break: bool = False) -> None:
        self._keystroke_at = time.monotonic()
        self.debounce.keystroke(self._keystroke_at, line_break=line_break)

    def _stop_schedule(self) -> None:
        if self._debounce is not None:
            self._debounce.stop()
            self._debounce = None

    def _schedule(self) -> None:
        """(Re)start the typing-pause timer for an automatic completion (adaptive length)."""
        self._stop_schedule()
        completer = self.completer
        if completer is None or not completer.options.auto or not self.has_focus:
            return
        self.debounce.start_s = completer.options.debounce_s
        self._debounce = self.set_timer(self.debounce.delay_s, self._debounced)

    def _debounced(self) -> None:
        self._debounce = None
        self._start_completion(manual=False)

    def _before_much_text(self) -> bool:
        """More than `max_line_suffix` characters follow the cursor on its line: a suggestion
        there would be drawn into the middle of existing code (and from a model without FIM
        tokens, written without seeing it), so only the complete key asks (llama.vim's rule)."""
        completer = self.completer
        if completer is None:
            return False
        row, col = self.cursor_location
        return len(self.document[row][col:].rstrip()) > completer.options.max_line_suffix

    def prefix_suffix(self, at: tuple[int, int] | None = None) -> tuple[str, str]:
        """The text before and after the cursor (or `at`) that a completion request sees."""
        row, col = self.cursor_location if at is None else at
        doc = self.document
        start_row = max(0, -(-(row - PREFIX_ROWS) // PREFIX_STEP) * PREFIX_STEP)
        end_row = min(doc.line_count - 1, row + SUFFIX_ROWS)
        prefix = doc.get_text_range((start_row, 0), (row, col))
        suffix = doc.get_text_range((row, col), (end_row, len(doc[end_row])))
        return prefix, suffix

    def head_window(self) -> tuple[str, str]:
        """`prefix_suffix` as if the cursor stood at the end of the file's first PREFIX_ROWS
        rows: a request anywhere there has a prefix that starts as this one does."""
        row = min(self.document.line_count - 1, PREFIX_ROWS - 1)
        return self.prefix_suffix((row, len(self.document[row])))

    def _start_completion(self, *, manual: bool) -> None:
        # The keystroke that asked: the complete key itself, or the last edit before the pause
        # (the time budget and the info line's "first text" count from it).
        asked_at = time.monotonic() if manual else self._keystroke_at
        completer = self.completer
        if completer is None or self.read_only or not self.selection.is_empty:
            return
        if not completer.ready:
            if manual:
                self.notify("The model is still loading.", severity="warning", timeout=3)
            return
        if not manual and (completer.blocked_by or self._before_much_text()):
            return
        if self._ghost is not None and self._ghost_visible:
            return  # a suggestion is on screen: asking again must not make it vanish
        prefix, suffix = self.prefix_suffix()
        cached = completer.cache.get(prefix, suffix)
        self._dismiss(cancel=False)
        if cached is not None:
            self._ghost = _Ghost(None, self.cursor_location, full=cached, streaming=False, source="cache",
                                 record=completer.log.answered(cache_key(prefix, suffix)))
            self._render_ghost()
            if not self._ghost_visible:
                self._ghost = None
            else:
                self._prefetch_next()
            return
        pre = completer.prefetch
        if pre is not None and pre.key == cache_key(prefix, suffix):  # asked ahead: follow it
            self._ghost = _Ghost(pre.request_id, self.cursor_location, full=pre.shown,
                                 source="prefetch", record=pre.record)
            self._render_ghost()
            return
        completer.prefetch = None  # the engine supersedes it with the request below
        request_id = completer.new_request_id()
        path = str(self.path) if self.path else None
        request = completer.build_request(prefix, suffix, path, keystroke_at=asked_at)
        record = completer.record(request_id, request, asked_at)
        self._ghost = _Ghost(request_id, self.cursor_location, record=record)
        self.run_worker(
            self._stream(completer, request_id, request, record),
            group="completion",
            exit_on_error=False,
        )

    def _prefetch_next(self) -> None:
        """Ask now for the suggestion that follows the shown one, as if it were accepted: Tab then
        shows it at once. Never while a chat answers; a user request supersedes it."""
        completer = self.completer
        if completer is None or not completer.options.auto or completer.blocked_by or not self._ghost_visible:
            return
        prefix, suffix = self.prefix_suffix()
        prefix += self._ghost_visible
        key = cache_key(prefix, suffix)
        if key in completer.cache or (completer.prefetch is not None and completer.prefetch.key == key):
            return
        request_id = completer.new_request_id()
        request = completer.build_request(prefix, suffix, str(self.path) if self.path else None)
        pre = completer.start_prefetch(request_id, request, key)
        self.run_worker(self._stream(completer, request_id, request, pre.record), group="completion",
                        exit_on_error=False)

    async def _stream(self, completer: Completer, request_id: int, request, record: CompletionRecord) -> None:
        text = ""
        async for event in completer.stream(request_id, request, record):
            ghost = self._ghost
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
                    if not self._ghost_visible:
                        self._render_ghost()  # the first text: at once
                    elif self._redraw is None:
                        self._redraw = self.set_timer(STREAM_REDRAW_S, self._redraw_ghost)
            elif isinstance(event, Finished):
                if ghost is None:
                    continue
                if event.reason == "error" and event.error:
                    self.notify(event.error, title="Completion failed", severity="error", markup=False)
                if event.answered:
                    ghost.full = event.text  # post-processed (e.g. FIM-trimmed) final text
                ghost.streaming = False
                self._render_ghost()
                if not self._ghost_visible:
                    self._ghost = None
                else:
                    self._prefetch_next()
                    if event.answered:  # a suggestion the predict budget cut too
                        self._fetch_alternatives(ghost, request)

    def _redraw_ghost(self) -> None:
        self._redraw = None
        self._render_ghost()

    def _dismiss(self, *, cancel: bool, keep_prefetch: bool = False) -> None:
        ghost = self._ghost
        self._ghost = None
        self._stop_alternatives(ghost)
        completer = self.completer
        if cancel and completer is not None and self.is_mounted:
            if ghost is not None and ghost.streaming and ghost.request_id is not None:
                self.run_worker(completer.cancel(ghost.request_id), exit_on_error=False)
            prefetch = None if keep_prefetch else completer.drop_prefetch()
            if prefetch is not None:
                self.run_worker(completer.cancel(prefetch), exit_on_error=False)
        if self._ghost_visible or self._ghost_lines:
            self._render_ghost()

    def _after_accept(self) -> None:
        """The whole suggestion is in the document now: show the next one (prefetched: at once)."""
        self._dismiss(cancel=True, keep_prefetch=True)
        if self.completer is not None and self.completer.options.auto:
            self._start_completion(manual=False)

    def _accept(self, piece: str, *, finish: bool) -> None:
        ghost = self._ghost
        if not piece or ghost is None:
            return
        self.history.checkpoint()
        self.insert(piece, ghost.anchor)  # consumed through edit(): the rest stays
        self.history.checkpoint()
        if finish and self._ghost is ghost:  # (edit() already moved on when it consumed it all)
            self._after_accept()

    # -- drawing ----------------------------------------------------------------------------------

    def _render_ghost(self) -> None:
        if self._redraw is not None:
            self._redraw.stop()
            self._redraw = None
        ghost = self._ghost
        visible = ""
        if ghost is not None and self.selection.is_empty and self.cursor_location == ghost.anchor:
            row, col = ghost.anchor
            doc = self.document
            line = doc[row]
            following = [doc[r] for r in range(row + 1, min(doc.line_count, row + 1 + FOLLOWING_LINES))]
            visible = visible_ghost(ghost.remaining, line[col:], following)
        old_extra = max(0, len(self._ghost_lines) - 1)
        alts = ghost.alternatives if ghost is not None and visible else None
        marker = alts.marker if alts is not None else ""
        if visible == self._ghost_visible and marker == self._ghost_marker and (visible or not self._ghost_lines):
            return
        self._ghost_visible = visible
        self._ghost_marker = marker
        if visible and ghost is not None and ghost.record is not None and not ghost.record.shown:
            ghost.record.shown = True
            if ghost.source == "engine":  # how long a request takes to show: the pause adapts
                self.debounce.response(time.monotonic() - ghost.record.keystroke_at)
        if visible:
            row, col = self.cursor_location
            theme = self._theme
            bgcolor = theme.base_style.bgcolor if theme and theme.base_style else None
            background = Color.from_rich_color(bgcolor) if bgcolor else None
            color_system = self.app.console.color_system  # 16 colours: ghost must not match the background
            self._ghost_lines = ghost_texts(
                self._lexer, self._spectheme, self.document[row][:col], visible, background, color_system
            )
            # A multi-line suggestion goes in between: the rest of the cursor line is drawn after
            # its last line, where it will be once accepted.
            tail = self.document[row][col:] if len(self._ghost_lines) > 1 else ""
            self._ghost_moves_tail = bool(tail)
            if tail:
                self._ghost_lines[-1].append(tail)
            if marker:
                marker_style = self._spectheme.ghost_token_style(Comment, background, color_system)
                self._ghost_lines[-1].append(f"  {marker}", marker_style)
            for ghost_line in self._ghost_lines:
                ghost_line.expand_tabs(self.indent_width)
        else:
            self._ghost_lines = []
            self._ghost_moves_tail = False
        # (TextArea's line cache stays: rows are cached by document row, the suggestion is drawn
        # over them, and _refresh_size clears it when the width changes)
        new_extra = max(0, len(self._ghost_lines) - 1)
        if new_extra != old_extra:  # rows below move: redraw all of it
            self._refresh_size()
            if new_extra:
                row, _ = self.cursor_location
                self.scroll_to_region(
                    Region(0, row, 1, new_extra + 1), animate=False, immediate=True, force=True
                )
            self.refresh()
        else:  # the same rows: redraw only the cursor line and the suggestion's (a token's worth)
            y = self.cursor_location[0] - self.scroll_offset.y
            self.refresh(Region(0, y, self.size.width, new_extra + 1))
        self.post_message(self.GhostChanged(self, visible))

    def _refresh_size(self) -> None:
        """The scrollable size: the document's, plus the rows of a multi-line suggestion. It is
        set once per call (a changed virtual size costs a layout pass, which re-arranges and
        repaints the whole screen), and its width never drops below the view's (less room for a
        vertical scrollbar): typing or a growing suggestion in a line that fits the view changes
        no size, so a keystroke or a streamed token repaints lines, not the screen."""
        if self.soft_wrap:
            width, height = 0, self.wrapped_document.height
        else:
            # (as TextArea: +1 column for the cursor resting at the end of the line)
            width, height = self.document.get_size(self.indent_width)
            width += self.gutter_width + 1
            room = self.scrollable_content_region.width - self.styles.scrollbar_size_vertical
            width = max(width, room)
        lines = getattr(self, "_ghost_lines", ())
        if len(lines) > 1:
            width = max(width, max(line.cell_len for line in lines) + self.gutter_width + 1)
            height += len(lines) - 1
        size = Size(width, height)
        if size == self.virtual_size:
            self._refresh_scrollbars()
            return
        if width != self.virtual_size.width:
            self._line_cache.clear()  # rendered lines are as wide as the virtual size
        # Set without the reactive's layout pass, as Textual's own `_size_updated` does: only the
        # scrollbars follow (one appearing or going asks for the layout itself). A layout
        # repaints the whole screen, ~20 ms here, at every Enter and every line a streaming
        # suggestion grows by, while the engine thread waits for the GIL and a core.
        self.set_reactive(TextArea.virtual_size, size)
        self._scroll_update(size)
        self.refresh()

    def get_target_document_location(self, event: events.MouseEvent) -> tuple[int, int]:
        extra = max(0, len(self._ghost_lines) - 1)
        location = super().get_target_document_location(event)
        if not extra:
            return location
        row, _ = self.cursor_location
        target_y = event.y + self.scroll_offset.y - self.gutter.top
        if target_y <= row:
            return location
        if target_y <= row + extra:
            return self.cursor_location
        return self.wrapped_document.offset_to_location(
            Offset(event.x - self.gutter_width + self.scroll_offset.x, target_y - extra)
        )

    @property
    def text(self) -> str:
        """The document's text. Textual's render_line asks for it once per drawn line only to see
        whether the document is empty (then it draws the placeholder): after an edit that is a
        join of every line, ~10 ms and a 10 MB string per keystroke in a 5 MB file. While a line
        renders, the answer is a stand-in with the same truth value, read from the first line."""
        doc = self.document
        if self._rendering:
            return "" if doc.line_count <= 1 and not doc[0] else "\n"
        return doc.text

    @text.setter
    def text(self, value: str) -> None:
        self.load_text(value)

    def render_line(self, y: int) -> Strip:
        self._rendering = True
        try:
            return self._render_line_with_ghost(y)
        finally:
            self._rendering = False

    def _render_line_with_ghost(self, y: int) -> Strip:
        lines = self._ghost_lines
        if not lines or not self.has_focus:
            return super().render_line(y)
        row, _ = self.cursor_location
        cursor_y = row - self.scroll_offset.y
        extra = len(lines) - 1
        if y < cursor_y:
            return super().render_line(y)
        if y == cursor_y:
            return self._splice_ghost(super().render_line(y), lines[0])
        if y <= cursor_y + extra:
            return self._ghost_row(lines[y - cursor_y])
        return super().render_line(y - extra)

    def _line_style(self) -> Style:
        theme = self._theme
        base = (theme.base_style if theme and theme.base_style else self.rich_style) or Style()
        if theme and self.highlight_cursor_line and theme.cursor_line_style:
            return base + theme.cursor_line_style
        return base

    def _splice_ghost(self, strip: Strip, ghost: Text) -> Strip:
        """Insert the first ghost line into the rendered cursor line, at the cursor."""
        scroll_x = self.scroll_offset.x
        cell_x = self.wrapped_document.location_to_offset(self.cursor_location).x
        x = self.gutter_width + cell_x - scroll_x
        if x < self.gutter_width or x > strip.cell_length:
            return strip
        width = strip.cell_length
        line_style = self._line_style()
        console = self.app.console
        ghost_strip = Strip(list(ghost.render(console)), ghost.cell_len).apply_style(line_style)
        left = strip.crop(0, x)
        under = strip.crop(x, x + 1)
        right = strip.crop(x + 1, width)
        theme = self._theme
        if self._draw_cursor and theme and theme.cursor_style and ghost.cell_len:
            # The caret sits before the suggestion: draw the block cursor on its first cell and the
            # character that was under the cursor in the plain line style.
            first = ghost_strip.crop(0, 1)
            first = Strip([Segment(s.text, (s.style or Style()) + theme.cursor_style) for s in first])
            ghost_strip = Strip.join([first, ghost_strip.crop(1, ghost_strip.cell_length)])
            under = Strip([Segment(under.text, line_style)], 1) if under.cell_length else under
        if self._ghost_moves_tail:  # the rest of the line is drawn after the last ghost line
            joined = Strip.join([left, ghost_strip]).extend_cell_length(width, line_style)
        else:
            joined = Strip.join([left, ghost_strip, under, right])
        return joined.crop(0, max(width, joined.cell_length)).apply_style(self._line_style())

    def _ghost_row(self, ghost: Text) -> Strip:
        """A virtual row below the cursor line holding one more line of the suggestion."""
        theme = self._theme
        base = (theme.base_style if theme and theme.base_style else self.rich_style) or Style()
        gutter_width = self.gutter_width
        gutter_style = (theme.gutter_style if theme and theme.gutter_style else base)
        scroll_x = self.scroll_offset.x
        width = max(self.size.width, self.virtual_size.width)
        console = self.app.console
        text_strip = Strip(list(ghost.render(console)), ghost.cell_len).apply_style(base)
        text_strip = text_strip.crop(scroll_x, scroll_x + width).extend_cell_length(
            max(0, width - gutter_width), base
        )
        if gutter_width:
            gutter = Strip([Segment(" " * gutter_width, gutter_style)], gutter_width)
            return Strip.join([gutter, text_strip]).apply_style(base)
        return text_strip.apply_style(base)
