"""Applying a chat answer's code block to the open file: the instruction that asks the model to
merge it into a region, and which region (the selection; else the definition the block
redefines; else the whole file when it is short; else the block around the cursor)."""

from __future__ import annotations

import re
from typing import Sequence

from .region import SHORT_FILE_LINES, block_rows, pick_rows, selected_rows

_NAMED = re.compile(r"^\s*(?:async\s+)?(?:def|class|function|fn|func)\s+([A-Za-z_][\w]*)", re.M)


def merge_instruction(block: str) -> str:
    """The edit instruction for a code block: merged, never pasted."""
    return ("Merge the following code into this code. Where it defines something that is already "
            "here, it replaces that definition; where it says \"...\", keep the existing lines there. "
            "Keep everything else as it is.\n\n" + block.rstrip("\n") + "\n")


def defined_name(block: str) -> str | None:
    """The first function or class the block defines."""
    match = _NAMED.search(block)
    return match.group(1) if match else None


def merge_rows(lines: Sequence[str], block: str, top: tuple[int, int], bottom: tuple[int, int]
               ) -> tuple[int, int] | None:
    """The rows a code block is merged into."""
    if top != bottom:
        return selected_rows(top, bottom)
    name = defined_name(block)
    if name is not None:
        for row, line in enumerate(lines):
            match = _NAMED.match(line)
            if match and match.group(1) == name:
                return block_rows(lines, row)
    if len(lines) <= SHORT_FILE_LINES:
        return 0, len(lines)
    return pick_rows(lines, top, bottom)
