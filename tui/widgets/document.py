"""The editor's document and its (un)wrapped view, sized for multi-megabyte files.

Textual's TextArea asks its document for the whole text (`Document.text`, a join of every line)
and its wrapped view for its height (a sum over every line) once per *rendered line*, and measures
every line's width after every edit: in a 5 MB file a keystroke cost seconds. Here the text is
joined once per change, the widest line is kept as a count of widths updated by each edit, and
without soft wrapping (the editor never wraps) the view's per-line tables are computed on demand
instead of stored: line y is drawn at offset y.

Textual keeps a document as a list of one string per line: ~49 bytes a line over the text itself
(several times the file's size for a file of short lines). The lines here are kept in blocks
(`BlockLines`), about the size of the text.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter, OrderedDict
from itertools import accumulate
from typing import Callable, Generic, Iterable, Iterator, MutableSequence, Sequence, TypeVar, overload

from rich.cells import cell_len
from textual.document._document import Document, EditResult, Location, _detect_newline_style
from textual.document._wrapped_document import WrappedDocument
from textual.expand_tabs import get_tab_widths
from textual.geometry import Size

T = TypeVar("T")


def _cells(line: str, tab_width: int) -> int:
    return cell_len(line.expandtabs(tab_width))


BLOCK_LINES = 64  # lines per block of a document's storage (an edit rewrites one or two)
SPLIT_BLOCKS = 16  # blocks kept split into lines: the rows on screen and about the cursor
READ_CHARS = 1 << 16  # text split into lines this much at a time when a document is built


def _blocks_of(lines: list[str]) -> tuple[list[str], list[int]]:
    """`lines` as blocks of up to BLOCK_LINES lines joined by "\n", and each block's line count."""
    parts = [lines[i : i + BLOCK_LINES] for i in range(0, len(lines), BLOCK_LINES)]
    return ["\n".join(part) for part in parts], [len(part) for part in parts]


