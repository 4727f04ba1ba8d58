"""A bounded n-gram index over token text: where did these last few tokens occur before, and what
followed them?

Why this shape (after llama.cpp's ngram-mod and SuffixDecoding): two fixed
numpy arrays, allocated once, so the memory bound holds by construction and no Python object is
created per token:

- a ring of tokens (`capacity` of them; the oldest are overwritten: eviction by age);
- a hash table of buckets, `ways` positions each, keyed by (n, the n tokens before a position):
  a bucket keeps the latest occurrences of its n-grams (a position overwrites the slot
  `position % ways`, so frequent n-grams keep several recent occurrences and a flood of new text
  evicts old entries). Hashed positions touch every page of a table, so the table starts small
  and grows (rebuilt from the ring, 2x at a time) while its entries pass half of its slots, up
  to its share of the cap: a session that has read one file holds a small table, not the whole
  cap (a table allocated at its full share became resident after one file). At that load nearly
  all lookups in held-out code find what an unbounded table finds; a quarter finds a little
  more, for twice the memory.

A hit is verified against the ring, so hash collisions and overwritten text are never proposed.
Documents (a file, an earlier answer) are separated by a marker that no match or continuation
crosses. Indexing is vectorised per appended chunk: a whole file costs a few numpy passes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_SEP = -1  # between documents: no n-gram and no continuation crosses it
_EMPTY = 0  # a free table slot (position 0 holds the first separator and is never a hit)
_MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing
_BASE = np.uint64(1_000_003)
_M64 = (1 << 64) - 1
_POS_MAX = 2**31 - 1  # positions are int32
_MATCH_MAX = 32  # a match is extended backwards up to this many tokens
_SMALL = 16  # appends up to this many tokens are indexed in plain Python (numpy's per-call cost)
_CHUNK = 4096  # positions indexed per numpy pass (bounds the temporaries)
_FIRST_BITS = 12  # the table starts with 2**12 buckets (64 KB at 4 ways)
_LOAD = 0.5  # entries written per slot above which the table grows
_GROWTH_BITS = 1  # 2x the buckets at a time
DEFAULT_NGRAMS = (1, 2, 3, 4, 6, 8)


@dataclass(frozen=True)
class Candidate:
    """One earlier occurrence of the text's tail: how long the match is, what followed it."""

    match_len: int
    position: int  # where the continuation starts (larger: more recent)
    continuation: list[int]


