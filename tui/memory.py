"""Handing freed memory back to the system after a large file is read: its bytes, the decoded text
and the split lines' list are large and short-lived (engine/heap.py says why that matters)."""

from __future__ import annotations

from specterm.engine.heap import release_freed_memory

TRIM_CHARS = 1 << 20  # texts at least this long (characters) are worth a trim after reading


def release_after_reading(text: str) -> None:
    """After a file's `text` was read and handed on: a long one left freed pages worth returning."""
    if len(text) >= TRIM_CHARS:
        release_freed_memory()
