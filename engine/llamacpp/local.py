"""LocalEngine: llama.cpp in this process, behind the async Engine protocol.

One worker thread owns both llama contexts (they are not thread-safe) and runs one generation at a
time; asyncio callers receive events through a queue. Who yields when two requests want the models:

- an inline completion supersedes a completion that is still running or waiting (the editor only
  wants the newest cursor position);
- a chat or edit request supersedes a running completion (the user asked explicitly; the editor
  asks again after the next typing pause);
- a completion that arrives while a chat answer or an edit is being generated is answered at once with
  `Finished(reason="busy")` and never interrupts the chat;
- plain `generate` requests queue in order.

Cancellation is checked before every target pass, so it takes effect within one pass.
"""

from __future__ import annotations

import asyncio
import logging
import math
import queue
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Iterator

import numpy as np

from ..completion import Deadline, InlineStops, ended_completion
from ..draft_pair import DraftPair, draft_model, session_drafter
from ..drafters import Drafter, LookupDrafter, ModelDrafter, NoDrafter
from ..edit_drafter import Prediction
from ..edit_prompt import EditText
from ..errors import EngineError, ModelLoadError
from ..heap import release_freed_memory
from ..requests import (
    ChatRequest,
    CompletionRequest,
    EditRequest,
    EngineInfo,
    Event,
    Finished,
    FinishReason,
    Request,
    StatsUpdate,
    TextDelta,
)
from ..session_drafter import SessionDrafter
from ..session_store import SessionStore
from ..settings import DraftSettings, EngineSettings
from ..speculative import GenerationJob, GenerationResult, SpeculativeDecoder
from ..stats import Stats
from .demo import model_file
from .derive import is_derived_pair
from .edit_prompt import build_edit_tokens
from .fim_prompt import FimPrompt, FirstRead, build_fim_prompt
from .model import LlamaModel, gpu_offload_supported, set_verbose
from .pairing import check_pair

ProgressFn = Callable[[str, float], None]
# While text streams, the caller's event loop is woken at most this often (`_Outbox`).
STREAM_WAKE_S = 0.05
PREWARM_PIECE = 32  # tokens per decode while prewarming: a request waits for one piece at most
# The most text of one file or answer the session drafter indexes (its start): tokenizing a file
# of megabytes holds the worker for seconds (a completion queued behind it waits that long) and
# would fill much of the index with one file.
REMEMBER_MAX_CHARS = 128 * 1024
# A remembered text is tokenized this many characters at a time (cut after a line break): llama.cpp's
# tokenizer on a long text at once takes many times the memory it takes in pieces, which the C
# allocator then keeps. A token that would have spanned a cut is two in the session memory, which
# only proposes drafts.
REMEMBER_PIECE_CHARS = 16 * 1024
# A remembered text this long hands the freed heap back: indexing it frees a few MB of tokenizer
# and numpy temporaries on the worker thread, which glibc otherwise keeps in that thread's arena.
TRIM_AFTER_TOKENS = 4096
PREFILL_PIECE = 128  # a completion's prompt is decoded in pieces this long, stoppable between them


def line_pieces(text: str, size: int) -> Iterator[str]:
    """`text` in consecutive pieces of about `size` characters, each cut after a line break when
    there is one within the next `size` characters."""
    start = 0
    while start < len(text):
        end = text.find("\n", start + size, start + 2 * size)
        end = min(start + size, len(text)) if end < 0 else end + 1
        yield text[start:end]
        start = end


def _build_session_drafter(draft: DraftSettings, target: LlamaModel) -> SessionDrafter:
    """The session drafter, reading its memory back from `session_store` when one is set."""
    store = None
    if draft.session_store:
        store = SessionStore(Path(draft.session_store).expanduser(), target.vocab_fingerprint())
    return SessionDrafter(draft.session_mb, store)


