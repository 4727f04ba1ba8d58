"""The editor's document and its (un)wrapped view, sized for multi-megabyte files.

Textual's TextArea asks its document for the whole text (`Document.text`, a join of every line)
and its wrapped view for its height (a sum over every line) once per *rendered line*, and measures
every line's width after every edit: in a 5 MB file a keystroke cost seconds. Here the text is
joined once per change, the widest line is kept as a count of widths updated by each edit, and
without soft wrapping (the editor never wraps) the view's per-line tables are computed on demand
instead of stored: line y is drawn at offset y.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Generic, Sequence, TypeVar, overload

from rich.cells import cell_len
from textual.document._document import Document, EditResult, Location
from textual.document._wrapped_document import WrappedDocument
from textual.expand_tabs import get_tab_widths
from textual.geometry import Size

T = TypeVar("T")


def _cells(line: str, tab_width: int) -> int:
    return cell_len(line.expandtabs(tab_width))


class EditorDocument(Document):
    """A Document that caches its text and its widest line between edits."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._text: str | None = None
        self._tab_width = 0
        self._widths: Counter[int] | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = super().text
        return self._text

    def get_size(self, tab_width: int) -> Size:
        if self._widths is None or tab_width != self._tab_width:
            self._tab_width = tab_width
            self._widths = Counter(_cells(line, tab_width) for line in self._lines)
        return Size(max(self._widths, default=0), len(self._lines))

    def replace_range(self, start: Location, end: Location, text: str) -> EditResult:
        top, bottom = sorted((start, end))
        widths = self._widths
        if widths is not None:
            for line in self._lines[top[0]: bottom[0] + 1]:
                widths[_cells(line, self._tab_width)] -= 1
        result = super().replace_range(start, end, text)
        self._text = None
        if widths is not None:
            for line in self._lines[top[0]: result.end_location[0] + 1]:
                widths[_cells(line, self._tab_width)] += 1
            for width in [w for w, n in widths.items() if n <= 0]:
                del widths[width]
        return result


class _Lazy(Sequence[T], Generic[T]):
    """A read-only sequence of `length()` items computed by `item(i)` when asked for."""

    def __init__(self, length: Callable[[], int], item: Callable[[int], T]) -> None:
        self._length = length
        self._item = item

    def __len__(self) -> int:
        return self._length()

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        n = self._length()
        if isinstance(index, slice):
            return [self._item(i) for i in range(*index.indices(n))]
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(index)
        return self._item(index)


class UnwrappedDocument(WrappedDocument):
    """A WrappedDocument that stores nothing per line while the width is 0 (no soft wrap): every
    line is one row, so its tables are identities computed on demand, and an edit (even one that
    adds lines to a 100,000-line file) updates nothing. A non-zero width wraps as Textual does."""

    def wrap(self, width: int, tab_width: int | None = None) -> None:
        if width:
            super().wrap(width, tab_width)
            return
        self._width = 0
        if tab_width:
            self._tab_width = tab_width
        count = lambda: self.document.line_count  # noqa: E731
        self._wrap_offsets = _Lazy(count, lambda i: [])  # type: ignore[assignment]
        self._offset_to_line_info = _Lazy(count, lambda y: (y, 0))  # type: ignore[assignment]
        self._line_index_to_offsets = _Lazy(count, lambda i: [i])  # type: ignore[assignment]
        self._tab_width_cache = _Lazy(count, self._tabs)  # type: ignore[assignment]

    def _tabs(self, line_index: int) -> list[int]:
        return [w for _, w in get_tab_widths(self.document[line_index], self._tab_width)]

    def wrap_range(self, start: Location, old_end: Location, new_end: Location) -> None:
        if self._width:
            super().wrap_range(start, old_end, new_end)

    def get_offsets(self, line_index: int) -> list[int]:
        if self._width:
            return super().get_offsets(line_index)
        if not 0 <= line_index < self.document.line_count:
            raise ValueError(f"The document line index {line_index!r} is out of bounds.")
        return []

    @property
    def height(self) -> int:
        return self.document.line_count if not self._width else super().height
