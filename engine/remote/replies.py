"""What one streamed reply has delivered so far, read from the JSON chunks of the three reply
formats: OpenAI chat (`choices[].delta.content`), OpenAI text (`choices[].text`) and llama-server's
native /infill stream (`content`, `stop`, `timings`)."""

from __future__ import annotations

from typing import Any, Literal, Mapping

from ..requests import FinishReason, Request

ReplyFormat = Literal["chat", "text", "native"]


class ReplyState:
    """Text, token counts, timings and the finish reason of one reply."""

    def __init__(self, request: Request) -> None:
        self.request = request
        self.text = ""
        self.pieces = 0
        self.first_token_at: float | None = None
        self.timings: Mapping[str, Any] | None = None
        self.timings_changed = False
        self.usage_tokens = 0
        self.prompt_tokens = 0
        self.done = False
        self.reason: FinishReason | None = None

    def _finish(self, finish: str | None) -> None:
        if not finish:
            return
        if finish == "length":
            self.reason = "length"
        elif finish == "stop":
            # OpenAI's "stop" covers both end-of-sequence and a stop string
            self.reason = "stop" if getattr(self.request, "stop", ()) else "eos"
        else:
            self.reason = "eos"

    def absorb(self, chunk: Mapping[str, Any], fmt: ReplyFormat) -> str:
        """Take one JSON chunk; return its text."""
        timings = chunk.get("timings")
        if isinstance(timings, dict):
            self.timings = timings
            self.timings_changed = True
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage_tokens = int(usage.get("completion_tokens") or 0)
            self.prompt_tokens = int(usage.get("prompt_tokens") or 0)
        if fmt == "native":  # llama-server's own /infill and /completion stream
            if chunk.get("stop"):
                self.done = True
                stop_type = chunk.get("stop_type")
                self.reason = "length" if stop_type == "limit" else "stop" if stop_type == "word" else "eos"
            return str(chunk.get("content") or "")
        choices = chunk.get("choices") or []
        if not choices or not isinstance(choices[0], dict):
            return ""
        choice = choices[0]
        self._finish(choice.get("finish_reason"))
        if fmt == "chat":
            delta = choice.get("delta") or {}
            return str(delta.get("content") or "") if isinstance(delta, dict) else ""
        return str(choice.get("text") or "")
