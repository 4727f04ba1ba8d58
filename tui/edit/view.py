"""The file with an edit's diff inline, drawn where the editor was while the edit streams and is
reviewed: the region's removed lines struck and dimmed, added lines marked, every line coloured by
the editor's own lexer and theme. A separate view, so no key can type into the region meanwhile;
the document itself changes only when the user accepts."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.color import Color
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..widgets.highlight import Highlight, highlight_map
from .diff import EditDiff, Row
from .region import EditTarget

if TYPE_CHECKING:
    from ..widgets.editor import CodeEditor

MARKS = {"same": " ", "pending": " ", "removed": "-", "added": "+"}
FOLLOW_ROOM_ROWS = 3  # rows kept below the rewrite's newest line while following it
GROW_ROWS = 32  # while the rewrite streams, the view's height grows by this many rows at a time
STRIP_CACHE_ROWS = 2000  # drawn rows kept (cleared when full)
RESTART_SEARCH_ROWS = 50  # how far back from the streamed end a lexer restart is looked for


def styled_line(line: str, ranges: list[Highlight], syntax_styles: dict[str, Style]) -> Text:
    """A line coloured by its highlight ranges (UTF-8 byte offsets, as TextArea keeps them)."""
    text = Text(line, no_wrap=True, end="")
    encoded = line.encode() if not line.isascii() else None
    for start, end, name in ranges:
        style = syntax_styles.get(name)
        if style is None:
            continue
        if encoded is not None:
            start = len(encoded[:start].decode(errors="ignore"))
            end = len(encoded[:end].decode(errors="ignore")) if end is not None else None
        text.stylize(style, start, end)
    return text


class RowLook(NamedTuple):
    """Everything a row's drawing depends on but the theme and the width."""

    kind: str
    number: str  # the line number in the gutter ("" for an added line)
    mark: str
    current: bool  # in the hunk being reviewed
    line: str
    ranges: tuple[Highlight, ...]


