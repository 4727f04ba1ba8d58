"""The typing pause before an automatic completion, adapted to the user and the model.

A fixed pause is wrong for everyone: a fast typist's gaps between keys are shorter than 250 ms, so
requests start mid-word and are thrown away, and a slow typist waits for nothing. Like Tabby (which
adapts between 100 and 1000 ms), the pause here follows the user's own gaps between keys (moving
average of gaps within a burst) and the measured time a request takes to show its first text: a
request that would be thrown away costs more when responses are slow, so the pause grows with it.
A burst faster than the user's usual speed (a few characters typed at once after moving to a
new place) is followed by its own pause: the wait then follows the burst's gaps, not the average.
Keys closer together than anyone types (AT_ONCE_GAP_S: the terminal, or SSH, delivered them in one
read) are a burst that has ended: the request starts as after a line break.

A line break is different: people stop at the end of a line to read and think, so the request
starts almost at once (LINE_BREAK_S) after Enter, and after blanks typed or deleted that leave the
cursor in its line's indentation (the new line's indentation fixed with Backspace or Tab). If
typing goes on instead, the next key cancels it; it has cost the model a line's worth of prompt
tokens (tens of ms), against 100-250 ms of waiting at every line end otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

MIN_S = 0.06
MAX_S = 1.0
BURST_GAP_S = 1.0  # a longer gap ends a burst: it is a pause, not a typing speed
WEIGHT = 0.2  # of a new observation in the moving averages
LINE_BREAK_S = 0.03  # the pause after a key that broke the line
AT_ONCE_GAP_S = 0.03  # a burst's gaps (the mean of its last two) below this: the keys came at once


@dataclass
class AdaptiveDebounce:
    """`delay_s` is the pause to wait now; `keystroke(t)` and `response(s)` teach it."""

    start_s: float = 0.25  # before anything is measured ([completion] debounce_ms)
    gap_s: float | None = None  # moving average of the gaps between keys within a burst
    response_s: float | None = None  # moving average of keystroke-to-first-text times
    _last_key: float | None = None
    burst_gap_s: float | None = None  # the mean of the current burst's last two gaps
    _prev_gap: float | None = None
    line_break: bool = False  # the latest key broke the line or fixed its indentation

    @property
    def delay_s(self) -> float:
        if self.line_break or (self.burst_gap_s is not None and self.burst_gap_s < AT_ONCE_GAP_S):
            return min(LINE_BREAK_S, self.start_s)
        if self.gap_s is None:
            return self.start_s
        gap = self.gap_s if self.burst_gap_s is None else min(self.gap_s, self.burst_gap_s)
        wait = 1.25 * gap + 0.1 * (self.response_s or 0.0)
        return min(max(wait, min(MIN_S, self.start_s)), MAX_S)

    def keystroke(self, now: float, *, line_break: bool = False) -> None:
        self.line_break = line_break
        last, self._last_key = self._last_key, now
        if last is None or not 0 < now - last < BURST_GAP_S:
            self.burst_gap_s = self._prev_gap = None  # a new burst
            return
        gap = now - last
        self.burst_gap_s = gap if self._prev_gap is None else (gap + self._prev_gap) / 2
        self._prev_gap = gap
        self.gap_s = gap if self.gap_s is None else (1 - WEIGHT) * self.gap_s + WEIGHT * gap

    def response(self, seconds: float) -> None:
        if seconds < 0:
            return
        r = self.response_s
        self.response_s = seconds if r is None else (1 - WEIGHT) * r + WEIGHT * seconds
