"""What the editor remembers about its completion requests: a record of each one (for the info
line and `specterm bench --replay`) and the prefetch in flight.

Kept apart from the Completer so its one job (requests in, events out) stays short.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

from specterm.engine import CompletionRequest, Stats

from .ghost import CacheKey, cache_key

Source = Literal["engine", "prefetch", "cache"]
RECORDS = 4096  # a replay of a few minutes makes a few hundred; the info line needs the last
LAG_PROBE_S = 0.02
UI_BUSY_SHARE = 0.1  # the UI loop late this share of a request's time: its tokens/s is not the engine's


@dataclass
class CompletionRecord:
    """One engine request for a suggestion, from the keystroke that caused it to its end."""

    request_id: int
    request: CompletionRequest
    prefetch: bool  # asked ahead, as if the current suggestion were accepted
    keystroke_at: float  # monotonic() of the keystroke (or finish) that caused it
    started_at: float = field(default_factory=time.monotonic)
    first_text_at: float | None = None
    finished_at: float | None = None
    reason: str = ""
    text: str = ""
    stats: Stats | None = None
    shown: bool = False  # some of it reached the screen
    ui_lag_s: float = 0.0  # how late the UI loop ran its timers while this request generated

    @property
    def alternative(self) -> bool:
        """Asked for another first token than the target's best (tui/widgets/alternatives.py)."""
        return bool(self.request.first_token_rank)


@dataclass
class Prefetch:
    """The next suggestion being computed as if the current one were accepted."""

    request_id: int
    key: CacheKey  # where the cursor will be once accepted
    record: CompletionRecord
    shown: str = ""  # its text so far, by the live rules


async def probe_lag(record: CompletionRecord) -> None:
    """Sum how late the UI loop wakes while `record` generates: the time it was busy, when the
    engine thread also waits for the GIL. Cancelled when the request ends."""
    while record.finished_at is None:
        start = time.monotonic()
        await asyncio.sleep(LAG_PROBE_S)
        record.ui_lag_s += max(0.0, time.monotonic() - start - LAG_PROBE_S)


def info_line(record: CompletionRecord | None) -> str:
    """What the last shown suggestion cost, llama.vim's info string from `Stats`: cached and
    decoded prompt tokens, prompt time, generated tokens, time and rate, accepted/drafted. Says
    "UI busy" when the UI loop was busy long enough to slow the engine thread (then the rate is
    not the engine's own)."""
    if record is None or record.stats is None:
        return "no suggestion yet"
    s = record.stats
    cached = s.prompt_tokens - s.prompt_tokens_decoded
    tps = s.tokens_per_second
    parts = [
        "prefetched" if record.prefetch else "asked",
        f"prompt {s.prompt_tokens} tok ({cached} cached) {s.prompt_time_s * 1000:.0f} ms",
        f"gen {s.tokens} tok {s.generation_time_s * 1000:.0f} ms" + (f" {tps:.0f} t/s" if tps else ""),
        f"acc {s.accepted}/{s.drafted}",
    ]
    if record.first_text_at is not None:
        parts.append(f"first text {(record.first_text_at - record.keystroke_at) * 1000:.0f} ms")
    took = (record.finished_at or record.started_at) - record.started_at
    if took > 0 and record.ui_lag_s > UI_BUSY_SHARE * took:
        parts.append(f"UI busy {record.ui_lag_s * 1000:.0f} ms: t/s below the engine's")
    return " · ".join(parts)


class SuggestionLog:
    """The last `RECORDS` completion records, newest last."""

    def __init__(self) -> None:
        self.records: deque[CompletionRecord] = deque(maxlen=RECORDS)

    def add(self, record: CompletionRecord) -> CompletionRecord:
        self.records.append(record)
        return record

    def answered(self, key: CacheKey, recent: int = 64) -> CompletionRecord | None:
        """The newest finished request among the last `recent` that was asked at `key` (what a
        cached suggestion came from: often a prefetch; never an alternative)."""
        for i, record in enumerate(reversed(self.records)):
            if i >= recent:
                break
            if (record.finished_at is not None and not record.alternative
                    and cache_key(record.request.prefix, record.request.suffix) == key):
                return record
        return None

    def last_shown(self) -> CompletionRecord | None:
        for record in reversed(self.records):
            if record.shown and record.finished_at is not None:
                return record
        return None
