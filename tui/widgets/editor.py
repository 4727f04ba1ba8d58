"""The code editor: the code area (tui/widgets/code_area.py) with multi-line ghost text.

Ghost text is a suggestion drawn at the cursor that is not (yet) part of the document. Textual's
own `TextArea.suggestion` draws a single line in a single style; here the first suggested line is
spliced into the cursor line and further lines are drawn as virtual rows below it (pushing the
document down), each coloured like code in the theme's dimmed ghost style.

The suggestion's lifecycle (what is asked for and when, what streams, what is shown) is
`SuggestionController`'s (tui/suggest/controller.py); the editor reports edits, moves and keys
to it and draws what it shows.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Mapping

from pygments.token import Comment
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.color import Color
from textual.geometry import Offset, Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widgets import TextArea
from textual.widgets.text_area import Edit, EditResult, Selection

from ..suggest.completer import DEFAULT_ACCEPT_KEYS, Completer
from ..suggest.controller import SuggestionController
from ..themes import SpectermTheme
from .code_area import CodeArea
from .highlight import ghost_texts
from .suggestions import Source

# Alternative suggestions: handled in _on_key, since a terminal's alt+n arrives as a printable "n"
# that TextArea would insert before any binding ran.
ALTERNATIVE_KEYS = {"alt+right_square_bracket": 1, "alt+n": 1, "alt+left_square_bracket": -1, "alt+p": -1}
PREFIX_ROWS, SUFFIX_ROWS = 400, 120  # the rows around the cursor a completion request sees
# The prefix window's first row moves in steps of this many rows: moved a row at a time, every new
# line would change the prompt's start, and the model would read it all again (3,700 tokens, 15 s
# for the demo model on 2 cores, past row 400 of a file).
PREFIX_STEP = 100


class CodeEditor(CodeArea):
    """A code area for one file, with ghost-text completions from a `Completer`."""

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
        """The cursor moved without an edit (keys, the mouse, a find that selected its match): a
        request there follows the typing pause, so its prompt can be read now (the Prewarmer
        reads it). A selection's moving end counts: a find leaves its match selected until the
        user leaves the bar and types on that line, and its read should start when it lands."""

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
        # Set before CodeArea.__init__, which already draws (apply_theme).
        self.completer = completer
        self.suggest = SuggestionController(self, completer)  # the suggestion at the cursor
        self._ghost_lines: list[Text] = []  # the suggestion's rows as drawn
        self._ghost_moves_tail = False
        self._editing = False
        self.edits = 0  # edits made so far (GhostChanged carries it)
        super().__init__(text, path=path, theme=theme, id=id)

    def apply_theme(self, theme: SpectermTheme) -> None:
        super().apply_theme(theme)
        self._ghost_lines = []  # re-colour a visible suggestion for the new background
        self.suggest.shown = ""
        self.redraw_suggestion()

    def _generating(self) -> bool:
        return self.completer is not None and self.completer.generating

    # -- the suggestion (tui/suggest/controller.py) -----------------------------------------------

    @property
    def ghost_text(self) -> str:
        """The suggestion as currently shown ("" when none)."""
        return self.suggest.shown

    @property
    def ghost_source(self) -> Source | None:
        """Where the suggestion at the cursor (shown or still coming) is from: the engine, a
        prefetch or the cache; None when there is none."""
        return self.suggest.source

    @property
    def accept_keys(self) -> Mapping[str, str]:
        """Key name -> accept action while a suggestion is shown (`[keys]` in config.toml)."""
        return self.completer.options.accept_keys if self.completer is not None else DEFAULT_ACCEPT_KEYS

    @property
    def completion_pending(self) -> bool:
        """A debounce timer or an engine request is under way."""
        return self.suggest.pending

    @property
    def rests_after_move(self) -> bool:
        """The cursor moved and nothing was typed since (the Prewarmer keeps the move's read)."""
        return self.suggest.rests_after_move

    @property
    def alternatives_marker(self) -> str:
        """"2/3" while a suggestion with alternatives is shown ("" otherwise)."""
        return self.suggest.marker

    def action_complete(self) -> None:
        """Ask for a suggestion now (the manual completion key)."""
        self.suggest.complete(manual=True)

    def action_accept_completion(self) -> None:
        self.suggest.accept("all")

    def action_accept_word(self) -> None:
        self.suggest.accept("word")

    def action_accept_line(self) -> None:
        self.suggest.accept("line")

    def action_alternative(self, step: int) -> None:
        """Show the next (1) or previous (-1) alternative suggestion."""
        self.suggest.alternative(step)

    def action_dismiss_completion(self) -> None:
        self.suggest.dismiss()

    # -- what the controller asks of the editor (SuggestionHost) ----------------------------------

    def cursor_is_caret(self) -> bool:
        return self.selection.is_empty

    def text_after(self, at: tuple[int, int], lines: int) -> tuple[str, list[str]]:
        row, col = at
        doc = self.document
        return doc[row][col:], [doc[r] for r in range(row + 1, min(doc.line_count, row + 1 + lines))]

    def insert_suggestion(self, piece: str, at: tuple[int, int]) -> None:
        self.history.checkpoint()
        self.insert(piece, at)
        self.history.checkpoint()

    def action_copy(self) -> None:
        super().action_copy()
        self.post_message(self.Copied(self, self.selected_text))

    # -- keys -------------------------------------------------------------------------------------

    async def _on_key(self, event: events.Key) -> None:
        if event.key in ALTERNATIVE_KEYS:
            event.stop()
            event.prevent_default()
            self.action_alternative(ALTERNATIVE_KEYS[event.key])
            return
        accept = self.accept_keys.get(event.key) if self.suggest.shown else None
        if accept is not None:
            event.stop()
            event.prevent_default()
            await self.run_action(accept)
            return
        if event.key == "escape":
            event.prevent_default()  # TextArea's own Esc moves the focus on: the next keys went nowhere
            if self.suggest.shown or self.completion_pending:
                event.stop()
                self.suggest.dismiss()
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

    # -- edits and cursor moves -----------------------------------------------------------------

    def edit(self, edit: Edit) -> EditResult:
        consumes = self.suggest.consumes(edit.text, edit.from_location, edit.to_location)
        self.suggest.keystroke_at = time.monotonic()  # before the edit: the time budget counts from the key
        self.edits += 1
        self._editing = True
        try:
            result = super().edit(edit)
        finally:
            self._editing = False
        # Between lines (Enter, or the new line's indentation fixed with Backspace or Tab: blanks
        # typed or deleted, the cursor left in the line's indentation): people pause there, so
        # the request goes out at once.
        row, col = result.end_location
        self.suggest.edited(edit.text, consumes, result.end_location, line_break=not edit.text.strip(" \t\r\n")
                            and ("\n" in edit.text or not self.document[row][:col].strip()))
        return result

    def undo(self) -> None:
        self.suggest.dismiss()
        super().undo()

    def redo(self) -> None:
        self.suggest.dismiss()
        super().redo()

    def load_text(self, text: str) -> None:
        self.suggest.dismiss()
        super().load_text(text)

    def _watch_selection(self, previous_selection: Selection, selection: Selection) -> None:
        super()._watch_selection(previous_selection, selection)
        if self._editing or not self.is_mounted or previous_selection == selection:
            return
        if self.suggest.moved(selection.end, selection.is_empty):
            self.post_message(self.Moved(self))

    def _on_blur(self, event: events.Blur) -> None:
        # The suggestion stays (hidden while unfocused) so the command palette can accept it;
        # only a pending automatic request is dropped.
        self.suggest.stop_schedule()
        self._line_cache.clear()

    # -- requests ---------------------------------------------------------------------------------

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

    # -- drawing ----------------------------------------------------------------------------------

    def redraw_suggestion(self) -> None:
        """Draw the suggestion the controller shows now (nothing when that did not change)."""
        old_extra = max(0, len(self._ghost_lines) - 1)
        if not self.suggest.update_shown(drawn=bool(self._ghost_lines)):
            return
        visible, marker = self.suggest.shown, self.suggest.marker
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

    def render_line(self, y: int) -> Strip:
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
