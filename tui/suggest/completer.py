"""The bridge between editors and the engine for inline completions.

One `Completer` per app: it builds `CompletionRequest`s from the configured options, owns the cache,
streams from the engine (through the `Engine` protocol only) and reports every event to the app so
the status bar can show live figures. Editors run `stream()` in their own Textual workers, so the UI
thread never waits for the model.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import AsyncIterator, Callable, Mapping

from specterm.engine import CompletionRequest, ContextFile, Engine, Event, Finished, Stats, TextDelta
from specterm.engine.completion import worth_caching

from ..config import CompletionConfig, KeysConfig, builtin_settings, key_names
from ..widgets.ghost import PREFIX_CHARS, SUFFIX_CHARS, CompletionCache
from ..widgets.suggestions import CompletionRecord, Prefetch, SuggestionLog, probe_lag

EventSink = Callable[[str, Event], None]  # (kind: "completion" | "chat", event)


ACCEPT_ACTIONS = {"accept": "accept_completion", "accept_word": "accept_word", "accept_line": "accept_line"}


def accept_keys(keys: KeysConfig) -> Mapping[str, str]:
    """Key name -> editor action from the `[keys]` section (validated by the config loader)."""
    return MappingProxyType({name: action for option, action in ACCEPT_ACTIONS.items()
                             for name in key_names(getattr(keys, option))})


DEFAULT_ACCEPT_KEYS = accept_keys(builtin_settings().keys)  # config.toml's [keys]


@dataclass(frozen=True)
class CompletionOptions(CompletionConfig):
    """The `[completion]` section (its fields and units are CompletionConfig's) with the `[keys]`
    the editor acts on while a suggestion is shown."""

    accept_keys: Mapping[str, str]  # key name -> editor action

    @classmethod
    def from_config(cls, config: CompletionConfig | None = None, keys: KeysConfig | None = None) -> "CompletionOptions":
        """From `[completion]` and `[keys]`; None: config.toml's own (the built-in defaults)."""
        config = builtin_settings().completion if config is None else config
        values = {f.name: getattr(config, f.name) for f in fields(CompletionConfig)}
        return cls(**values, accept_keys=DEFAULT_ACCEPT_KEYS if keys is None else accept_keys(keys))


def stable_window_start(prefix: str, max_chars: int) -> int:
    """Where the request's prefix starts in a long file: at a line boundary, moved only in steps of
    a quarter window. A start that slid with every keystroke would change the prompt's first tokens
    each time and defeat the engine's prefix reuse (the whole window decoded again per request)."""
    if len(prefix) <= max_chars:
        return 0
    step = max(max_chars // 4, 1)
    start = -(-(len(prefix) - max_chars) // step) * step  # round up: the window stays <= max_chars
    nl = prefix.find("\n", start)
    return nl + 1 if 0 <= nl < len(prefix) - 1 else start


STICKY = 1.5  # a window kept where the last one began may grow to this many times its size
HEAD_CHARS = 200  # the start of the last window, found again in the next prefix


def sticky_window_start(prefix: str, max_chars: int, head: str = "") -> int:
    """`stable_window_start`, except where the last request's window began (`head`: its first
    characters) is still in `prefix` and the window from there holds at most STICKY x max_chars:
    then it begins there again. Steps counted from the prefix's own start still move now and then
    while typing (a step boundary crossed, or the editor's row window moved), and each move read
    the whole window again (seconds for 1,000+ tokens on a small CPU)."""
    if head:
        at = prefix.find(head)
        if at >= 0 and len(prefix) - at <= max_chars * STICKY:
            return at
    return stable_window_start(prefix, max_chars)


# The prefix window fits what the engine reads in about this long. A window the engine has not
# read (after a jump, or when its start had to move) is read whole before the first suggestion;
# with 6,000 characters (1,200-2,400 tokens) that was 4-8 s for the demo model on 2 cores, and the
# first pauses after a jump in a 25 KB file waited 0.9-2.3 s for the rest. A GPU reads the full
# window within the budget, so there it stays PREFIX_CHARS.
READ_BUDGET_S = 2.0
# ... and a request reads at most about this long before its first token (CompletionRequest
# .first_read_s): after a move the engine starts the prefix later, and the whole window comes back
# with a read in the background (a prewarm without this budget: tui/suggest/prewarm.py).
FIRST_READ_S = 0.2
MIN_WINDOW_CHARS = 1500
WINDOW_STEP_CHARS = 500
MIN_READ_TOKENS = 64  # a shorter read says little about the engine's rate
WINDOW_HYSTERESIS = 0.25  # a new size must differ by this share (each change is a full re-read)


@dataclass
class PrefixWindow:
    """How many characters of prefix a request carries: what the engine reads in READ_BUDGET_S,
    from the prompt reads it reported (characters a second, averaged), in steps, between
    MIN_WINDOW_CHARS and PREFIX_CHARS; PREFIX_CHARS until a read was long enough to tell."""

    chars: int = PREFIX_CHARS
    rate: float | None = None  # prompt characters read per second

    def observe(self, prefix_chars: int, stats: Stats) -> None:
        """A finished request's prompt read (`stats`: its engine Stats). Characters a token are
        the prefix's over the whole prompt's tokens: exact for a prompt that is the prefix alone,
        fewer than true where the suffix and extra context share the prompt (a smaller window)."""
        tokens, decoded, seconds = stats.prompt_tokens, stats.prompt_tokens_decoded, stats.prompt_time_s
        if decoded < MIN_READ_TOKENS or seconds <= 0 or tokens <= 0 or prefix_chars <= 0:
            return
        rate = decoded / seconds * prefix_chars / tokens
        self.rate = rate if self.rate is None else 0.7 * self.rate + 0.3 * rate
        want = round(self.rate * READ_BUDGET_S / WINDOW_STEP_CHARS) * WINDOW_STEP_CHARS
        want = max(MIN_WINDOW_CHARS, min(PREFIX_CHARS, want))
        if abs(want - self.chars) > WINDOW_HYSTERESIS * self.chars:
            self.chars = want


class Completer:
    def __init__(
        self,
        options: CompletionOptions,
        *,
        event_sink: EventSink | None = None,
        context_files: Callable[[str | None], tuple[ContextFile, ...]] | None = None,
    ) -> None:
        self.options = options
        self.engine: Engine | None = None  # set once the engine has started
        self.cache = CompletionCache()
        self.event_sink = event_sink
        self.context_files = context_files
        self.blocked_by: str | None = None  # e.g. "chat": automatic completions wait
        self.log = SuggestionLog()  # every request's timings and figures (info line, replay bench)
        self.prefetch: Prefetch | None = None  # the next suggestion, computed ahead
        self._active: int | None = None
        self._next_id = 0
        self._heads: dict[str | None, str] = {}  # path -> the start of its last prefix window
        self.window = PrefixWindow()

    @property
    def ready(self) -> bool:
        return self.engine is not None

    @property
    def generating(self) -> bool:
        """A suggestion (asked for or prefetched) is being written now."""
        return self._active is not None

    async def remember(self, text: str) -> None:
        """Give a text the session saw (a file just opened) to the engine's session memory; before
        the engine has started there is nothing to feed."""
        if self.engine is not None and text:
            await self.engine.remember(text)

    def new_request_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def build_request(self, prefix: str, suffix: str, path: str | None,
                      keystroke_at: float | None = None, *, whole: bool = False) -> CompletionRequest:
        """The request for a cursor; its time budget counts from `keystroke_at` (monotonic). Its
        first read is bounded by FIRST_READ_S; `whole` (a prewarm that grows the window back)
        reads the whole prefix window."""
        o = self.options
        start = sticky_window_start(prefix, self.window.chars, self._heads.get(path, ""))
        self._heads[path] = prefix[start:start + HEAD_CHARS]
        return CompletionRequest(
            prefix=prefix[start:],
            suffix=suffix[:SUFFIX_CHARS],
            path=path,
            context_files=self.context_files(path) if self.context_files else (),
            max_tokens=o.max_tokens,
            multiline=o.multiline,
            max_lines=o.max_lines,
            time_budget_s=o.time_budget_s,
            predict_budget_s=o.predict_budget_s,
            started_at=keystroke_at,
            first_read_s=None if whole else FIRST_READ_S,
        )

    def start_prefetch(self, request_id: int, request: CompletionRequest, key) -> Prefetch:
        """Note a prefetch: the request a Tab at `key` would make, asked now."""
        record = self.log.add(CompletionRecord(request_id, request, True, time.monotonic()))
        self.prefetch = Prefetch(request_id, key, record)
        return self.prefetch

    def record(self, request_id: int, request: CompletionRequest, keystroke_at: float) -> CompletionRecord:
        return self.log.add(CompletionRecord(request_id, request, False, keystroke_at))

    async def stream(self, request_id: int, request: CompletionRequest,
                     record: CompletionRecord | None = None) -> AsyncIterator[Event]:
        """Stream one completion; its events go into its `record` and to the app's sink (a
        prefetch's only once it is on screen: the bar shows what the user sees). A newer request makes the engine
        end this one ("superseded"), a prefetch included: a prefetch never holds up what the user asked for.
        Alternatives (`first_token_rank` > 0) are neither reported nor cached: the figures and the
        cache are the main suggestion's."""
        engine = self.engine
        if engine is None:
            return
        self._active = request_id
        probe = asyncio.ensure_future(probe_lag(record)) if record is not None else None
        try:
            async for event in engine.stream(request):
                main = not request.first_token_rank
                if record is not None:
                    if isinstance(event, TextDelta) and record.first_text_at is None:
                        record.first_text_at = time.monotonic()
                    elif isinstance(event, Finished):
                        record.finished_at = time.monotonic()
                        record.reason, record.text, record.stats = event.reason, event.text, event.stats
                if isinstance(event, Finished) and event.stats is not None:
                    self.window.observe(len(request.prefix), event.stats)
                if (self.event_sink is not None and main
                        and (record is None or not record.prefetch or record.shown)):
                    self.event_sink("completion", event)
                if isinstance(event, Finished) and main and worth_caching(event.reason, event.text):
                    self.cache.put(request.prefix, request.suffix, event.text)
                yield event
        finally:
            if probe is not None:
                probe.cancel()
            if self._active == request_id:
                self._active = None
            if self.prefetch is not None and self.prefetch.request_id == request_id:
                self.prefetch = None  # its answer is in the cache now (if it is one)

    def drop_prefetch(self) -> int | None:
        """Forget the prefetch (the user edited elsewhere: its answer would serve nobody); returns
        its request id for `cancel`, None when there was none."""
        pre, self.prefetch = self.prefetch, None
        return None if pre is None else pre.request_id

    async def prewarm(self, request: CompletionRequest, *, urgent: bool = False) -> None:
        """Let the engine decode the start of `request`'s prompt while idle (Engine.prewarm). Its
        read sizes the prefix window as a request's does: the head read when a file opens is
        the first long read of a session, and without it the first request after a far jump
        carried the full window (1,100 new tokens, 4.9 s for the demo model on 2 cores)."""
        if self.engine is not None and self._active is None and self.blocked_by is None:
            read = await self.engine.prewarm(request, urgent=urgent)
            if read is not None:
                self.window.observe(len(request.prefix), read)

    async def cancel(self, request_id: int) -> None:
        """Cancel the completion `request_id` if it is the one running. Never while a chat answer
        runs: the engine's cancel would stop that too (and the chat already superseded us)."""
        if self.engine is not None and self._active == request_id and self.blocked_by is None:
            await self.engine.cancel()
