"""What the editor remembers about its completion requests: a record of each one (for the info
line and `specterm bench --replay`) and the prefetch in flight.

Kept apart from the Completer so its one job (requests in, events out) stays short.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

from specterm.engine import CompletionRequest, Stats

from .ghost import CacheKey

Source = Literal["engine", "prefetch", "cache"]
RECORDS = 4096  # a replay of a few minutes makes a few hundred; the info line needs the last


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


@dataclass
class Prefetch:
    """The next suggestion being computed as if the current one were accepted."""

    request_id: int
    key: CacheKey  # where the cursor will be once accepted
    record: CompletionRecord
    shown: str = ""  # its text so far, by the live rules


class SuggestionLog:
    """The last `RECORDS` completion records, newest last."""

    def __init__(self) -> None:
        self.records: deque[CompletionRecord] = deque(maxlen=RECORDS)

    def add(self, record: CompletionRecord) -> CompletionRecord:
        self.records.append(record)
        return record

    def last_shown(self) -> CompletionRecord | None:
        for record in reversed(self.records):
            if record.shown and record.finished_at is not None:
                return record
        return None
