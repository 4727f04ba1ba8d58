"""The file's own indentation: tabs or spaces, and how many spaces a level is.

Why: Enter after `{` added 4 spaces in a 2-space JavaScript file, and Backspace in the blanks
removed one space of a level. The editor reads the unit from the file's first lines, as most
editors do, so the levels it adds and removes are the file's.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal

SAMPLE_LINES = 2000  # enough lines to decide; a 5 MB file is not read to its end
UNITS = (2, 3, 4, 8)  # space units worth guessing; other steps (alignment) vote for none
DEFAULT_WIDTH = 4


@dataclass(frozen=True)
class Indentation:
    kind: Literal["spaces", "tabs"]  # TextArea.indent_type
    width: int  # spaces a level (tabs: the width a tab is drawn)


def detect_indentation(lines, default_width: int = DEFAULT_WIDTH) -> Indentation:
    """The indentation most lines of `lines` (an iterable of strings) use. Spaces: the commonest
    step between the indentation of one non-blank line and the next deeper one. Tabs: when more
    lines start with a tab than with spaces. No indented line: spaces of `default_width`."""
    tabs = spaces = 0
    steps: Counter[int] = Counter()
    previous = 0
    for i, line in enumerate(lines):
        if i >= SAMPLE_LINES:
            break
        if not line.strip():
            continue
        if line[0] == "\t":
            tabs += 1
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent:
            spaces += 1
        if indent > previous and indent - previous in UNITS:
            steps[indent - previous] += 1
        previous = indent
    if tabs > spaces:
        return Indentation("tabs", default_width)
    if not steps:
        return Indentation("spaces", default_width)
    width = max(steps, key=lambda unit: (steps[unit], -unit))  # a tie: the smaller unit
    return Indentation("spaces", width)


def dedent_to(col: int, width: int) -> int:
    """Where Backspace at column `col` in leading spaces goes: the previous multiple of the
    level `width`, so it removes one level (what is left of one, off the file's grid)."""
    return max(col - 1, 0) // max(width, 1) * max(width, 1)
