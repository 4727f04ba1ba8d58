"""RemoteEngine: the `Engine` protocol over an OpenAI-compatible HTTP server.

When one process or one box is not enough — a 70B target over several GPUs, a shared GPU box that
already runs `llama-server --spec-draft-model ...`, vLLM with speculative decoding — specterm drives
that server instead of growing a distributed runtime of its own. The editor, chat and acceptance
display stay the same because this class implements the same protocol as `LocalEngine`, fills the
same `Stats` (see `server_stats`) and applies the same completion rules (engine/completion.py):
the prompt budget, the line cap, the block end, suffix-repeat and trailing-blank trimming.

What it speaks:
* chat -> `POST /v1/chat/completions`, plain continuation -> `POST /v1/completions`, both streamed as
  Server-Sent Events (`sse`);
* fill-in-the-middle -> llama-server's `POST /infill` (the server applies the model's own FIM
  tokens and repo-level context) where the server has it, else `/v1/completions` with a FIM prompt
  from a known template for the model family (`templates`); either way the prompt is cut to the
  token budget of the server's context (its tokenize endpoint counts; a safe estimate otherwise);
* an edit (`EditRequest`) -> `POST /v1/chat/completions` with the prompt of engine/edit_prompt.py
  and its answer rules; plain decoding as far as specterm can tell (a server cannot take the
  region as a prediction: drafting from the original is the local engine's);
* cancellation closes the stream: llama-server and vLLM stop generating when the client goes away.

Failures (`client`): connecting retries a bounded number of times with exponential backoff and
gives up within `RemoteSettings.deadline_s` (10 s by default) with a message that says what
happened and what to do: `start()` raises it as a `BackendUnavailableError`; inside `stream()` it
ends the request with `Finished(reason="error")`, as LocalEngine does for a failed request. A reply
that is not SSE, not JSON or an error status ends the same way. A connection lost in the middle of
a reply ends it with `Finished("error")` and keeps the partial text. Either way the engine stays
usable and the next request reconnects.

The engine never reads the environment: the TUI's config module resolves `[engine] api_key_env`
and passes the key in `RemoteSettings.api_key`.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass, replace
from typing import Any, AsyncIterator

import httpx

from ..completion import (
    Deadline,
    InlineStops,
    ended_completion,
    estimate_tokens,
    fit_fim_text,
    prompt_budget,
    without_cursor_indentation,
)
from ..edit_prompt import (
    INSTRUCTION_ROOM,
    OVERHEAD_TOKENS,
    EditText,
    build_edit_prompt,
    default_max_tokens,
    fence_for,
    fit_context,
)
from ..errors import BackendUnavailableError, EngineError
from ..requests import (
    ChatRequest,
    CompletionRequest,
    EditRequest,
    EngineInfo,
    Event,
    Finished,
    FinishReason,
    GenerateRequest,
    Request,
    StatsUpdate,
    TextDelta,
)
from ..settings import DraftSettings, SamplingSettings
from ..stats import Stats
from .client import TUNNEL_HINT, HttpClient, ServerHTTPError, describe_connect_error, error_text
from .discovery import probe
from .replies import ReplyFormat, ReplyState
from .server_stats import SpecCounters, apply_counters, spec_counters, stats_from_timings
from .settings import BACKEND_NAME, RemoteSettings, ServerInfo
from .sse import DONE, MalformedChunk, SseFramer, parse_chunk
from .templates import fim_prompt_text, fim_template_for, template_overhead
from .url import normalise_url

__all__ = ["RemoteEngine", "RemoteSettings", "ServerInfo", "ServerHTTPError", "normalise_url"]

TOKENIZE_TIMEOUT_S = 5.0


class _Run:
    """One in-flight request: its cancel flag and open response."""

    def __init__(self) -> None:
        self.cancelled = asyncio.Event()
        self.response: httpx.Response | None = None


@dataclass
class _Reply:
    response: httpx.Response
    fmt: ReplyFormat


_CANCELLED = object()
_TIMED_OUT = object()
_END = object()


class _LostBeforeText(Exception):
    """The connection dropped before any text arrived: the request can be sent again."""


class RemoteEngine:
    """`Engine` over an OpenAI-compatible server (llama-server, vLLM, `python -m llama_cpp.server`)."""

    def __init__(self, settings: RemoteSettings) -> None:
        self.settings = settings
        self.root = normalise_url(settings.url)  # an unusable URL is an EngineError at once
        self.http = HttpClient(settings, self.root)
        self.server: ServerInfo | None = None
        self.info = EngineInfo(
            target_name=f"server {self.root}",
            draft_name="server",
            draft_kind="server",
            demo=False,
            gpu=False,
            backend=BACKEND_NAME,
            extra={"url": self.root},
        )
        self._session = Stats()
        self._runs: set[_Run] = set()
        self._infill: bool | None = None if settings.fim == "auto" else settings.fim == "infill"
        self._tokenize: bool | None = None  # whether the server's tokenize endpoint works
        self._template: str | None = settings.fim_template  # None: chosen on the first FIM prompt
        self._start_lock = asyncio.Lock()

    # -- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect and identify the server and model. Raises BackendUnavailableError."""
        async with self._start_lock:
            try:
                self.server = await self.probe()
            except EngineError:
                raise
            except Exception as exc:  # an exception group from the socket layer, a broken reply
                raise BackendUnavailableError(
                    f"cannot reach the remote backend at {self.root}: {describe_connect_error(exc)}",
                    hint=TUNNEL_HINT,
                ) from None
            srv = self.server
            self.info = EngineInfo(
                target_name=os.path.basename(srv.model.rstrip("/")) or srv.model,
                draft_name="server" if srv.drafting else ("none" if srv.drafting is False else "unknown"),
                draft_kind="server",
                demo=False,
                gpu=False,
                fim=True,
                chat_template=True,
                backend=BACKEND_NAME,
                extra={
                    "url": self.root,
                    "server": srv.kind,
                    "version": srv.version,
                    "model": srv.model,
                    "drafting": srv.drafting,
                    "acceptance_source": srv.acceptance_source,
                    "n_ctx": srv.n_ctx,
                },
            )

    async def probe(self) -> ServerInfo:
        """Identify server, model, drafting and where acceptance figures come from."""
        info = await probe(self.http, self.settings)
        if self.settings.fim == "auto":
            self._infill = None if info.kind == "llama-server" else False  # llama-server: learnt on use
        return info

    async def close(self) -> None:
        await self.cancel()
        await self.http.aclose()

    async def cancel(self) -> None:
        """Stop every running request: the stream is closed, which stops the server too."""
        for run in list(self._runs):
            run.cancelled.set()

    def session_stats(self) -> Stats:
        return self._session.copy()

    async def set_drafter(self, draft: DraftSettings) -> None:
        raise EngineError(
            "the remote server decides how it drafts; specterm cannot switch its drafter",
            hint=(
                "Restart the server with the drafter you want: llama-server "
                "`--spec-type draft-simple --spec-draft-model DRAFT.gguf` (or without them for none); vLLM "
                "`--speculative-config '{\"model\": ..., \"num_speculative_tokens\": 4}'`."
            ),
        )

    async def remember(self, text: str) -> None:
        pass  # the server keeps whatever memory it has (llama-server's ngram-mod: its own requests)

    async def forget_session(self) -> None:
        pass  # nothing of the server's memory can be cleared from here

    # -- the prompt budget ------------------------------------------------------------------------

    async def count_tokens(self, text: str) -> int:
        """Tokens of `text` by the server's own tokenizer where it has an endpoint for it
        (llama-server /tokenize, llama_cpp.server /extras/tokenize/count, vLLM /tokenize), else
        the safe estimate of engine/completion.py."""
        kind = self.server.kind if self.server else "openai-compatible"
        if self._tokenize is not False and kind != "openai-compatible":
            if kind == "llama-server":
                reply = await self.http.post_quiet("/tokenize", {"content": text}, TOKENIZE_TIMEOUT_S)
                n = len(reply["tokens"]) if isinstance(reply, dict) and isinstance(reply.get("tokens"), list) else None
            else:
                body = {"input": text} if kind == "llama-cpp-python" else {"prompt": text}
                path = "/extras/tokenize/count" if kind == "llama-cpp-python" else "/tokenize"
                if self.server is not None:
                    body["model"] = self.server.model
                reply = await self.http.post_quiet(path, body, TOKENIZE_TIMEOUT_S)
                n = reply.get("count") if isinstance(reply, dict) else None
            if isinstance(n, int):
                self._tokenize = True
                return n
            if self._tokenize is None:
                self._tokenize = False  # no such endpoint here: estimate from now on
        return estimate_tokens(text)

    async def _fim_template(self, model: str) -> str:
        """The family's template, or the prefix alone when the server's tokenizer shows that the
        model has no such FIM token (as the local engine does for a model without FIM tokens)."""
        if self._template is None:
            template = fim_template_for(model)
            marker = template.split("{", 1)[0].strip()
            single = await self.count_tokens(marker) <= 2 if marker else True  # a BOS may be counted
            if self._tokenize is True and not single:
                template = "{prefix}"
            self._template = template
        return self._template

    def _budget(self, request: CompletionRequest) -> int:
        n_ctx = (self.server.n_ctx if self.server else None) or self.settings.n_ctx
        return prompt_budget(n_ctx, request.max_tokens)

    # -- requests ---------------------------------------------------------------------------------

    def _sampling_fields(self, sampling: SamplingSettings | None) -> dict[str, Any]:
        p = sampling or self.settings.sampling
        out: dict[str, Any] = {"temperature": p.temperature, "top_p": p.top_p, "seed": p.seed}
        kind = self.server.kind if self.server else "openai-compatible"
        if kind != "openai-compatible":  # extensions that llama.cpp and vLLM servers accept
            out["top_k"] = p.top_k
            out["min_p"] = p.min_p
        return out

    def _extras(self) -> dict[str, Any]:
        kind = self.server.kind if self.server else "openai-compatible"
        if kind == "llama-server":
            # timings on every chunk: live acceptance in the status bar while the reply streams
            return {"timings_per_token": True, "cache_prompt": True, "stream_options": {"include_usage": True}}
        if kind == "vllm":
            return {"stream_options": {"include_usage": True}}
        return {}

    async def _plan(self, request: Request, *, infill: bool) -> tuple[str, dict[str, Any], ReplyFormat]:
        """(path, JSON body, reply format) for one request."""
        assert self.server is not None
        model = self.server.model
        common = {"stream": True, **self._sampling_fields(request.sampling)}
        stop = getattr(request, "stop", ())
        if stop:
            common["stop"] = list(stop)
        if isinstance(request, EditRequest):
            messages, max_tokens = self._edit_messages(request)
            body = {"model": model, "messages": messages, "max_tokens": max_tokens, **common, **self._extras()}
            return "/v1/chat/completions", body, "chat"
        if isinstance(request, ChatRequest):
            messages = [{"role": m.role, "content": m.content} for m in request.messages]
            body = {"model": model, "messages": messages, "max_tokens": request.max_tokens, **common, **self._extras()}
            return "/v1/chat/completions", body, "chat"
        if isinstance(request, GenerateRequest):
            body = {"model": model, "prompt": request.prompt, "max_tokens": request.max_tokens,
                    **common, **self._extras()}
            return "/v1/completions", body, "text"
        assert isinstance(request, CompletionRequest)
        budget = self._budget(request)
        if infill:
            fim = await fit_fim_text(request, budget - 8, self.count_tokens)
            body = {
                "input_prefix": fim.prefix,
                "input_suffix": fim.suffix,
                "input_extra": [{"filename": f.path, "text": f.text} for f in fim.context_files],
                "n_predict": request.max_tokens,
                **common,
                "timings_per_token": True,
                "cache_prompt": True,
            }
            return "/infill", body, "native"
        template = await self._fim_template(model)
        overhead = estimate_tokens(template_overhead(template, request.path))
        healed = replace(request, prefix=without_cursor_indentation(request.prefix))
        fim = await fit_fim_text(healed, budget - overhead, self.count_tokens)
        body = {"model": model, "prompt": fim_prompt_text(template, fim, request.path),
                "max_tokens": request.max_tokens, **common, **self._extras()}
        return "/v1/completions", body, "text"

    def _edit_messages(self, request: EditRequest) -> tuple[list[dict[str, str]], int]:
        """The edit prompt as chat messages (the server applies its template), context cut to
        the server's context by the safe estimate, and the answer's token limit."""
        region = estimate_tokens(request.region)
        max_tokens = request.max_tokens or default_max_tokens(region)
        n_ctx = (self.server.n_ctx if self.server else None) or self.settings.n_ctx
        instruction = max(INSTRUCTION_ROOM, estimate_tokens(request.instruction))
        room = n_ctx - max_tokens - region - instruction - OVERHEAD_TOKENS
        prompt = build_edit_prompt(request, *fit_context(request, room, estimate_tokens))
        return [{"role": "user", "content": prompt.message()}], max_tokens

    async def _open_reply(self, request: Request) -> _Reply:
        """Send the request; a llama-server without /infill for this model falls back to a FIM
        prompt (learnt once)."""
        is_fim = isinstance(request, CompletionRequest)
        use_infill = is_fim and self._infill is not False and self.server is not None and (
            self.server.kind == "llama-server" or self._infill is True
        )
        path, body, fmt = await self._plan(request, infill=use_infill)
        try:
            response = await self.http.open_stream(path, body)
        except ServerHTTPError as exc:
            if not (use_infill and self.settings.fim == "auto" and exc.status in (404, 405, 501)):
                raise
            self._infill = False  # this server or model has no infill: use a FIM prompt
            path, body, fmt = await self._plan(request, infill=False)
            response = await self.http.open_stream(path, body)
        if path == "/infill":
            self._infill = True
        return _Reply(response, fmt)

    async def _race(self, awaitable: Any, run: _Run, timeout: float | None) -> Any:
        """The awaitable's result, or _CANCELLED / _TIMED_OUT, whichever comes first (a finished
        async iterator gives _END). Used for connecting and for every streamed line, so cancel()
        and a completion's time budget act at once, even while the server is still reading a
        long prompt and has sent nothing."""
        task = asyncio.ensure_future(awaitable)
        if run.cancelled.is_set():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            return _CANCELLED
        waiter = asyncio.ensure_future(run.cancelled.wait())
        try:
            done, _ = await asyncio.wait({task, waiter}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if task in done:
            try:
                return task.result()
            except StopAsyncIteration:
                return _END
        task.cancel()
        result = (await asyncio.gather(task, return_exceptions=True))[0]  # abandoned on purpose
        if isinstance(result, _Reply):
            await result.response.aclose()
        return _CANCELLED if run.cancelled.is_set() else _TIMED_OUT

    async def _scrape_counters(self) -> SpecCounters | None:
        if not self.server or self.server.acceptance_source != "metrics":
            return None
        text = await self.http.get_text("/metrics")
        return spec_counters(text, model=self.server.model) if text else None

    async def prewarm(self, request: Request, *, urgent: bool = False) -> Stats | None:
        """llama-server only, as llama.vim does: /infill with the extra context and n_predict 0,
        so the server's prompt cache holds it; a no-op for other servers (and on any failure).
        (`urgent` changes nothing here: the server chooses its own threads.) Returns None: the
        requests' own Stats say how fast the server reads."""
        if (not isinstance(request, CompletionRequest) or self.server is None
                or self.server.kind != "llama-server" or self._infill is False):
            return None
        _, body, _ = await self._plan(request, infill=True)  # the same budget: the same prompt
        body.update(stream=False, n_predict=0)
        await self.http.post_quiet("/infill", body, timeout=10.0)
        return None

    def stream(self, request: Request) -> AsyncIterator[Event]:
        return self._stream(request)

    async def _stream(self, request: Request) -> AsyncIterator[Event]:
        if self.server is None:
            try:
                await self.start()
            except EngineError as err:
                yield Finished(reason="error", text="", stats=Stats(), error=str(err))
                return
        if isinstance(request, CompletionRequest) and request.first_token_rank:
            yield Finished(reason="error", text="", stats=Stats(),
                           error="Alternative suggestions are not available on a remote backend.")
            return
        run = _Run()
        self._runs.add(run)
        try:
            async for event in self._attempts(request, run):
                yield event
        except EngineError as err:
            # like LocalEngine: a failed request ends with Finished("error"), the engine lives on
            yield Finished(reason="error", text="", stats=Stats(), error=str(err))
        finally:
            self._runs.discard(run)
            if run.response is not None:
                await run.response.aclose()

    async def _attempts(self, request: Request, run: _Run) -> AsyncIterator[Event]:
        """Run the request; a reply lost before any text arrived is sent again (bounded)."""
        s = self.settings
        start = time.monotonic()
        tries = 0
        while True:
            tries += 1
            try:
                async for event in self._one_attempt(request, run, ReplyState(request)):
                    yield event
                return
            except _LostBeforeText as exc:
                if run.response is not None:
                    await run.response.aclose()
                    run.response = None
                wait = s.backoff_s * (2 ** (tries - 1))
                if tries > s.retries or time.monotonic() - start + wait > s.deadline_s:
                    raise BackendUnavailableError(
                        f"the connection to {self.root} was lost before the reply began: {exc}",
                        hint=TUNNEL_HINT,
                    ) from None
                await asyncio.sleep(wait)

    async def _one_attempt(self, request: Request, run: _Run, state: ReplyState) -> AsyncIterator[Event]:
        fim = request if isinstance(request, CompletionRequest) else None
        deadline = Deadline(fim) if fim is not None else None

        def time_left() -> float | None:
            return None if deadline is None else deadline.left()

        before = await self._scrape_counters()
        opened = await self._race(self._open_reply(request), run, time_left())
        if opened is _CANCELLED or opened is _TIMED_OUT:
            stats = self._stats(state, None)
            self._session.merge(stats)
            yield Finished(reason="cancelled" if opened is _CANCELLED else "time", text="", stats=stats)
            return
        run.response = opened.response
        stops = InlineStops(fim) if fim is not None else None
        # an edit's answer made clean as it streams (its fences dropped; the closing one ends it)
        edit = EditText(request.region, fence_for(request.region, request.before, request.after), request.after) \
            if isinstance(request, EditRequest) else None
        framer = SseFramer()
        lines = opened.response.aiter_lines()
        reason: FinishReason | None = None
        error: str | None = None
        last_update = 0.0
        while reason is None:
            try:
                line = await self._race(lines.__anext__(), run, time_left())
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.ReadTimeout) as exc:
                if not state.text:
                    raise _LostBeforeText(describe_connect_error(exc)) from None
                reason, error = "error", self._lost_message(exc, state)
                break
            if line is _CANCELLED or line is _TIMED_OUT:
                reason = "cancelled" if line is _CANCELLED else "time"
                break
            ended = line is _END
            payload = framer.finish() if ended else framer.feed(line)
            if payload is not None:
                if payload.strip() == DONE:
                    state.done = True
                    reason = state.reason or "eos"
                    break
                try:
                    chunk = parse_chunk(payload)
                except MalformedChunk as exc:
                    reason, error = self._failed(
                        state, f"the server at {self.root} sent a reply specterm cannot read ({exc})")
                    break
                if "error" in chunk:
                    msg = error_text(json.dumps(chunk).encode())
                    reason, error = self._failed(state, f"the server at {self.root} failed the request: {msg}")
                    break
                delta = state.absorb(chunk, opened.fmt)
                if delta:
                    state.text += delta
                    state.pieces += 1
                    if state.first_token_at is None:
                        state.first_token_at = time.monotonic()
                        if deadline is not None:
                            deadline.writing()  # the server has read the prompt
                    shown = edit.feed(delta) if edit is not None else delta
                    if shown:
                        yield TextDelta(shown)
                    if stops is not None and stops(state.text):
                        reason = state.reason = "stop"
                    if edit is not None and edit.done:
                        reason = state.reason = "stop"
                if state.done and opened.fmt == "native":
                    reason = state.reason or "eos"
                now = time.monotonic()
                fresh = state.timings_changed or (state.timings is None and delta)
                if fresh and now - last_update >= self.settings.stats_interval_s:
                    last_update = now
                    state.timings_changed = False
                    yield StatsUpdate(self._stats(state, None, live=True))
            if ended and reason is None:
                reason, error = self._ended(state, framer)
        if reason in ("cancelled", "time", "stop") and run.response is not None:
            await run.response.aclose()  # closing the stream stops generation on the server
            run.response = None
        after = await self._scrape_counters() if before is not None else None
        delta_counters = after.minus(before) if (after is not None and before is not None) else None
        stats = self._stats(state, delta_counters)
        self._session.merge(stats)
        text = ended_completion(state.text, fim, reason) if fim is not None else state.text
        if edit is not None:
            tail = edit.finish()
            if tail:
                yield TextDelta(tail)
            text = edit.text
        yield Finished(reason=reason, text=text, stats=stats, error=error)

    def _failed(self, state: ReplyState, message: str) -> tuple[FinishReason, str]:
        """A reply the server broke: an error before any text; after some, the text is kept."""
        if not state.text:
            raise BackendUnavailableError(
                message, hint="The server's log says more; send the request again once it is fixed.")
        return "error", f"{message}; the partial reply is kept"

    def _ended(self, state: ReplyState, framer: SseFramer) -> tuple[FinishReason, str | None]:
        """The stream ended: normally, or before the server said it was done."""
        if state.done or state.reason is not None:
            return state.reason or "eos", None
        if state.text:
            return "error", self._lost_message(None, state)
        if framer.events == 0 and framer.stray:
            raise BackendUnavailableError(
                f"the server at {self.root} did not answer in Server-Sent Events (it sent {framer.stray!r})",
                hint="Check [engine] url / --url: it should be an OpenAI-compatible server (llama-server, vLLM).",
            )
        raise BackendUnavailableError(
            f"the server at {self.root} ended the reply without sending anything",
            hint="Its log says why; a prompt longer than the server's context window "
            "does this on python -m llama_cpp.server (start it with a larger --n_ctx).",
        )

    def _lost_message(self, exc: BaseException | None, state: ReplyState) -> str:
        why = describe_connect_error(exc) if exc is not None else "the server closed the stream early"
        return (
            f"the connection to {self.root} was lost after {state.pieces} streamed piece(s) ({why}). "
            "The partial reply is kept; send the request again once the server is back — "
            "specterm reconnects on its own."
        )

    def _stats(self, state: ReplyState, counters: SpecCounters | None, *, live: bool = False) -> Stats:
        """The request's statistics so far. `live`: mid-stream, before a metrics server's counters
        can be read (acceptance then shows as "no drafts yet", not as "not reported")."""
        elapsed = 0.0
        if state.first_token_at is not None:
            elapsed = time.monotonic() - state.first_token_at
        tokens = state.usage_tokens or state.pieces
        server = self.server
        drafting = server.drafting if server else None
        timings = state.timings if server is not None and server.kind == "llama-server" else None
        base = stats_from_timings(
            timings,
            tokens_fallback=tokens,
            generation_time_fallback_s=elapsed,
            prompt_tokens_fallback=state.prompt_tokens,
            drafting=drafting,
        )
        if timings or server is None or server.acceptance_source != "metrics":
            return base
        if live:
            base.acceptance_reported = True
            return base
        return apply_counters(base, counters)
