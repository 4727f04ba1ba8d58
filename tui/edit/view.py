"""The file with an edit's diff inline, drawn where the editor was while the edit streams and is
reviewed: the region's removed lines struck and dimmed, added lines marked, every line coloured by
the editor's own lexer and theme. A separate view, so no key can type into the region meanwhile;
the document itself changes only when the user accepts."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
        if self.diff.new_text != self._new_lexed:
            self._new_lexed = self.diff.new_text
            self._new_highlights = highlight_map(self.editor._lexer, self.diff.new_text)
        self.virtual_size = Size(self.size.width, self.row_count)
        self.refresh()

    def show_row(self, index: int) -> None:
        """Scroll so the diff's row `index` is in view (with a little room below)."""
        y = self.diff_row_y(index)
        self.scroll_to_region(Region(0, y, 1, 3), animate=False, immediate=True, force=True)

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
        base, gutter_style, syntax, background = self._styles()
        row = y + self.scroll_offset.y
        width = self.size.width
        start, diff = self.target.start, self.diff
        number, mark, tint, current = "", " ", None, False
        variables = self.app.theme_variables
        if row >= self.row_count:
            return Strip.blank(width, base)
        if row < start or row >= start + len(diff.rows):
            doc_row = row if row < start else row - start - len(diff.rows) + self.target.end
            text = styled_line(self.editor.document[doc_row], self.editor._highlights.get(doc_row, []), syntax)
            number = str(doc_row + 1)
        else:
            entry: Row = diff.rows[row - start]
            highlights = self._new_highlights if entry.kind == "added" else self._old_highlights
            text = styled_line(entry.text, highlights.get(entry.index, []), syntax)
            mark = MARKS[entry.kind]
            if entry.kind != "added":
                number = str(start + entry.index + 1)
            if entry.kind == "added":
                tint = background.blend(Color.parse(variables.get("success", "green")), 0.22)
            elif entry.kind == "removed":
                tint = background.blend(Color.parse(variables.get("error", "red")), 0.18)
                text.stylize(Style(dim=True, strike=True))
            current = entry.hunk is not None and entry.hunk == self.current_hunk
            hunk = diff.hunks[entry.hunk] if entry.hunk is not None else None
            if hunk is not None and hunk.accepted is not None:
                mark = "✓" if hunk.accepted else "✗"
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