class DiffView(ScrollView, can_focus=True):
    """Rows: the document's rows before the region, the diff's rows, the rows after it."""

    DEFAULT_CSS = "DiffView { height: 1fr; }"

    def __init__(self, editor: "CodeEditor", target: EditTarget, diff: EditDiff) -> None:
        super().__init__(id="edit-diff")
        self.editor = editor
        self.target = target
        self.diff = diff
        self.current_hunk: int | None = None
        self._old_highlights = highlight_map(editor._lexer, target.region)
        self._new_highlights: dict[int, list[Highlight]] = {}
        self._new_lexed = ""
        self._lexed_final = False
        self._strips: dict[tuple, Strip] = {}
        self._painted: list[RowLook | None] = []  # the visible rows when last asked to redraw
        self._painted_at = (-1, -1)  # (scroll offset, height) then

    # -- rows -------------------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        lines = self.editor.document.line_count
        return self.target.start + len(self.diff.rows) + (lines - self.target.end)

    def diff_row_y(self, index: int) -> int:
        """The view row of the diff's row `index`."""
        return self.target.start + index

    def update_diff(self) -> None:
        """The diff changed (more text streamed, a decision): size, colours, redraw."""
        if self.diff.new_text != self._new_lexed or (self.diff.final and not self._lexed_final):
            self._lex_new()
        rows = self.row_count
        if not self.diff.final:  # grown in steps: each new size is a layout of the whole screen
            rows = -(-rows // GROW_ROWS) * GROW_ROWS
        size = Size(self.size.width, rows)
        top, height = int(self.scroll_offset.y), self.size.height
        keys = [self._row_look(top + y) for y in range(height)]
        if size != self.virtual_size or (top, height) != self._painted_at:
            self.virtual_size = size
            self.refresh()
        else:  # only the rows that show something else (most only move while it streams)
            for y, (key, was) in enumerate(zip(keys, self._painted)):
                if key != was:
                    self.refresh_lines(top + y)
        self._painted, self._painted_at = keys, (top, height)

    def _lex_new(self) -> None:
        """Colours for the rewrite so far. While it streams the text only grows, so the lines
        before the last place the lexer can start again keep their colours and only the rest is
        lexed (re-lexing the whole rewrite at every redraw took the engine's CPU on a long
        region); the final text is lexed whole."""
        text, lexed = self.diff.new_text, self._new_lexed
        restart = 0
        if not self.diff.final and text.startswith(lexed):
            restart = self._restart_row(lexed.count("\n"))
        offset = 0
        for _ in range(restart):
            offset = text.index("\n", offset) + 1
        kept = {row: ranges for row, ranges in self._new_highlights.items() if row < restart}
        kept.update((restart + row, ranges) for row, ranges in highlight_map(self.editor._lexer, text[offset:]).items())
        self._new_highlights, self._new_lexed, self._lexed_final = kept, text, self.diff.final

    def _restart_row(self, complete: int) -> int:
        """The last of the first `complete` lexed rows (up to RESTART_SEARCH_ROWS back) whose first
        token, after its indentation, is code rather than a string or comment: a lexer started
        there is in the state the whole text would have had (not inside a string); else 0."""
        lines = self.diff.new_text.split("\n")
        for row in range(complete - 1, max(-1, complete - 1 - RESTART_SEARCH_ROWS), -1):
            line = lines[row]
            indent = len(line) - len(line.lstrip(" \t"))
            first = next(((start, name) for start, _end, name in self._new_highlights.get(row, [])
                          if not name.startswith("Token.Text")), None)
            if first is not None and first[0] == indent and "String" not in first[1] and "Comment" not in first[1]:
                return row
        return 0

    def show_row(self, index: int) -> None:
        """Scroll so the diff's row `index` is in view (with a little room below)."""
        y = self.diff_row_y(index)
        self.scroll_to_region(Region(0, y, 1, 3), animate=False, immediate=True, force=True)

    def follow_row(self, index: int) -> None:
        """While it streams: when the diff's row `index` nears the bottom or leaves the view, scroll
        it to a third of the way down (a page at a time: every scroll redraws every row)."""
        y, top, height = self.diff_row_y(index), int(self.scroll_offset.y), self.size.height
        if top <= y < top + height - FOLLOW_ROOM_ROWS:
            return
        self.scroll_to(y=max(0, y - height // 3), animate=False, immediate=True, force=True)

    def on_mount(self) -> None:
        self.update_diff()
        self.scroll_to(y=max(0, self.target.start - max(1, self.editor.size.height // 4)), animate=False,
                       immediate=True, force=True)

    def on_resize(self) -> None:
        self.update_diff()

    # -- drawing ----------------------------------------------------------------------------------

    def _styles(self) -> tuple[Style, Style, dict[str, Style], Color]:
        theme = self.editor._theme
        base = (theme.base_style if theme and theme.base_style else self.rich_style) or Style()
        gutter = (theme.gutter_style if theme and theme.gutter_style else base)
        syntax = theme.syntax_styles if theme else {}
        background = Color.from_rich_color(base.bgcolor) if base.bgcolor else Color(0, 0, 0)
        return base, gutter, syntax, background

    def render_line(self, y: int) -> Strip:
        """One row, drawn once: while the rewrite streams most rows only move (the view follows
        the newest line), so a row is kept by what it shows and drawn again only when that changes."""
        width = self.size.width
        look = self._row_look(y + self.scroll_offset.y)
        if look is None:
            return Strip.blank(width, self._styles()[0])
        key = (width, id(self.editor._theme), self.app.theme, self.editor.gutter_width, self.editor.indent_width, look)
        strip = self._strips.get(key)
        if strip is None:
            if len(self._strips) >= STRIP_CACHE_ROWS:
                self._strips.clear()
            strip = self._strips[key] = self._draw(look, width)
        return strip

    def _row_look(self, row: int) -> RowLook | None:
        """What view row `row` shows; None past the end."""
        start, diff = self.target.start, self.diff
        if row >= self.row_count:
            return None
        if row < start or row >= start + len(diff.rows):
            doc_row = row if row < start else row - start - len(diff.rows) + self.target.end
            line, ranges = self.editor.document[doc_row], self.editor._highlights.get(doc_row, [])
            kind, number, mark, current = "same", str(doc_row + 1), " ", False
        else:
            entry: Row = diff.rows[row - start]
            highlights = self._new_highlights if entry.kind == "added" else self._old_highlights
            line, ranges, kind = entry.text, highlights.get(entry.index, []), entry.kind
            mark = MARKS[entry.kind]
            number = "" if entry.kind == "added" else str(start + entry.index + 1)
            current = entry.hunk is not None and entry.hunk == self.current_hunk
            hunk = diff.hunks[entry.hunk] if entry.hunk is not None else None
            if hunk is not None and hunk.accepted is not None:
                mark = "✓" if hunk.accepted else "✗"
        return RowLook(kind, number, mark, current, line, tuple(ranges))

    def _draw(self, look: RowLook, width: int) -> Strip:
        base, gutter_style, syntax, background = self._styles()
        variables = self.app.theme_variables
        kind, number, mark, current = look.kind, look.number, look.mark, look.current
        text = styled_line(look.line, list(look.ranges), syntax)
        tint = None
        if kind == "added":
            tint = background.blend(Color.parse(variables.get("success", "green")), 0.22)
        elif kind == "removed":
            tint = background.blend(Color.parse(variables.get("error", "red")), 0.18)
            text.stylize(Style(dim=True, strike=True))
        elif kind == "pending":  # not reached yet
            text.stylize(Style(dim=True))
        line_style = base + Style(bgcolor=tint.rich_color) if tint is not None else base
        digits = max(1, self.editor.gutter_width - 1)  # (the editor draws its gutter one column in)
        mark_style = gutter_style + Style(reverse=True) if current else gutter_style
        gutter = Strip([Segment(f"{number:>{digits}} ", gutter_style), Segment(mark, mark_style),
                        Segment(" ", gutter_style)], digits + 3)
        text.expand_tabs(self.editor.indent_width)
        body = Strip(list(text.render(self.app.console)), text.cell_len).apply_style(line_style)
        body = body.crop(0, max(0, width - gutter.cell_length)).extend_cell_length(
            max(0, width - gutter.cell_length), line_style)
        return Strip.join([gutter, body]).apply_style(base)
