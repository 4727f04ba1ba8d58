"""Alternative suggestions: up to three distinct ones for the ghost shown, cycled with Alt+] / Alt+[.

Asked for only after the main suggestion has finished, one at a time while the user stays idle;
an edit or a cursor move stops them (the editor cancels the request). Alternative k is what the
engine completes when the first token is the target's k-th most likely one
(`CompletionRequest.first_token_rank`), continued greedily through the normal speculative loop,
with the same completion rules: still "what the model says", given that start. They are not
cached and not reported to the status bar (its figures stay those of the suggestion shown).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable

from specterm.engine import CompletionRequest, Finished

from ..suggest.completer import Completer

MAX_OPTIONS = 3  # the main suggestion and two alternatives
MAX_RANK = 4  # first-token ranks tried: a rank whose text repeats another's (or is empty) is skipped


@dataclass
class Alternatives:
    """The suggestions for one cursor position; options[0] is the main one."""

    options: list[str]
    index: int = 0
    fetching: int | None = None  # the request id of the alternative being computed
    done: bool = False
    tried: list[int] = field(default_factory=list)

    def add(self, text: str) -> bool:
        if not text.strip() or text in self.options or len(self.options) >= MAX_OPTIONS:
            return False
        self.options.append(text)
        return True

    def step(self, delta: int, consumed: str) -> str | None:
        """Move to the next (delta 1) or previous (-1) option that still fits what the user typed
        through since; None when no other option does."""
        n = len(self.options)
        for i in range(1, n):
            index = (self.index + delta * i) % n
            text = self.options[index]
            if text.startswith(consumed) and len(text) > len(consumed):
                self.index = index
                return text
        return None

    @property
    def marker(self) -> str:
        """"2/3" once there is more than one option."""
        return f"{self.index + 1}/{len(self.options)}" if len(self.options) > 1 else ""


async def fetch(completer: Completer, request: CompletionRequest, alts: Alternatives,
                wanted: Callable[[], bool], changed: Callable[[], None]) -> None:
    """Ask for alternatives one rank at a time until there are MAX_OPTIONS, while `wanted()`;
    `changed()` after each one added."""
    for rank in range(1, MAX_RANK + 1):
        if len(alts.options) >= MAX_OPTIONS or not wanted():
            break
        request_id = completer.new_request_id()
        alts.fetching = request_id
        alts.tried.append(rank)
        final: Finished | None = None
        alt = replace(request, first_token_rank=rank)
        # In the log like every request the engine ran (the replay runs them all again headless),
        # never taken for the main suggestion at its cursor (SuggestionLog.answered).
        record = completer.record(request_id, alt, time.monotonic())
        async for event in completer.stream(request_id, alt, record):
            if not wanted():
                break
            if isinstance(event, Finished):
                final = event
        alts.fetching = None
        if final is None or not final.answered or not wanted():
            break
        if alts.add(final.text):
            changed()
    alts.done = True
