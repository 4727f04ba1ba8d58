"""Handing freed C-heap pages back to the system.

glibc's allocator keeps the pages that large short-lived objects took (a multi-megabyte file's
text, llama.cpp's tokenizer temporaries on the engine's worker thread) once they are freed, so the
process stays as large as at its peak; `malloc_trim` returns them. Elsewhere (macOS, musl) there is
nothing to call and nothing is done. The one wrapper: the engine and the app both call it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import lru_cache


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


def release_freed_memory() -> bool:
    """Return freed heap pages to the system; True when the C library could be asked."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
