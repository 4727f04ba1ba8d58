"""The code area under the editor: Textual's TextArea over the editor's own document (fast in
multi-megabyte files, tui/widgets/document.py), highlighted by pygments, indenting as the file
does. `CodeEditor` (tui/widgets/editor.py) adds the suggestions on top; this layer knows nothing
of them.
"""

from __future__ import annotations

import time
from pathlib import Path

from textual.document._document_navigator import DocumentNavigator
from textual.strip import Strip
from textual.timer import Timer
from textual.widgets import TextArea
from textual.widgets.text_area import Edit, EditResult, TextAreaTheme

from ..themes import SpectermTheme
from .document import BlockLines, EditorDocument, UnwrappedDocument
from .highlight import (
    WHOLE_FILE_LINES,
    WINDOW_MARGIN_LINES,
    highlight_map,
    highlight_rows,
    language_name,
    lexer_for,
    window_bounds,
)
from .indentation import dedent_to, detect_indentation

SAMPLE_CHARS = 200_000  # the start of a file its indentation is read from
INCREMENTAL_HIGHLIGHT_LINES = 100  # above this, keystrokes re-lex only the edited lines at once
FULL_HIGHLIGHT_DELAY_S = 0.3
# The pass after a pause waits while a suggestion generates, at most this long from the pause: it
# lexes the file and redraws every row, which on 2 cores took the UI's core from the engine
# exactly when the user waits for it.
FULL_HIGHLIGHT_WAIT_S = 2.0
FULL_HIGHLIGHT_RETRY_S = 0.1
LINE_CACHE_ROWS = 128  # rendered rows kept (Textual's default is 1,024)


class CodeArea(TextArea):
    """A TextArea for one file's code: highlighted, indented as the file is, fast when large."""

    def __init__(self, text: str = "", *, path: Path | None = None, theme: SpectermTheme,
                 id: str | None = None) -> None:
        # Set before TextArea.__init__, which already builds the highlight map.
        self.path = path
        self._lexer = lexer_for(path)
        self.language_label = language_name(self._lexer)
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

    def apply_theme(self, theme: SpectermTheme) -> None:
        self._spectheme = theme
        name = f"specterm-{theme.name}"
        self.register_theme(TextAreaTheme(name=name, syntax_styles=theme.syntax_styles()))
        if self.theme == name:
            self._set_theme(name)  # same name, reloaded file: apply the new styles
        else:
            self.theme = name
        self._build_highlight_map()

    def _generating(self) -> bool:
        """Something the user waits for is being computed (the whole-file highlight waits)."""
        return False

    def edit(self, edit: Edit) -> EditResult:
        self._current_edit = edit  # (the highlight map re-lexes only its lines)
        try:
            return super().edit(edit)
        finally:
            self._current_edit = None

    def load_text(self, text: str) -> None:
        self._follow_indentation(text)
        super().load_text(text)

    def render_line(self, y: int) -> Strip:
        self._rendering = True
        try:
            return super().render_line(y)
        finally:
            self._rendering = False

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
        if self._generating() and time.monotonic() < self._full_highlight_by:
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

    def _follow_indentation(self, text: str) -> None:
        """Indent as the file does (tabs, or its unit of spaces): Enter, Tab and Backspace add
        and remove the file's levels. Set before the document's view is built (its tab width)."""
        found = detect_indentation(text[:SAMPLE_CHARS].split("\n"))
        self.indent_type = found.kind
        self.set_reactive(TextArea.indent_width, found.width)

    def action_document_start(self, select: bool = False) -> None:
        self.move_cursor((0, 0), select=select)

    def action_document_end(self, select: bool = False) -> None:
        last = self.document.line_count - 1
        self.move_cursor((last, len(self.document[last])), select=select)

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
