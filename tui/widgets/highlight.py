"""Syntax highlighting with pygments, for the editor and for ghost text.

One highlighter for both means a suggestion is coloured exactly like the code it would become (only
dimmer), and themes need a single pygments style. Pygments knows hundreds of languages by file
name, with no native parser to install.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Sequence

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_for_filename
from pygments.token import Text as _TEXT
from pygments.util import ClassNotFound
from rich.text import Text
from textual.color import Color

from ..themes import SpectermTheme, token_name

# Past this size a text is not lexed in one go (the editor lexes a window of a large file).
HIGHLIGHT_LIMIT_CHARS = 1_000_000
# A file of more lines is highlighted in a window around the viewport: this many lines above and
# below it, re-lexed when the viewport comes within the margin of its edges.
WHOLE_FILE_LINES = 2000
WINDOW_LINES = 200
WINDOW_MARGIN_LINES = 60
START_SEARCH_LINES = 100  # how far up a window's first line may move to a top-level line

Highlight = tuple[int, "int | None", str]  # (start byte, end byte or None for end of line, name)


def lexer_for(path: str | Path | None) -> Lexer | None:
    """The pygments lexer for a file name, or None for plain text."""
    if path is None:
        return None
    try:
        return get_lexer_for_filename(str(Path(path).name), stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


def language_name(lexer: Lexer | None) -> str:
    return lexer.name if lexer is not None else "Text"


def highlight_map(lexer: Lexer | None, text: str) -> dict[int, list[Highlight]]:
    """Per document line, the highlighted ranges in UTF-8 byte offsets (what TextArea expects),
    named by pygments token type."""
    highlights: dict[int, list[Highlight]] = defaultdict(list)
    if lexer is None or len(text) > HIGHLIGHT_LIMIT_CHARS:
        return highlights
    lines = text.split("\n")
    row, col = 0, 0
    for _index, ttype, value in lexer.get_tokens_unprocessed(text):
        name = token_name(ttype)
        parts = value.split("\n")
        for i, part in enumerate(parts):
            if i:
                row, col = row + 1, 0
            if part and name != "Token" and name != "Token.Text":
                highlights[row].append((col, col + len(part), name))
            col += len(part)
    # Character columns -> byte offsets, only for lines that need it.
    for row, ranges in highlights.items():
        line = lines[row] if row < len(lines) else ""
        if not line.isascii():
            highlights[row] = [
                (len(line[:s].encode()), len(line[:e].encode()) if e is not None else None, n)
                for s, e, n in ranges
            ]
    return highlights


def window_bounds(lines: Sequence[str], top: int, bottom: int) -> tuple[int, int]:
    """The rows [start, end) to lex for a viewport showing rows [top, bottom). The start moves up
    to a top-level line (starting with a letter, `@` or `#`: most likely not inside a string or
    bracket) so the lexer starts in the state the whole file would have had there."""
    start = max(0, top - WINDOW_LINES)
    for row in range(start, max(-1, start - START_SEARCH_LINES), -1):
        first = lines[row][:1]
        if first.isalpha() or first in ("@", "#"):
            start = row
            break
    return start, min(len(lines), bottom + WINDOW_LINES)


def highlight_rows(lexer: Lexer | None, lines: Sequence[str], start: int, end: int
                   ) -> dict[int, list[Highlight]]:
    """`highlight_map` of the rows [start, end) of a document, keyed by document row."""
    window = highlight_map(lexer, "\n".join(lines[start:end]))
    return {start + row: ranges for row, ranges in window.items()}


def ghost_texts(
    lexer: Lexer | None,
    theme: SpectermTheme,
    line_before_cursor: str,
    ghost: str,
    background: Color | None,
    color_system: str | None = "truecolor",
) -> list[Text]:
    """The ghost text as one rich Text per line, coloured as code in the theme's ghost style.

    The cursor line's text before the cursor is lexed along with the ghost so tokens that start
    before the cursor (a half-typed name, an open string) are coloured correctly.
    """
    lines = [Text() for _ in ghost.split("\n")]
    if lexer is None:
        style = theme.ghost_token_style(_TEXT, background, color_system)
        for line, part in zip(lines, ghost.split("\n")):
            line.append(part, style)
        return lines
    skip = len(line_before_cursor)
    row = 0
    for _index, ttype, value in lexer.get_tokens_unprocessed(line_before_cursor + ghost):
        if skip >= len(value):
            skip -= len(value)
            continue
        value, skip = value[skip:], 0
        style = theme.ghost_token_style(ttype, background, color_system)
        for i, part in enumerate(value.split("\n")):
            if i:
                row += 1
            if part and row < len(lines):
                lines[row].append(part, style)
    return lines