def load_drafter(draft: DraftSettings, target: LlamaModel, spec_p_min: float,
                 ngram: tuple[int, int]) -> Drafter | DraftPair:
    """Build a drafter; a draft model must pass the pairing check against the target."""
    if draft.kind == "none":
        return NoDrafter()
    if draft.kind == "lookup":
        return LookupDrafter(*ngram)
    if draft.kind == "session":
        return _build_session_drafter(draft, target)
    if draft.kind == "model":
        if draft.model is None:
            raise ModelLoadError("The draft kind is 'model' but no draft model path is set.",
                                 hint="Set [model] draft to a GGUF path, or use 'lookup' or 'none'.")
        # Check the tokenizers on a vocab-only load first: a mismatched draft is refused before
        # gigabytes of weights are read.
        vocab = LlamaModel.load(draft.model, vocab_only=True, what="draft model")
        try:
            check_pair(target, vocab)
        finally:
            vocab.close()
        # A derived copy of the target (same tensors, other types) reads the target's KV cache.
        source = target if is_derived_pair(target.path, draft.model.path) else None
        model = ModelDrafter(LlamaModel.load(draft.model, what="draft model"), spec_p_min, source=source)
        return DraftPair(_build_session_drafter(draft, target), model) if draft.hybrid else model
    raise ModelLoadError(f"Unknown draft kind {draft.kind!r}.",
                         hint="Use a GGUF path, 'session', 'lookup' or 'none'.")


class _Outbox:
    """Events from the engine thread to the caller's event loop, a few wake-ups a second.

    Why: the engine writes a token every 10-20 ms, and every event sent on its own woke the UI
    thread twice a pass, each time taking a core the engine's next pass may want (bench/RESULTS.md,
    session 17). The first visible text and the end go at once (the first ghost's latency); in
    between, text is joined and only the latest Stats kept, sent at most every STREAM_WAKE_S (the
    editor redraws a streaming suggestion 10 times a second anyway). The caller gets the same text
    in the same order, and a cancel still stops the work before the engine's next pass."""

    def __init__(self, loop: asyncio.AbstractEventLoop, put: Callable[[Event], None]) -> None:
        self._loop = loop
        self._put = put
        self._lock = threading.Lock()
        self._text: list[str] = []
        self._stats: StatsUpdate | None = None
        self._end: list[Event] = []
        self._scheduled = False
        self._woken_at = -math.inf
        self._shown_text = False  # text other than white space has been sent

    def put(self, ev: Event) -> bool:
        """Queue `ev` (on the engine thread); False once the caller's event loop is closed."""
        with self._lock:
            if isinstance(ev, TextDelta):
                self._text.append(ev.text)
                urgent = not self._shown_text
                self._shown_text = self._shown_text or bool(ev.text.strip())
            elif isinstance(ev, StatsUpdate):
                self._stats = ev
                urgent = False
            else:
                self._end.append(ev)
                urgent = True
            now = time.monotonic()
            if self._scheduled or not (urgent or now - self._woken_at >= STREAM_WAKE_S):
                return True  # goes with the wake-up already on its way, or the next one
            self._scheduled, self._woken_at = True, now
        try:
            self._loop.call_soon_threadsafe(self._drain)
        except RuntimeError:
            return False
        return True

    def _drain(self) -> None:
        """On the caller's loop: everything queued so far, as at most three events."""
        with self._lock:
            text, stats, end = "".join(self._text), self._stats, self._end
            self._text, self._stats, self._end, self._scheduled = [], None, [], False
        if text:
            self._put(TextDelta(text))
        if stats is not None:
            self._put(stats)
        for ev in end:
            self._put(ev)


@dataclass
class _Job:
    request: Request
    sink: Callable[[Event], None]
    cancel: threading.Event = field(default_factory=threading.Event)
    cancel_reason: FinishReason = "cancelled"
    done: threading.Event = field(default_factory=threading.Event)


