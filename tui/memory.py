"""Handing freed memory back to the system after a large file is read.

Reading a multi-megabyte file makes large short-lived objects (its bytes, the decoded text, the
split lines' list); glibc's allocator keeps the heap pages they took once they are freed, so the
process stays as large as at its peak. `malloc_trim` returns them.
Elsewhere (macOS, musl) there is nothing to call and nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import lru_cache

TRIM_CHARS = 1 << 20  # texts at least this long (characters) are worth a trim after reading


@lru_cache(maxsize=1)
def _malloc_trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_after_reading(text: str) -> None:
    """After a file's `text` was read and handed on: a long one left freed pages worth returning."""
    if len(text) >= TRIM_CHARS:
        release_freed_memory()


def release_freed_memory() -> bool:
    """Return freed heap pages to the system; True when the C library could be asked."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