class NgramIndex:
    """Fixed-size n-gram -> positions index over a ring of tokens (see the module docstring)."""

    def __init__(self, memory_bytes: int, *, ngrams: tuple[int, ...] = DEFAULT_NGRAMS,
                 ways: int = 4) -> None:
        if memory_bytes < 1024:
            raise ValueError(f"an n-gram index needs at least 1 KiB, got {memory_bytes} bytes")
        self.ngrams = tuple(sorted(set(n for n in ngrams if n >= 1)))
        self.ways = max(1, ways)
        half = memory_bytes // 2
        self.capacity = max(half // 4, 64)  # int32 tokens
        buckets = max(half // (4 * self.ways), 16)
        self._max_bits = buckets.bit_length() - 1  # a power of two, at most `buckets`
        # np.zeros maps pages lazily: the ring is touched as it fills, never beyond this.
        self._ring = np.zeros(self.capacity, dtype=np.int32)
        self.clear()

    @property
    def nbytes(self) -> int:
        """The memory bound: the ring and the largest table."""
        return self._ring.nbytes + (1 << self._max_bits) * self.ways * 4

    @property
    def table_bytes(self) -> int:
        """The table's size now (it grows with the text held, up to its share of `nbytes`)."""
        return self._table.nbytes

    @property
    def tokens(self) -> int:
        """Tokens held now (separators included), at most `capacity`."""
        return min(self.end, self.capacity)

    def clear(self) -> None:
        self._bits = min(_FIRST_BITS, self._max_bits)
        self._table = np.zeros((1 << self._bits, self.ways), dtype=np.int32)
        self._written = 0  # entries written into the table since it was (re)built
        self._ring[0] = _SEP
        self.end = 1  # next position to write; position 0 is a separator
        self._tail = np.empty(0, dtype=np.int32)  # the current document's last tokens
        self._tail_list: list[int] = []

    # -- writing ---------------------------------------------------------------------------------
    def add_document(self, tokens) -> None:
        """Start a new document (a file, an answer) and index its tokens."""
        if self.end > 1 and self._ring[(self.end - 1) % self.capacity] != _SEP:
            self._write(np.asarray([_SEP], dtype=np.int32))
        self._tail = np.empty(0, dtype=np.int32)
        self._tail_list = []
        self.extend(tokens)

    def extend(self, tokens) -> None:
        """Append tokens to the current document, indexing every n-gram that ends before each."""
        arr = np.asarray(tokens, dtype=np.int32)
        if arr.size == 0:
            return
        # Very long input: only the last `capacity` tokens could stay anyway.
        if arr.size >= self.capacity:
            arr = arr[-(self.capacity - 1):]
            self._tail = np.empty(0, dtype=np.int32)
            self._tail_list = []
        if self.end + arr.size >= _POS_MAX:  # positions would overflow: start over
            self.clear()
        start = self.end
        self._write(arr)
        keep = max(self.ngrams) + _MATCH_MAX
        if (self._written + arr.size * len(self.ngrams) > _LOAD * self._table.size
                and self._bits < self._max_bits):
            # Grow first: the rebuild from the ring indexes `arr` too (a whole file at once used
            # to be indexed into the small table, most of it overwritten, and the table then grew
            # one step per later append, each a rebuild).
            self._grow()
            self._tail = np.concatenate([self._tail, arr])[-keep:]
            self._tail_list = self._tail.tolist()
        elif arr.size <= _SMALL:
            self._extend_small(arr.tolist(), start)
        else:
            ctx = np.concatenate([self._tail, arr])
            # positions p (continuation starts) with n tokens of this document before them and a
            # known continuation: p in [start, start + arr.size); the new end is indexed by the
            # next append (its first position), so it never takes an older slot.
            self._index(ctx, start - self._tail.size, start)
            self._tail = ctx[-keep:].copy()
            self._tail_list = self._tail.tolist()

    def _index(self, ctx: np.ndarray, ctx_start: int, p_from: int) -> None:
        """Index every continuation position p >= p_from of `ctx` (ctx[i] is at position
        ctx_start + i) under each n-gram of the n tokens before it; n-grams and continuations
        that hold a document separator are skipped. In pieces of _CHUNK positions: numpy's
        temporaries for a whole large file at once took memory that the C allocator kept."""
        back = max(self.ngrams)
        for lo in range(max(p_from - ctx_start, 0), ctx.size, _CHUNK):
            a = max(lo - back, 0)
            self._index_piece(ctx[a: lo + _CHUNK], ctx_start + a, ctx_start + lo)

    def _index_piece(self, ctx: np.ndarray, ctx_start: int, p_from: int) -> None:
        hashes = ctx.astype(np.uint64)
        seps = np.concatenate([[0], np.cumsum(ctx == _SEP)])  # separators in ctx[:i]: seps[i]
        for n in self.ngrams:
            lo = max(p_from - ctx_start, n)  # ctx index of the first continuation
            if lo >= ctx.size:
                continue
            count = ctx.size - lo
            h = np.zeros(count, dtype=np.uint64)
            for k in range(n):
                h = h * _BASE + hashes[lo - n + k : lo - n + k + count]
            idx = np.arange(lo, ctx.size)
            ok = (seps[idx + 1] - seps[idx - n]) == 0  # no separator in the n-gram or at p
            if not ok.all():
                h, idx = h[ok], idx[ok]
            pos = idx + ctx_start
            self._table[self._bucket(h, n), pos % self.ways] = pos.astype(np.int32)
            self._written += int(idx.size)

    def _grow(self) -> None:
        """A table large enough for every n-gram the ring holds at the load factor (2x steps, at
        most the cap's share), rebuilt from that text."""
        need = self.tokens * len(self.ngrams) / _LOAD
        bits = self._bits + _GROWTH_BITS
        while bits < self._max_bits and (1 << bits) * self.ways < need:
            bits += _GROWTH_BITS
        self._bits = min(bits, self._max_bits)
        self._table = np.zeros((1 << self._bits, self.ways), dtype=np.int32)
        self._written = 0
        lo = max(self.end - self.capacity + 1, 0)
        self._index(self._span(lo, self.end), lo, lo)

    def _extend_small(self, new: list[int], start: int) -> None:
        """`extend` for a few tokens (what one decoding pass emits), without numpy calls."""
        ctx = self._tail_list + new
        first = len(self._tail_list)
        table = self._table
        for i in range(len(new)):  # as in `extend`: the new end waits for the next append
            p = start + i
            j = first + i  # ctx[:j] precedes position p
            for n in self.ngrams:
                if n > j:
                    break
                row = table[self._bucket_py(ctx[j - n : j], n)]
                row[int(row.argmin())] = p  # the oldest entry (or a free one) makes room
                self._written += 1
        keep = max(self.ngrams) + _MATCH_MAX
        self._tail_list = ctx[-keep:]
        self._tail = np.asarray(self._tail_list, dtype=np.int32)

    def _bucket_py(self, gram: list[int], n: int) -> int:
        h = 0
        for t in gram:
            h = (h * 1_000_003 + t) & _M64
        return (((h ^ (n * 0x632BE59BD9B4E019 & _M64)) * 0x9E3779B97F4A7C15) & _M64) >> (64 - self._bits)

    def _write(self, arr: np.ndarray) -> None:
        i = self.end % self.capacity
        first = min(arr.size, self.capacity - i)
        self._ring[i : i + first] = arr[:first]
        if first < arr.size:
            self._ring[: arr.size - first] = arr[first:]
        self.end += arr.size

    def _bucket(self, h: np.ndarray, n: int) -> np.ndarray:
        mixed = (h ^ np.uint64(n * 0x632BE59BD9B4E019 & 0xFFFFFFFFFFFFFFFF)) * _MIX
        return (mixed >> np.uint64(64 - self._bits)).astype(np.int64)

    # -- the text, in and out (engine/session_store.py) ------------------------------------------
    def held_text(self) -> np.ndarray:
        """Every token held, oldest first, documents separated by the marker (empty when none)."""
        if self.end <= 1:
            return np.empty(0, dtype=np.int32)
        lo = max(self.end - self.capacity, 0)
        return self._span(lo, self.end).copy()

    def add_text(self, tokens: np.ndarray) -> None:
        """Index a `held_text()` of this or another index (its documents stay apart)."""
        arr = np.asarray(tokens, dtype=np.int32)
        cuts = np.flatnonzero(arr == _SEP)
        for doc in np.split(arr, cuts):
            doc = doc[doc != _SEP]
            if doc.size:
                self.add_document(doc)

    # -- reading ---------------------------------------------------------------------------------
    def _held(self, pos: int) -> bool:
        return self.end - self.capacity < pos < self.end

    def _at(self, lo: int, hi: int) -> list[int]:
        """Tokens at positions [lo, hi) (all held)."""
        return self._span(lo, hi).tolist()

    def _span(self, lo: int, hi: int) -> np.ndarray:
        """Tokens at positions [lo, hi) (all held) as an array: a view of the ring unless the
        span wraps (a rebuild reads all of it: as a list, a Python int per token)."""
        c = self.capacity
        a, b = lo % c, hi % c
        if hi - lo <= 0:
            return np.empty(0, dtype=np.int32)
        if a < b:
            return self._ring[a:b]
        return np.concatenate([self._ring[a:], self._ring[:b]])

    def lookup(self, tail, n_max: int, *, min_n: int = 1, limit: int | None = None) -> list[Candidate]:
        """Earlier occurrences of the longest indexed n-gram that ends `tail`, each with its
        match length (extended backwards) and up to n_max following tokens (the text's own tail,
        whose continuation is not known yet, is never one)."""
        tail = list(tail[-_MATCH_MAX:])
        found: list[Candidate] = []
        for n in reversed(self.ngrams):
            if n < min_n or n > len(tail):
                continue
            gram = tail[-n:]
            row = self._table[self._bucket_py(gram, n)].tolist()
            seen = set()
            for p in row:
                if p == _EMPTY or p in seen or not self._held(p - n) or not self._held(p):
                    continue
                seen.add(p)
                if self._at(p - n, p) != gram:
                    continue  # a collision, or overwritten text
                hi = min(p + n_max, self.end)
                if limit is not None:
                    hi = min(hi, limit)
                cont = self._at(p, hi)
                if _SEP in cont:
                    cont = cont[: cont.index(_SEP)]
                if cont:
                    found.append(Candidate(self._match_len(tail, p), p, cont))
            if found:
                return found
        return found

    def _match_len(self, tail: list[int], p: int) -> int:
        """How many tokens before p equal the end of `tail` (at most len(tail))."""
        lo = max(p - len(tail), self.end - self.capacity + 1, 0)
        before = self._at(lo, p)
        m = 0
        for a, b in zip(reversed(before), reversed(tail)):
            if a != b:
                break
            m += 1
        return m


def best_continuation(cands: list[Candidate], n_max: int) -> tuple[list[int], int]:
    """The continuation most occurrences agree on, token by token (SuffixDecoding's most frequent
    path): each step takes the token with the largest weight (match length; recency breaks
    ties) among the occurrences still agreeing. Returns (tokens, longest match among them)."""
    alive = list(cands)
    out: list[int] = []
    while alive and len(out) < n_max:
        i = len(out)
        votes: dict[int, tuple[float, int]] = {}
        for c in alive:
            if len(c.continuation) > i:
                tok = c.continuation[i]
                w, recent = votes.get(tok, (0.0, -1))
                votes[tok] = (w + c.match_len, max(recent, c.position))
        if not votes:
            break
        tok = max(votes, key=lambda t: votes[t])
        out.append(tok)
        alive = [c for c in alive if len(c.continuation) > i and c.continuation[i] == tok]
    match = max((c.match_len for c in alive), default=max((c.match_len for c in cands), default=0))
    return out, match
