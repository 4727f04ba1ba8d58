"""The ring of extra context for completions, as llama.vim keeps one: chunks of up to 64 lines from
other open and recently edited files and from text the user copied.

A chunk is taken where the user worked (around the cursor of a file being left, where an edit
happened, a copied selection). A new chunk very similar to one already held replaces it (the same
code seen twice is kept once); past 16 chunks the oldest goes. For a request the chunks most
similar to the lines around the cursor are picked, and sent in ring order, oldest first: the same
picks give the same prompt start, so the engine's KV cache (warmed while idle) is reused.
Similarity is llama.vim's: the share of lines two texts have in common. No Textual here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from specterm.engine import ContextFile

RING_CHUNKS = 16
CHUNK_LINES = 64
EVICT_SIMILARITY = 0.9  # a new chunk this similar to an old one replaces it
MIN_LINES = 3  # chunks with fewer non-blank lines say too little to be worth a prompt's room


def line_set(lines: Sequence[str]) -> frozenset[str]:
    return frozenset(s for s in (line.strip() for line in lines) if s)


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """2 x common lines / all lines (0 for nothing), as llama.vim's chunk_sim."""
    if not a or not b:
        return 0.0
    return 2 * len(a & b) / (len(a) + len(b))


@dataclass(frozen=True)
class Chunk:
    path: str
    start: int  # first line's row in its file (-1: copied text)
    text: str
    lines: frozenset[str]


class ContextRing:
    def __init__(self, size: int = RING_CHUNKS, chunk_lines: int = CHUNK_LINES) -> None:
        self.size = size
        self.chunk_lines = chunk_lines
        self.chunks: list[Chunk] = []  # oldest first
        self.version = 0  # grows when the ring changes (prewarm only then)

    def __len__(self) -> int:
        return len(self.chunks)

    def add_around(self, path: str, lines: Sequence[str], row: int) -> bool:
        """The chunk of `lines` (a file's) centred on `row`."""
        start = max(0, min(row - self.chunk_lines // 2, len(lines) - self.chunk_lines))
        return self.add(path, start, lines[start: start + self.chunk_lines])

    def add_text(self, path: str, text: str) -> bool:
        """Copied text (its first chunk_lines lines)."""
        return self.add(path, -1, text.split("\n")[: self.chunk_lines])

    def add(self, path: str, start: int, lines: Sequence[str]) -> bool:
        """Hold a chunk; False when it is too small or already held."""
        key = line_set(lines)
        if len(key) < MIN_LINES:
            return False
        kept = [c for c in self.chunks if similarity(c.lines, key) <= EVICT_SIMILARITY]
        if len(kept) < len(self.chunks) and any(c.lines == key for c in self.chunks):
            return False  # the very same lines are held already: nothing changes
        kept.append(Chunk(path, start, "\n".join(lines) + "\n", key))
        self.chunks = kept[-self.size:]
        self.version += 1
        return True

    def pick(self, around: Sequence[str], count: int, *, path: str | None = None,
             rows: tuple[int, int] = (0, -1), held: Sequence[ContextFile] = ()) -> tuple[ContextFile, ...]:
        """Up to `count` chunks most similar to the lines `around` the cursor; chunks of `path`
        within `rows` (what the request holds already) are left out.

        The order is the prompt's, and the engine re-reads everything after the first chunk that
        differs from its last prompt (a chunk is hundreds of tokens, seconds for a small model on
        a CPU). So the chunks of `held` (the last picks) that are still picked keep their places,
        and the others follow in ring order (oldest first: a new chunk goes last)."""
        key = line_set(around)
        first, last = rows

        def inside(c: Chunk) -> bool:
            return c.path == path and c.start >= 0 and c.start < last and c.start + self.chunk_lines > first

        scored = [(similarity(c.lines, key), i) for i, c in enumerate(self.chunks) if not inside(c)]
        chosen = [self.chunks[i] for i in sorted(i for _, i in sorted(scored, reverse=True)[:count])]
        by_text = {(c.path, c.text): c for c in chosen}
        kept = [by_text.pop((f.path, f.text)) for f in held if (f.path, f.text) in by_text]
        rest = [c for c in chosen if (c.path, c.text) in by_text]
        return tuple(ContextFile(c.path, c.text) for c in kept + rest)
