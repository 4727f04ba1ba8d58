"""Ghost-text logic that does not need a widget: what part of a suggestion to show, how much a
"next word" or "next line" accept takes, and the small completion cache.

Kept apart from the editor so the rules can be read (and tested) on their own.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass

from specterm.engine.completion import drop_suffix_repeat

# How much text around the cursor goes into a request (and into the cache key). Bounded so a huge
# file neither blows the context window nor makes hashing slow; the engine trims further if needed.
PREFIX_CHARS = 6000
SUFFIX_CHARS = 2000
# The cache key: the text nearest the cursor only, as llama.vim keys its cache, so a suggestion
# survives an edit far above or below (and the request window's moving start) yet never serves a
# cursor whose surroundings differ.
KEY_PREFIX_CHARS = 1500
KEY_SUFFIX_CHARS = 400
# How far back (characters on the current line) a cached suggestion may be reused after typing.
CACHE_REUSE_CHARS = 48

_WORD = re.compile(r"\s*(?:\w+|[^\w\s]+)")


def next_word(ghost: str) -> str:
    """The part of `ghost` a "next word" accept inserts: leading blanks plus one word or one run
    of punctuation."""
    match = _WORD.match(ghost)
    return match.group(0) if match else ghost


def next_line(ghost: str) -> str:
    """The part a "next line" accept inserts: up to the end of the first line; when the ghost starts
    with a line break, the break plus the whole next line."""
    if ghost.startswith("\n"):
        rest = ghost[1:]
        end = rest.find("\n")
        return ghost if end < 0 else "\n" + rest[:end]
    end = ghost.find("\n")
    return ghost if end < 0 else ghost[:end]


def visible_ghost(ghost: str, line_after_cursor: str, following_lines: list[str]) -> str:
    """The ghost text worth showing at the cursor, or "" when there is nothing new to show.

    `line_after_cursor` is the rest of the cursor's line and `following_lines` the next few lines of
    the document. What merely repeats them is dropped by the engine's own rule
    (`drop_suffix_repeat`), so the live ghost and the final completion agree; on top of that a ghost
    of blanks alone is not shown (Tab would indent anyway).
    """
    if not ghost.strip():
        return ""
    after = line_after_cursor + "".join("\n" + line for line in following_lines)
    shown = drop_suffix_repeat(ghost, after)
    return shown if shown.strip() else ""


@dataclass(frozen=True)
class CacheKey:
    prefix: str
    suffix: str


def cache_key(prefix: str, suffix: str) -> CacheKey:
    return CacheKey(prefix[-KEY_PREFIX_CHARS:], suffix[:KEY_SUFFIX_CHARS])


class CompletionCache:
    """A small LRU of finished suggestions keyed by the text before and after the cursor, as
    llama.vim keeps one: moving back to a position, or undoing, shows the suggestion instantly.

    A lookup also finds a suggestion made a few characters earlier on the same line when the
    characters typed since are the start of that suggestion (the rest is served).
    """

    def __init__(self, size: int = 128) -> None:
        self.size = size
        self._items: OrderedDict[CacheKey, str] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        self._items.clear()

    def put(self, prefix: str, suffix: str, text: str) -> None:
        if not text:
            return
        key = cache_key(prefix, suffix)
        self._items[key] = text
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def __contains__(self, key: CacheKey) -> bool:
        return key in self._items

    def get(self, prefix: str, suffix: str) -> str | None:
        key = cache_key(prefix, suffix)
        text = self._items.get(key)
        if text is not None:
            self._items.move_to_end(key)
            self.hits += 1
            return text
        line_start = prefix.rfind("\n") + 1
        typed_max = min(CACHE_REUSE_CHARS, len(prefix) - line_start)
        for typed in range(1, typed_max + 1):
            earlier = cache_key(prefix[:-typed], suffix)
            text = self._items.get(earlier)
            if text is not None and text.startswith(prefix[-typed:]) and len(text) > typed:
                self._items.move_to_end(earlier)
                self.hits += 1
                return text[typed:]
        self.misses += 1
        return None
