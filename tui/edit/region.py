"""Which lines an edit rewrites, and the request's pieces around them.

The selection's whole lines; with none, the function or block around the cursor (by
indentation: the nearest definition above it, else the innermost block), else the whole file when
it is short, else the paragraph around the cursor. A region is whole lines, so the rewrite
replaces lines, never half of one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

SHORT_FILE_LINES = 80  # a file this short is the region when the cursor is in no block
_DEFINITION = re.compile(
    r"^(?:@|(?:export\s+|pub(?:\([^)]*\))?\s+|public\s+|private\s+|static\s+|async\s+)*"
    r"(?:def|class|function|fn|func|fun|sub|proc|impl|struct|enum|trait|interface|module)\b)"
)
_CLOSERS = ("}", ")", "]", "end")


@dataclass(frozen=True)
class EditTarget:
    """Rows [start, end) of a document: the region's text (ending "\\n" unless it ends the file),
    the text before and after it, and the document locations a replace uses."""

    start: int
    end: int
    before: str
    region: str
    after: str
    from_location: tuple[int, int]
    to_location: tuple[int, int]

    @property
    def label(self) -> str:
        return f"lines {self.start + 1}-{self.end}" if self.end - self.start > 1 else f"line {self.start + 1}"


def _indent(line: str) -> int:
    return len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip())


def _blank(line: str) -> bool:
    return not line.strip()


def selected_rows(top: tuple[int, int], bottom: tuple[int, int]) -> tuple[int, int]:
    """The rows [start, end) of a selection; one ending at a line's start leaves that line out."""
    end = bottom[0] + 1
    if bottom[1] == 0 and bottom[0] > top[0]:
        end -= 1
    return top[0], end


def block_rows(lines: Sequence[str], row: int) -> tuple[int, int] | None:
    """The rows [start, end) of the function or block around `row`, by indentation; None when
    `row` is in no block (top-level code, or blank lines around it)."""
    n = len(lines)
    while row > 0 and _blank(lines[row]):
        row -= 1
    if _blank(lines[row]):
        return None
    headers: list[int] = []  # block openers at or above `row`, innermost first
    nxt = next((r for r in range(row + 1, n) if not _blank(lines[r])), None)
    if nxt is not None and _indent(lines[nxt]) > _indent(lines[row]):
        headers.append(row)
    level = _indent(lines[row])
    for r in range(row - 1, -1, -1):
        if not _blank(lines[r]) and _indent(lines[r]) < level:
            headers.append(r)
            level = _indent(lines[r])
            if level == 0:
                break
    if not headers:
        return None
    header = next((h for h in headers if _DEFINITION.match(lines[h].strip())), headers[0])
    start = header
    while start > 0 and not _blank(lines[start - 1]) and _indent(lines[start - 1]) == _indent(lines[header]) \
            and lines[start - 1].strip().startswith("@"):
        start -= 1  # its decorators
    level = _indent(lines[header])
    end = header + 1
    while end < n and (_blank(lines[end]) or _indent(lines[end]) > level):
        end += 1
    while end > header + 1 and _blank(lines[end - 1]):
        end -= 1
    if end < n and _indent(lines[end]) == level and lines[end].strip().startswith(_CLOSERS):
        end += 1  # a closing brace (or `end`) at the header's level
    return start, end


def paragraph_rows(lines: Sequence[str], row: int) -> tuple[int, int] | None:
    if _blank(lines[row]):
        return None
    start, end = row, row + 1
    while start > 0 and not _blank(lines[start - 1]):
        start -= 1
    while end < len(lines) and not _blank(lines[end]):
        end += 1
    return start, end


def pick_rows(lines: Sequence[str], top: tuple[int, int], bottom: tuple[int, int]) -> tuple[int, int] | None:
    """The rows an edit rewrites for a selection from `top` to `bottom` (equal: none)."""
    if top != bottom:
        return selected_rows(top, bottom)
    block = block_rows(lines, top[0])
    if block is not None:
        return block
    if len(lines) <= SHORT_FILE_LINES:
        return 0, len(lines)
    return paragraph_rows(lines, top[0])


def target_for(lines: Sequence[str], start: int, end: int) -> EditTarget:
    """The request's pieces for rows [start, end) of a document's lines (split on "\\n": a file
    ending in a newline has an empty last line)."""
    n = len(lines)
    text = "\n".join(lines)
    offset_start = sum(len(line) + 1 for line in lines[:start])
    if end < n:
        offset_end = sum(len(line) + 1 for line in lines[:end])
        to_location = (end, 0)
    else:
        offset_end = len(text)
        to_location = (n - 1, len(lines[n - 1]))
    return EditTarget(start, end, text[:offset_start], text[offset_start:offset_end], text[offset_end:],
                      (start, 0), to_location)
