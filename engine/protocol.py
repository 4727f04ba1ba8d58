"""The engine protocol: what the CLI, TUI and bench talk to. A local llama.cpp engine and a remote
(OpenAI-compatible HTTP) engine are two implementations of it."""

from __future__ import annotations

from typing import AsyncIterator, Protocol, runtime_checkable

from .requests import EngineInfo, Event, Request
from .settings import DraftSettings
from .stats import Stats


@runtime_checkable
class Engine(Protocol):
    info: EngineInfo

    async def start(self) -> None:
        """Load models / connect. Raises EngineError with a user-facing message."""

    def stream(self, request: Request) -> AsyncIterator[Event]:
        """Run one request; yields TextDelta and StatsUpdate events and ends with one Finished."""

    async def cancel(self) -> None:
        """Stop the running request; takes effect within one target pass."""

    def session_stats(self) -> Stats:
        """Rolling statistics over every finished request (a copy)."""

    async def set_drafter(self, draft: DraftSettings) -> None:
        """Switch the drafter at run time (model, lookup, none)."""

    async def remember(self, text: str) -> None:
        """Let a session drafter index text the session saw (an opened file, an answer); a no-op
        for engines without one. Indexing runs on the engine's worker, never on the caller."""

    async def forget_session(self) -> None:
        """Empty the session drafter's memory (a user's reset; a replay's headless re-runs, which
        must not draft the answers they gave already); a no-op for engines without one."""

    async def prewarm(self, request: Request, *, urgent: bool = False) -> Stats | None:
        """While idle, decode the start of the prompt `request` would have (the extra context and
        the prefix but its end) into the KV cache, so the next request there decodes only the
        rest. Best effort and low priority: any request stops it; a no-op where unsupported.
        `urgent`: a request there is coming soon (the cursor just moved there), so read with
        every core a request would use, not only the cores left while the user types.
        Returns when the read has ended (done or stopped) what it read, as a request's Stats do
        (prompt_tokens: the whole prompt's; prompt_tokens_decoded, prompt_time_s: what was read
        and how long it took), so a caller can size its prompts before any request has run;
        None where nothing was read or the engine cannot tell."""

    async def close(self) -> None:
        """Free models and stop the worker."""
