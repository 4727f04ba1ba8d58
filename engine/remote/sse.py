"""Server-Sent Events framing: the lines of a streamed reply in, one JSON chunk per event out.

`data:` lines are joined until a blank line ends the event; comments (`:` keep-alive pings),
`event:`/`id:` fields and stray blank lines are skipped. `[DONE]` ends an OpenAI stream. Anything a
server sends that is not SSE is remembered, so a reply that never framed an event can be reported
for what it was (an HTML error page, plain JSON) instead of as silence.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

DONE = "[DONE]"


class MalformedChunk(ValueError):
    """An event whose data is not a JSON object."""


@dataclass
class SseFramer:
    """Feed lines; get an event's data when an event is complete."""

    _data: list[str] | None = None
    stray: str = ""  # the first line that was not SSE, for error messages
    events: int = 0

    def feed(self, line: str) -> str | None:
        if self._data is None:
            self._data = []
        if line.startswith(":"):  # comment / keep-alive ping
            return None
        if line.startswith("data:"):
            value = line[5:]
            self._data.append(value[1:] if value.startswith(" ") else value)
            return None
        if line.strip():
            field = line.split(":", 1)[0]
            if field not in ("event", "id", "retry") and not self.stray:
                self.stray = line.strip()[:120]
            return None
        return self._take()

    def finish(self) -> str | None:
        """The data of an event the stream ended without closing (no blank line after it)."""
        return self._take()

    def _take(self) -> str | None:
        if not self._data:
            return None
        payload = "\n".join(self._data)
        self._data = []
        self.events += 1
        return payload


def parse_chunk(payload: str) -> dict[str, Any]:
    """An event's data as a JSON object, or MalformedChunk saying what came instead."""
    try:
        chunk = json.loads(payload)
    except ValueError:
        raise MalformedChunk(f"not JSON: {payload.strip()[:80]!r}") from None
    if not isinstance(chunk, dict):
        raise MalformedChunk(f"not a JSON object: {payload.strip()[:80]!r}")
    return chunk