class BlockLines(MutableSequence[str]):
    """A document's lines (no line breaks in them), kept as blocks of up to BLOCK_LINES lines
    joined by "\n": one string per block instead of one per line. A block is split into its
    lines when one is asked for (the last SPLIT_BLOCKS stay split); an edit rewrites only the
    blocks it touches, and a copy shares the blocks (strings never change), so the saved version
    of a file costs a list of references."""

    def __init__(self, blocks: list[str] | None = None, counts: list[int] | None = None) -> None:
        self._blocks: list[str] = blocks if blocks is not None else []
        self._counts: list[int] = counts if counts is not None else []
        self._changed()

    @classmethod
    def from_text(cls, text: str) -> BlockLines:
        """The lines of `text` as Textual's Document splits them (`str.splitlines`, plus an empty
        last line after a final line break), without a list of every line at once."""
        lines = cls()
        pending: list[str] = []
        start = 0
        while start < len(text):
            end = text.find("\n", start + READ_CHARS)  # cut after a "\n": "\r\n" stays whole
            end = len(text) if end < 0 else end + 1
            pending.extend(text[start:end].splitlines())
            start = end
            if len(pending) >= BLOCK_LINES:
                whole = len(pending) - len(pending) % BLOCK_LINES
                lines._append_blocks(pending[:whole])
                del pending[:whole]
        if text.endswith(("\r\n", "\n", "\r")) or not text:
            pending.append("")
        lines._append_blocks(pending)
        return lines

    def _append_blocks(self, lines: list[str]) -> None:
        blocks, counts = _blocks_of(lines)
        self._blocks.extend(blocks)
        self._counts.extend(counts)
        self._changed()

    def _changed(self) -> None:
        self._firsts: list[int] | None = None  # the first line of each block, when asked for
        self._split: OrderedDict[int, list[str]] = OrderedDict()
        self._len = sum(self._counts)

    def _locate(self, index: int) -> tuple[int, int]:
        """(block, line within it) of line `index` (0 <= index < len)."""
        if self._firsts is None:
            self._firsts = list(accumulate(self._counts, initial=0))[:-1]
        block = bisect_right(self._firsts, index) - 1
        return block, index - self._firsts[block]

    def _lines_of(self, block: int) -> list[str]:
        lines = self._split.get(block)
        if lines is None:
            lines = self._split[block] = self._blocks[block].split("\n")
            if len(self._split) > SPLIT_BLOCKS:
                self._split.popitem(last=False)
        else:
            self._split.move_to_end(block)
        return lines

    # -- the sequence ------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            out: list[str] = []
            if start >= stop:
                return out
            block, offset = self._locate(start)
            while len(out) < stop - start:
                out.extend(self._lines_of(block)[offset : offset + stop - start - len(out)])
                block, offset = block + 1, 0
            return out
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError("line index out of range")
        block, offset = self._locate(index)
        return self._lines_of(block)[offset]

    @overload
    def __setitem__(self, index: int, value: str) -> None: ...
    @overload
    def __setitem__(self, index: slice, value: Iterable[str]) -> None: ...
    def __setitem__(self, index: int | slice, value: str | Iterable[str]) -> None:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            if step != 1:
                raise ValueError("document lines are replaced in runs, not with a step")
            self._replace(start, max(start, stop), list(value))
        else:
            assert isinstance(value, str), "a line is a str"
            if index < 0:
                index += self._len
            if not 0 <= index < self._len:
                raise IndexError("line index out of range")
            self._replace(index, index + 1, [value])

    def __delitem__(self, index: int | slice) -> None:
        if isinstance(index, slice):
            self[index] = []
        else:
            self[index : index + 1 if index != -1 else None] = []

    def insert(self, index: int, value: str) -> None:
        index = max(0, min(self._len, index + self._len if index < 0 else index))
        self._replace(index, index, [value])

    def _replace(self, start: int, stop: int, new: list[str]) -> None:
        """Lines [start, stop) become `new`: the blocks holding them are rebuilt (with the next
        one when what is left is small, so blocks do not shrink to a line each)."""
        if not self._blocks:
            self._append_blocks(new)
            return
        first, offset = self._locate(start) if start < self._len else (len(self._blocks) - 1, None)
        if offset is None:
            offset = self._counts[first]
        last = self._locate(stop - 1)[0] if stop > start else first
        lines = [line for b in range(first, last + 1) for line in self._lines_of(b)]
        lines[offset : offset + stop - start] = new
        while len(lines) < BLOCK_LINES // 2 and last + 1 < len(self._blocks):
            last += 1
            lines.extend(self._lines_of(last))
        self._blocks[first : last + 1], self._counts[first : last + 1] = _blocks_of(lines)
        self._changed()

    def __iter__(self) -> Iterator[str]:
        for block in self._blocks:
            yield from block.split("\n")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BlockLines):
            if self._len != other._len:
                return False
            if self._counts == other._counts:
                return self._blocks == other._blocks  # unchanged blocks compare by identity
            return "\n".join(self._blocks) == "\n".join(other._blocks)
        if isinstance(other, list):
            return self._len == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def copy(self) -> BlockLines:
        """A snapshot: later edits of either leave the other as it is."""
        return BlockLines(list(self._blocks), list(self._counts))

    def changed_since(self, before: BlockLines) -> list[str]:
        """The text of each run of blocks that `before` (a copy this one was edited from) does
        not share: what the edits since then wrote, with the rest of the blocks they touched."""
        shared = {id(block) for block in before._blocks}
        runs: list[str] = []
        run: list[str] = []
        for block in self._blocks:
            if id(block) not in shared:
                run.append(block)
            elif run:
                runs.append("\n".join(run))
                run = []
        if run:
            runs.append("\n".join(run))
        return runs

    def join(self, newline: str) -> str:
        """The text, lines separated by `newline`."""
        text = "\n".join(self._blocks)
        return text if newline == "\n" else text.replace("\n", newline)


class EditorDocument(Document):
    """A Document whose lines are kept in blocks (`BlockLines`), that caches its text and its
    widest line between edits."""

    _lines: BlockLines  # type: ignore[assignment]  # Textual's Document declares list[str]

    def __init__(self, text: str) -> None:
        self._newline = _detect_newline_style(text)
        self._lines = BlockLines.from_text(text)
        self._text: str | None = None
        self._tab_width = 0
        self._widths: Counter[int] | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = self._lines.join(self._newline)
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
    def __getitem__(self, index: int | slice) -> T | list[T]:
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