class LocalEngine:
    """The Engine protocol on llama.cpp in this process."""

    def __init__(self, settings: EngineSettings, *, on_progress: ProgressFn | None = None) -> None:
        self.settings = settings
        self.on_progress = on_progress
        self.target: LlamaModel | None = None
        self.decoder: SpeculativeDecoder | None = None
        self._session = Stats(draft_max=settings.speculative.draft_max)
        self._jobs: "queue.Queue[_Job | Callable[[], None] | None]" = queue.Queue()
        self._lock = threading.Lock()
        self._running: _Job | None = None
        self._waiting: list[_Job] = []
        self._cancels = 0  # counts cancel() calls: a prewarm stops at the next one
        self._prewarms = 0  # counts prewarm() calls: a newer prewarm stops an older one
        self._thread: threading.Thread | None = None
        self._closing = False  # close() began: new requests are refused, not run on freed models
        self.info = EngineInfo(target_name="", draft_name=settings.draft.kind,
                               draft_kind=settings.draft.kind,
                               demo=settings.target.demo, gpu=False)

    # -- lifecycle -------------------------------------------------------------------------------
    def load(self) -> None:
        """Load the models synchronously (headless commands and tests may call this directly)."""
        set_verbose(self.settings.verbose)
        progress = self.on_progress or (lambda msg, frac: None)
        target_settings = replace(self.settings.target, path=model_file(self.settings.target))
        progress(f"loading target {target_settings.path}", 0.0)
        self.target = LlamaModel.load(target_settings, what="target model")
        progress("loading draft", 0.5)
        try:
            drafter = self._make_drafter(self.settings.draft)
        except EngineError:
            self.target.close()
            self.target = None
            raise
        self.decoder = SpeculativeDecoder(self.target, drafter, self.settings.speculative)
        self.decoder.prepare_healing()
        self._update_info(drafter)
        progress("ready", 1.0)

    def _make_drafter(self, draft: DraftSettings) -> Drafter | DraftPair:
        spec = self.settings.speculative
        assert self.target is not None
        return load_drafter(draft, self.target, spec.p_min, (spec.ngram_min, spec.ngram_max))

    def _update_info(self, drafter: Drafter | DraftPair) -> None:
        t = self.target
        assert t is not None
        session = session_drafter(drafter)
        dm = draft_model(drafter)
        draft_layers = dm.gpu_layers if dm is not None else 0
        self.info = EngineInfo(
            target_name=t.name,
            draft_name=drafter.name,
            draft_kind=drafter.kind,
            demo=self.settings.target.demo,
            gpu=gpu_offload_supported() and (t.gpu_layers > 0 or draft_layers > 0),
            target_gpu_layers=t.gpu_layers,
            draft_gpu_layers=draft_layers,
            fim=t.fim is not None,
            chat_template=t.chat_template is not None,
            backend="local",
            alternatives=True,
            notes=(session.store_note,) if session is not None and session.store_note else (),
        )

    async def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._worker, name="specterm-engine", daemon=True)
            self._thread.start()
        if self.target is None:
            await self._call(self.load)

    async def _call(self, fn: Callable[[], object]) -> object:
        """Run fn on the engine thread and wait for it (model loading, drafter switches)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()

        def run() -> None:
            try:
                result = fn()
            except BaseException as exc:  # delivered to the awaiting caller
                deliver(_set_exception, exc)
            else:
                deliver(_set_result, result)

        def deliver(setter: Callable[[asyncio.Future, Any], None], value: object) -> None:
            try:
                loop.call_soon_threadsafe(setter, fut, value)
            except RuntimeError:  # the caller's loop has closed: nobody waits (the worker goes on)
                pass

        self._jobs.put(run)
        return await fut

    async def close(self) -> None:
        self._closing = True
        await self.cancel()
        if self._thread is not None:
            self._jobs.put(None)
            thread = self._thread
            await asyncio.get_running_loop().run_in_executor(None, thread.join, 60)
            self._thread = None
            if thread.is_alive():  # still inside one long decode: freeing its model would crash
                return
        self.close_sync()

    def close_sync(self) -> None:
        if self.decoder is not None:
            self._close_drafter(self.decoder.drafter)
            self.decoder = None
        if self.target is not None:
            self.target.close()
            self.target = None

    async def set_drafter(self, draft: DraftSettings) -> None:
        await self.cancel()
        await self._call(lambda: self.use_drafter(draft))

    def use_drafter(self, draft: DraftSettings) -> None:
        """Switch drafters on the calling thread (the worker; the bench between its runs). The
        new drafter is built first, so a bad one leaves the old in place."""
        assert self.decoder is not None
        new = self._make_drafter(draft)
        self._close_drafter(self.decoder.drafter)
        self.decoder.set_drafter(new)
        self._update_info(new)

    @staticmethod
    def _close_drafter(drafter: Drafter | DraftPair) -> None:
        """Close a drafter; a session memory that could not be saved is logged (the app has gone)."""
        drafter.close()
        session = session_drafter(drafter)
        if session is not None and session.save_error:
            logging.getLogger("specterm").warning(session.save_error)

    async def remember(self, text: str) -> None:
        """Queue `text` for the session drafter's index, on the worker: the caller (a keystroke, a
        file opening) never waits for tokenizing or indexing, only for the queue. A text longer than
        REMEMBER_MAX_CHARS is indexed up to there."""
        if text and self.decoder is not None and session_drafter(self.decoder.drafter) is not None:
            text = text[:REMEMBER_MAX_CHARS]
            self._jobs.put(lambda: self.remember_sync(text))

    def remember_sync(self, text: str | list[int]) -> None:
        """Index a text (or token ids) the session saw, on the calling thread (the worker; the
        bench between runs)."""
        if self.decoder is None or self.target is None:
            return
        drafter = session_drafter(self.decoder.drafter)
        if drafter is None:
            return
        tokens: np.ndarray | list[int]
        if isinstance(text, str):
            # Token ids as int32 arrays piece by piece: a list of Python ints is ~10x their size.
            tokens = np.concatenate(
                [np.asarray(self.target.tokenize(piece, add_special=False), dtype=np.int32)
                 for piece in line_pieces(text, REMEMBER_PIECE_CHARS)] or [np.empty(0, np.int32)])
        else:
            tokens = text
        drafter.remember(tokens)
        if isinstance(text, str) and len(tokens) > TRIM_AFTER_TOKENS:
            release_freed_memory()

    async def forget_session(self) -> None:
        """Empty the session drafter's memory, on the worker (after what is queued before it)."""
        await self._call(self._forget_session_sync)

    def _forget_session_sync(self) -> None:
        drafter = session_drafter(self.decoder.drafter) if self.decoder is not None else None
        if drafter is not None:
            drafter.clear_memory()

    async def prewarm(self, request: Request, *, urgent: bool = False) -> Stats | None:
        """Prewarm a completion's prompt start on the worker (engine/speculative.py `prewarm`); it
        yields to any request that arrives meanwhile and stops at `cancel()` or a newer prewarm,
        between pieces of PREWARM_PIECE tokens. Returns what it read (Engine.prewarm)."""
        if not isinstance(request, (CompletionRequest, EditRequest)) or self.decoder is None:
            return None
        self._prewarms += 1
        cancels, number = self._cancels, self._prewarms
        read = await self._call(lambda: self.prewarm_sync(request, cancels, number, urgent=urgent))
        assert isinstance(read, Stats)
        return read if read.prompt_tokens_decoded > 0 else None

    def prewarm_sync(self, request: CompletionRequest | EditRequest, cancels: int | None = None,
                     number: int | None = None, *, urgent: bool = False) -> Stats:
        """Decode the start of `request`'s FIM prompt now (the worker; tests); what it read
        (Engine.prewarm). `cancels`, `number`: the cancel() and prewarm() counts when it was
        asked for (a cancel or a newer prewarm since stops it). Idle work runs on the one-token
        threads only: any cores the engine leaves spare (the app's UI, from 4 cores up) stay free
        while the user types. An `urgent` prewarm (the cursor moved there: a request follows
        within the typing pause) reads with the batch threads, as that request would."""
        read = Stats()
        if self.decoder is None or self.target is None:
            return read
        cancels = self._cancels if cancels is None else cancels
        number = self._prewarms if number is None else number

        def stop() -> bool:
            return bool(self._waiting) or self._cancels != cancels or self._prewarms != number

        if stop():
            return read
        target = self.target
        if isinstance(request, EditRequest):  # everything but the instruction
            et = build_edit_tokens(target, request)
            tokens, warm = et.tokens, et.warm
        else:
            fp = self._fim_prompt(request, request.max_tokens)
            tokens, warm = fp.tokens, fp.warm
        read.prompt_tokens = len(tokens)
        decode, batch = target.threads
        target.set_threads(decode, batch if urgent else decode)
        t0 = time.perf_counter()
        try:
            read.prompt_tokens_decoded = self.decoder.prewarm(tokens[: warm], stop=stop,
                                                              piece=PREWARM_PIECE)
        except EngineError:
            self.decoder.forget()  # best effort: the next request decodes everything
        finally:
            target.set_threads(decode, batch)
        read.prompt_time_s = time.perf_counter() - t0
        if urgent or decode == batch:  # read as a request reads: what a token costs (FirstRead)
            self.decoder.policy.observe_prompt(read.prompt_tokens_decoded, read.prompt_time_s)
        return read

    def _fim_prompt(self, request: CompletionRequest, max_tokens: int) -> FimPrompt:
        """The request's FIM prompt, its first read bounded by what the KV cache holds and what a
        token costs to read (fim_prompt.py)."""
        assert self.target is not None and self.decoder is not None
        cost = self.decoder.policy.costs.read_cost()
        first = FirstRead(self.decoder.cached, cost[1], cost[0]) if cost else None
        return build_fim_prompt(self.target, request, max_tokens, first)

    def session_stats(self) -> Stats:
        with self._lock:
            return self._session.copy()

    async def cancel(self) -> None:
        self._cancels += 1
        with self._lock:
            jobs = ([self._running] if self._running else []) + self._waiting
        for job in jobs:
            job.cancel_reason = "cancelled"
            job.cancel.set()

    # -- requests --------------------------------------------------------------------------------
    async def stream(self, request: Request) -> AsyncIterator[Event]:
        events: asyncio.Queue[Event] = asyncio.Queue()
        outbox = _Outbox(asyncio.get_running_loop(), events.put_nowait)

        def sink(ev: Event) -> None:
            if not outbox.put(ev):  # the caller's event loop is closed: nobody listens any more
                job.cancel.set()

        job = _Job(request, sink)
        if self._closing:
            yield Finished("cancelled", "", Stats(draft_max=self.settings.speculative.draft_max))
            return
        if not self._admit(job):
            yield Finished("busy", "", Stats(draft_max=self.settings.speculative.draft_max))
            return
        try:
            while True:
                ev = await events.get()
                yield ev
                if isinstance(ev, Finished):
                    return
        finally:  # the consumer stopped listening (task cancelled, loop broken): stop the work
            if not job.done.is_set():
                job.cancel.set()

    def _admit(self, job: _Job) -> bool:
        """Apply the who-yields rules; False means answer `busy`."""
        with self._lock:
            running = self._running
            if isinstance(job.request, CompletionRequest):
                if running and isinstance(running.request, (ChatRequest, EditRequest)):
                    return False
                for old in [running, *self._waiting]:
                    if old and isinstance(old.request, CompletionRequest):
                        old.cancel_reason = "superseded"
                        old.cancel.set()
            elif isinstance(job.request, (ChatRequest, EditRequest)):
                if running and isinstance(running.request, CompletionRequest):
                    running.cancel_reason = "superseded"
                    running.cancel.set()
            self._waiting.append(job)
        self._jobs.put(job)
        return True

    def _worker(self) -> None:
        while True:
            item = self._jobs.get()
            if item is None:
                return
            if not isinstance(item, _Job):
                item()
                continue
            with self._lock:
                if item in self._waiting:
                    self._waiting.remove(item)
                self._running = item
            try:
                if item.cancel.is_set():
                    item.sink(Finished(item.cancel_reason, "", Stats(draft_max=self.settings.speculative.draft_max)))
                else:
                    self._run(item)
            finally:
                with self._lock:
                    self._running = None
                item.done.set()

    def _run(self, job: _Job) -> None:
        try:
            result = self.run(
                job.request,
                on_text=lambda t: job.sink(TextDelta(t)),
                on_stats=lambda s: job.sink(StatsUpdate(s.copy())),
                cancelled=lambda: job.cancel_reason if job.cancel.is_set() else None,
            )
        except EngineError as exc:
            job.sink(Finished("error", "", Stats(), error=str(exc)))
            return
        except Exception as exc:  # a bug, not bad input: still never kill the worker thread
            job.sink(Finished("error", "", Stats(), error=f"internal error: {exc!r}"))
            return
        with self._lock:
            self._session.merge(result.stats)
        # the loop's reasons are plain str until its rewrite (issue 34 item 2) types them
        job.sink(Finished(result.reason, result.text, result.stats))  # type: ignore[arg-type]

    # -- the synchronous core (engine thread, or direct use by headless commands) ---------------
    def run(
        self,
        request: Request,
        *,
        on_text: Callable[[str], None] | None = None,
        on_stats: Callable[[Stats], None] | None = None,
        cancelled: Callable[[], str | None] | None = None,
        fixed_draft: int | None = None,
    ) -> GenerationResult:
        """Run one request to the end on the calling thread (the worker, or a headless caller).
        The result carries the token ids the target emitted (bench and tests compare them:
        re-tokenizing text is lossy) beside the text, reason and Stats; a completion's text is
        the finished one."""
        if self.decoder is None or self.target is None:
            raise EngineError("The engine is not loaded.", hint="Call start() (or load()) first.")
        target = self.target
        sampling = request.sampling or self.settings.sampling
        max_tokens = request.max_tokens or 0
        stop = tuple(getattr(request, "stop", ()))
        heal = b""
        keep_indent = False
        stop_tokens: frozenset[int] = frozenset()
        check_text: Callable[[str], str | None] | None = None
        deadline: Deadline | None = None
        first_rank = 0
        cut = 0  # characters of a completion's prefix its first-read budget left out
        edit: EditText | None = None
        prediction: Prediction | None = None
        if isinstance(request, EditRequest):
            et = build_edit_tokens(target, request)
            tokens, max_tokens = et.tokens, et.max_tokens
            prediction = Prediction(et.tokens, *et.region)  # the region: what the edit drafts from
            edit = EditText(request.region, et.prompt.fence, request.after)
            check_text = edit.check
            on_text = edit.relay(on_text)
        elif isinstance(request, CompletionRequest):
            fp = self._fim_prompt(request, max_tokens)
            tokens, heal, stop_tokens, keep_indent = fp.tokens, fp.heal, fp.stop_tokens, fp.keep_indent
            cut = fp.prefix_start
            check_text = InlineStops(request)
            first_rank = request.first_token_rank
            deadline = Deadline(request)
        elif isinstance(request, ChatRequest):
            text = target.apply_chat_template([(m.role, m.content) for m in request.messages])
            # Templates that write the BOS text themselves (Llama 3) must not get a second BOS.
            bos_text = target.token_text(target.bos) if target.bos >= 0 else ""
            add_special = target.add_bos and not (bos_text and text.startswith(bos_text))
            tokens = target.tokenize(text, add_special=add_special, parse_special=True)
        else:
            tokens = target.tokenize(request.prompt, add_special=request.add_bos)
        if not tokens:
            tokens = [target.bos] if target.bos >= 0 else target.tokenize("\n")
        # (a prompt that does not fit the context is refused by the decoder's prefill)
        max_tokens = max(min(max_tokens, target.n_ctx - len(tokens) - 1), 0)

        def should_stop() -> str | None:
            if cancelled:
                why = cancelled()
                if why:
                    return why
            if deadline is not None:
                deadline.writing()  # the first call comes right after the first token
                if deadline.passed():
                    return "time"
            return None

        job = GenerationJob(
            prompt=tokens, max_tokens=max_tokens, sampling=sampling, stop=stop,
            stop_tokens=stop_tokens, heal=heal, keep_indent=keep_indent, check_text=check_text, should_stop=should_stop,
            on_text=on_text, on_stats=on_stats, fixed_draft=fixed_draft, first_rank=first_rank,
            prefill_piece=PREFILL_PIECE if isinstance(request, (CompletionRequest, EditRequest)) else 0,
            stop_prefill=cancelled, prediction=prediction,
        )
        result = self.decoder.generate(job)
        # What the model wrote is part of the session: a later answer or edit may repeat it.
        self.remember_sync(result.tokens)
        if edit is not None:
            edit.finish()  # the held line break, to the same `on_text`
            result = replace(result, text=edit.text)
        if isinstance(request, CompletionRequest):
            result.stats.prompt_cut_chars = cut
            result = replace(result, text=ended_completion(result.text, request, result.reason))
        return result


def _set_result(fut: asyncio.Future, value: object) -> None:
    if not fut.done():
        fut.set_result(value)


def _set_exception(fut: asyncio.Future, exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)
