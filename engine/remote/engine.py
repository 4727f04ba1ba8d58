"""RemoteEngine: the `Engine` protocol over an OpenAI-compatible HTTP server.

When one process or one box is not enough — a 70B target over several GPUs, a shared GPU box that
already runs `llama-server --spec-draft-model ...`, vLLM with speculative decoding — specterm drives
that server instead of growing a distributed runtime of its own. The editor, chat and acceptance
display stay the same because this class implements the same protocol as `LocalEngine` and fills
the same `Stats` (see `server_stats` for how server reports map onto it).

What it speaks:
* chat -> `POST /v1/chat/completions`, plain continuation -> `POST /v1/completions`, both streamed as
  Server-Sent Events;
* fill-in-the-middle -> llama-server's `POST /infill` (the server applies the model's own FIM
  tokens and repo-level context) where the server has it, else `/v1/completions` with a FIM prompt
  built from a known template for the model family;
* cancellation closes the stream: llama-server and vLLM stop generating when the client goes away.

Failures: connecting retries a bounded number of times with exponential backoff and gives up within
`RemoteSettings.deadline_s` (10 s by default) with a message that says what happened (refused, DNS,
timeout, TLS, auth, wrong URL) and what to do: `start()` raises it as a `BackendUnavailableError`;
inside `stream()` it ends the request with `Finished(reason="error")`, as LocalEngine does for a
failed request. A connection lost in the middle of a reply also ends it with `Finished("error")`
and keeps the partial text. Either way the engine stays usable and the next request reconnects.

The engine never reads the environment: the TUI's config module resolves `[engine] api_key_env`
and passes the key in `RemoteSettings.api_key`.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import ssl
import time
from dataclasses import dataclass, field, replace
from typing import Any, AsyncIterator, Literal, Mapping
from urllib.parse import urlsplit, urlunsplit

import httpx

from ..errors import BackendUnavailableError, ContextOverflowError, EngineError
from ..requests import (
    ChatRequest,
    CompletionRequest,
    EngineInfo,
    Event,
    Finished,
    FinishReason,
    GenerateRequest,
    Request,
    StatsUpdate,
    TextDelta,
)
from .server_stats import (
    SpecCounters,
    apply_counters,
    spec_counters,
    stats_from_timings,
)
from ..settings import DraftSettings, SamplingSettings
from ..stats import Stats

ServerKind = Literal["llama-server", "vllm", "llama-cpp-python", "openai-compatible"]
FimMode = Literal["auto", "infill", "completion"]

BACKEND_NAME = "openai"


@dataclass(frozen=True)
class RemoteSettings:
    """How to reach one OpenAI-compatible server. Plain data, built by the config module."""

    url: str  # base address: http://host:8080, http://host:8080/v1 or a proxy prefix …/v1
    api_key: str | None = None  # the key itself (resolved from the environment by the caller)
    api_key_env: str | None = None  # the variable it came from, named in error messages
    model: str | None = None  # model id to request; None: the first one the server lists
    sampling: SamplingSettings = field(default_factory=SamplingSettings)
    connect_timeout_s: float = 2.5  # one TCP/TLS connect attempt
    read_timeout_s: float = 120.0  # longest silence tolerated between two streamed events
    retries: int = 2  # extra attempts after a failed connect (or a reply lost before any text)
    backoff_s: float = 0.5  # first wait between attempts; doubles each time
    deadline_s: float = 10.0  # all connect attempts of one call together give up after this
    verify_tls: bool | str = True  # False, or a CA bundle path for self-signed certificates
    fim: FimMode = "auto"  # auto: /infill when the server has it, else a FIM prompt
    fim_template: str | None = None  # "{prefix}"/"{suffix}" template; None: by model family
    stats_interval_s: float = 0.1  # at most this often a StatsUpdate while streaming


@dataclass(frozen=True)
class ServerInfo:
    """What `start()` learnt about the server; `doctor` prints it."""

    root: str  # base URL without the /v1 suffix
    kind: ServerKind
    model: str
    models: tuple[str, ...]
    version: str | None = None
    drafting: bool | None = None  # None: the server does not say
    acceptance_source: str = "none"  # "timings" (llama-server), "metrics" (Prometheus) or "none"
    n_ctx: int | None = None
    latency_s: float = 0.0  # round trip of the model-list request

    def describe_drafting(self) -> str:
        if self.drafting is None:
            return "unknown (not reported by server)"
        return "yes" if self.drafting else "no"


# -- URL and error helpers --------------------------------------------------------------------------


def normalise_url(url: str) -> str:
    """The server root: scheme added when missing, trailing `/` and `/v1` removed."""
    url = url.strip()
    if not url:
        raise EngineError(
            "no URL for the remote backend",
            hint='Set [engine] url (e.g. url = "http://127.0.0.1:8080") or pass --url.',
        )
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EngineError(
            f"the remote backend URL {url!r} ([engine] url / --url) is not an http(s) address",
            hint='Use e.g. "http://127.0.0.1:8080" or "https://gpu.example.com/v1".',
        )
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


_TUNNEL_HINT = (
    "Start the server (e.g. `llama-server -m target.gguf --spec-type draft-simple --spec-draft-model draft.gguf --port 8080`)"
    " or fix [engine] url / --url. For a server on another machine, "
    "`ssh -N -L 8080:127.0.0.1:8080 gpu-box` makes it http://127.0.0.1:8080 here."
)


def _ssl_error(exc: BaseException) -> BaseException | None:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, ssl.SSLError):
            return cur
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    text = str(exc)
    return exc if ("SSL" in text or "CERTIFICATE" in text or "TLS" in text) else None


def _os_error(exc: BaseException) -> OSError | None:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, OSError) and cur.errno is not None:
            return cur
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return None


def _describe_connect_error(exc: BaseException) -> str:
    tls = _ssl_error(exc)
    if tls is not None:
        return f"TLS handshake failed ({getattr(tls, 'reason', None) or tls})"
    if isinstance(exc, httpx.ConnectTimeout):
        return "no answer to the connection attempt (timed out)"
    if isinstance(exc, httpx.ReadTimeout):
        return "the server accepted the connection but sent nothing (timed out)"
    os_err = _os_error(exc)
    if os_err is not None and os_err.errno == errno.ECONNREFUSED:
        return "connection refused (nothing listens on that port)"
    text = str(os_err or exc) or type(exc).__name__
    low = text.lower()
    if "refused" in low:
        return "connection refused (nothing listens on that port)"
    if "name or service not known" in low or "nodename nor servname" in low or "getaddrinfo" in low:
        return f"the host name does not resolve ({text})"
    if "no route" in low or "unreachable" in low:
        return f"the network cannot reach the host ({text})"
    return text


def _tls_hint(url: str) -> str:
    if url.startswith("https://"):
        return (
            "If the server speaks plain HTTP, use an http:// URL. A self-signed certificate is not "
            "trusted: reach the server through `ssh -L` with an http:// URL instead."
        )
    return "The server expects TLS: use an https:// URL."


def _error_text(body: bytes) -> str:
    """The human part of an error body (OpenAI, llama-server, vLLM and FastAPI shapes)."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        text = body.decode("utf-8", "replace").strip()
        return text[:300]
    if isinstance(data, dict):
        err = data.get("error", data.get("detail", data.get("message")))
        if isinstance(err, dict):
            return str(err.get("message") or err)[:300]
        if err is not None:
            return str(err)[:300]
    return str(data)[:300]


class ServerHTTPError(BackendUnavailableError):
    """The server answered with an error status (kept so callers can branch on the code)."""

    def __init__(self, message: str, *, status: int, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.status = status


class _Retryable(Exception):
    """A failure worth another attempt (connect failed, server loading or restarting)."""

    def __init__(self, what: str, cause: BaseException | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.cause = cause


# -- FIM prompts for servers without /infill --------------------------------------------------------

# Model-family FIM formats, for servers that only offer plain completions (vLLM, llama_cpp.server).
FIM_TEMPLATES: dict[str, str] = {
    "qwen": "<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>",
    "codegemma": "<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>",
    "codellama": "<PRE> {prefix} <SUF>{suffix} <MID>",
    "deepseek": "<｜fim▁begin｜>{prefix}<｜fim▁hole｜>{suffix}<｜fim▁end｜>",
    "codestral": "[SUFFIX]{suffix}[PREFIX]{prefix}",
    "starcoder": "<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>",
}
_FAMILY_ORDER = ("codegemma", "qwen", "codellama", "code-llama", "deepseek", "codestral", "starcoder")


def fim_template_for(model: str) -> str:
    """The FIM template for a model id; StarCoder's (also SmolLM's, Granite's) when unknown."""
    low = model.lower()
    for family in _FAMILY_ORDER:
        if family in low:
            return FIM_TEMPLATES["codellama" if family == "code-llama" else family]
    return FIM_TEMPLATES["starcoder"]


def build_fim_prompt(template: str, prefix: str, suffix: str, context: str = "") -> str:
    return context + template.replace("{prefix}", prefix).replace("{suffix}", suffix)


# -- line limits for completions ---------------------------------------------------------------------


class _LineLimiter:
    """Cuts a streamed completion at the end of its first line (single-line mode) or after
    `max_lines` lines, so a suggestion never runs on past what the editor will show."""

    def __init__(self, multiline: bool, max_lines: int) -> None:
        self.limit = max_lines if multiline else 1
        self.text = ""

    def feed(self, delta: str) -> tuple[str, bool]:
        """Return the part of `delta` to emit and whether the completion is now complete."""
        start = len(self.text)
        combined = self.text + delta
        # a completion that starts at the end of a line may begin with its newline: skip leading
        # blank lines when counting, as an editor shows them as the start of the suggestion
        lead = len(combined) - len(combined.lstrip("\n"))
        cut = None
        newlines = 0
        for i in range(lead, len(combined)):
            if combined[i] == "\n":
                newlines += 1
                if newlines >= self.limit:
                    cut = i
                    break
        if cut is None:
            self.text = combined
            return delta, False
        self.text = combined[:cut]
        return self.text[start:], True


# -- the engine ---------------------------------------------------------------------------------------


class _Run:
    """One in-flight request: its cancel flag and open response."""

    def __init__(self) -> None:
        self.cancelled = asyncio.Event()
        self.response: httpx.Response | None = None


_CANCELLED = object()
_TIMED_OUT = object()
_END = object()


class RemoteEngine:
    """`Engine` over an OpenAI-compatible server (llama-server, vLLM, `python -m llama_cpp.server`)."""

    def __init__(self, settings: RemoteSettings) -> None:
        self.settings = settings
        self.root = normalise_url(settings.url)
        self.server: ServerInfo | None = None
        self.info = EngineInfo(
            target_name="(not connected)",
            draft_name="server",
            draft_kind="server",
            demo=False,
            gpu=False,
            backend=BACKEND_NAME,
            extra={"url": self.root},
        )
        self._client: httpx.AsyncClient | None = None
        self._session = Stats()
        self._runs: set[_Run] = set()
        self._infill: bool | None = None if settings.fim == "auto" else settings.fim == "infill"
        self._start_lock = asyncio.Lock()

    # -- lifecycle ---------------------------------------------------------------------------------

    def _make_client(self) -> httpx.AsyncClient:
        s = self.settings
        headers = {"Accept": "application/json"}
        if s.api_key:
            headers["Authorization"] = f"Bearer {s.api_key}"
        timeout = httpx.Timeout(
            connect=s.connect_timeout_s, read=s.read_timeout_s, write=30.0, pool=s.deadline_s
        )
        verify: bool | ssl.SSLContext = s.verify_tls if isinstance(s.verify_tls, bool) else (
            ssl.create_default_context(cafile=s.verify_tls)
        )
        return httpx.AsyncClient(
            base_url=self.root,
            headers=headers,
            timeout=timeout,
            verify=verify,
            trust_env=False,  # the engine never reads the environment (proxies included)
            follow_redirects=True,
        )

    async def start(self) -> None:
        """Connect and identify the server and model. Raises BackendUnavailableError."""
        async with self._start_lock:
            if self._client is None:
                self._client = self._make_client()
            self.server = await self.probe()
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

    async def close(self) -> None:
        await self.cancel()
        if self._client is not None:
            await self._client.aclose()
            self._client = None

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

    # -- HTTP plumbing --------------------------------------------------------------------------------

    def _key_hint(self) -> str:
        env = self.settings.api_key_env
        if self.settings.api_key:
            return (
                f"Check the key in ${env}; it must be one the server was started with "
                "(llama-server/vLLM --api-key)." if env else "Check the API key."
            )
        if env:
            return f"Export the key: `export {env}=...` ([engine] api_key_env names the variable)."
        return 'Set [engine] api_key_env = "NAME" and export NAME=<key>.'

    def _check_status(self, resp: httpx.Response, body: bytes, what: str) -> None:
        """Raise a user-facing error for a non-2xx answer (retryable ones as _Retryable)."""
        code = resp.status_code
        if code < 300:
            return
        detail = _error_text(body)
        if code in (502, 503, 504):
            raise _Retryable(f"HTTP {code} ({detail})")
        if code in (401, 403):
            state = "refused the API key" if self.settings.api_key else "requires an API key and none is set"
            raise ServerHTTPError(
                f"the server at {self.root} {state} (HTTP {code}: {detail})", status=code, hint=self._key_hint()
            )
        if code == 404:
            raise ServerHTTPError(
                f"no OpenAI-compatible API at {self.root}: {what} answered 404 ({detail})",
                status=404,
                hint=(
                    "[engine] url / --url should be the server's base address, e.g. "
                    "http://127.0.0.1:8080 or https://host/v1 (the /v1 suffix is optional)."
                ),
            )
        if code == 400 and ("context" in detail.lower() or "too long" in detail.lower()):
            raise ContextOverflowError(
                f"the request does not fit the server's context window ({detail})",
                hint="Send less (a smaller selection or shorter chat), or start the server with a larger context (-c).",
            )
        raise ServerHTTPError(f"the server at {self.root} rejected {what}: HTTP {code} ({detail})", status=code)

    async def _with_retries(self, what: str, attempt):  # attempt: async () -> T
        """Run `attempt` with bounded retries and exponential backoff inside the deadline."""
        s = self.settings
        start = time.monotonic()
        tries = 0
        last: _Retryable | None = None
        while True:
            tries += 1
            try:
                return await attempt()
            except _Retryable as exc:
                last = exc
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
                last = _Retryable(_describe_connect_error(exc), exc)
                if _ssl_error(exc) is not None:  # a TLS mismatch does not heal by retrying
                    raise BackendUnavailableError(
                        f"cannot reach the remote backend at {self.root}: {last.what}",
                        hint=_tls_hint(self.root),
                    ) from None
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError, httpx.ReadTimeout) as exc:
                last = _Retryable(_describe_connect_error(exc), exc)
            elapsed = time.monotonic() - start
            wait = s.backoff_s * (2 ** (tries - 1))
            if tries > s.retries or elapsed + wait + s.connect_timeout_s > s.deadline_s + 0.5:
                break
            await asyncio.sleep(wait)
        elapsed = time.monotonic() - start
        raise BackendUnavailableError(
            f"cannot reach the remote backend at {self.root} ({what}): {last.what if last else 'failed'}"
            f" — {tries} attempt{'s' if tries != 1 else ''} in {elapsed:.1f} s",
            hint=_TUNNEL_HINT,
        ) from None

    async def _get_json(self, path: str, *, retry: bool = True, quiet: bool = False) -> Any:
        assert self._client is not None

        async def attempt():
            resp = await self._client.get(path)
            if quiet and resp.status_code >= 400:
                return None
            self._check_status(resp, resp.content, f"GET {path}")
            try:
                return resp.json()
            except ValueError:
                if quiet:
                    return None
                raise BackendUnavailableError(
                    f"{self.root}{path} did not answer JSON: is this an OpenAI-compatible server?",
                    hint="Check [engine] url / --url.",
                ) from None

        if retry:
            return await self._with_retries(f"GET {path}", attempt)
        try:
            return await attempt()
        except (httpx.HTTPError, _Retryable):
            if quiet:
                return None
            raise

    async def _get_text(self, path: str) -> str | None:
        """A best-effort GET (metrics, version): None when absent or failing."""
        assert self._client is not None
        try:
            resp = await self._client.get(path, timeout=self.settings.connect_timeout_s + 2.0)
        except httpx.HTTPError:
            return None
        return resp.text if resp.status_code == 200 else None

    # -- discovery --------------------------------------------------------------------------------------

    async def probe(self) -> ServerInfo:
        """Identify server, model, drafting and where acceptance figures come from."""
        if self._client is None:
            self._client = self._make_client()
        t0 = time.perf_counter()
        listing = await self._get_json("/v1/models")
        latency = time.perf_counter() - t0
        data = listing.get("data") if isinstance(listing, dict) else None
        if not isinstance(data, list):
            raise BackendUnavailableError(
                f"{self.root}/v1/models did not list models: is this an OpenAI-compatible server?",
                hint="Check [engine] url / --url.",
            )
        models = tuple(str(m.get("id")) for m in data if isinstance(m, dict) and m.get("id"))
        owners = {str(m.get("owned_by", "")).lower() for m in data if isinstance(m, dict)}
        if not models:
            raise BackendUnavailableError(f"the server at {self.root} has no model loaded")
        model = self.settings.model or models[0]
        if self.settings.model and self.settings.model not in models:
            raise BackendUnavailableError(
                f"the server at {self.root} does not serve model {self.settings.model!r}",
                hint=f"It serves: {', '.join(models)}. Leave the model unset to use the first.",
            )

        kind: ServerKind = "openai-compatible"
        version = None
        drafting: bool | None = None
        source = "none"
        n_ctx = None
        if "llamacpp" in owners:
            kind = "llama-server"
            props = await self._get_json("/props", retry=False, quiet=True) or {}
            version = props.get("build_info")
            gen = props.get("default_generation_settings") or {}
            n_ctx = gen.get("n_ctx") if isinstance(gen, dict) else None
            slots = await self._get_json("/slots", retry=False, quiet=True)
            if isinstance(slots, list) and slots and isinstance(slots[0], dict) and "speculative" in slots[0]:
                drafting = any(bool(s.get("speculative")) for s in slots)
            source = "timings"
        elif "vllm" in owners:
            kind = "vllm"
            ver = await self._get_json("/version", retry=False, quiet=True)
            version = ver.get("version") if isinstance(ver, dict) else None
            metrics = await self._get_text("/metrics")
            counters = spec_counters(metrics, model=model) if metrics else None
            drafting = counters is not None if metrics is not None else None
            source = "metrics" if counters is not None else "none"
            max_len = next((m.get("max_model_len") for m in data if m.get("id") == model), None)
            n_ctx = max_len if isinstance(max_len, int) else None
        elif "me" in owners:  # llama-cpp-python's server lists its models as owned by "me"
            kind = "llama-cpp-python"
        if kind == "llama-server" and self.settings.fim == "auto":
            self._infill = None  # learnt on the first FIM request
        elif kind != "llama-server" and self.settings.fim == "auto":
            self._infill = False
        return ServerInfo(
            root=self.root,
            kind=kind,
            model=model,
            models=models,
            version=str(version) if version is not None else None,
            drafting=drafting,
            acceptance_source=source,
            n_ctx=n_ctx,
            latency_s=latency,
        )

    # -- requests ---------------------------------------------------------------------------------------

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

    def _plan(self, request: Request, *, infill: bool) -> tuple[str, dict[str, Any], str]:
        """(path, JSON body, response format) for one request."""
        assert self.server is not None
        model = self.server.model
        stop = list(request.stop)
        if isinstance(request, ChatRequest):
            body = {
                "model": model,
                "messages": [{"role": m.role, "content": m.content} for m in request.messages],
                "max_tokens": request.max_tokens,
                "stream": True,
                **self._sampling_fields(request.sampling),
                **self._extras(),
            }
            if stop:
                body["stop"] = stop
            return "/v1/chat/completions", body, "chat"
        if isinstance(request, GenerateRequest):
            body = {
                "model": model,
                "prompt": request.prompt,
                "max_tokens": request.max_tokens,
                "stream": True,
                **self._sampling_fields(request.sampling),
                **self._extras(),
            }
            if stop:
                body["stop"] = stop
            return "/v1/completions", body, "text"
        assert isinstance(request, CompletionRequest)
        if infill:
            body = {
                "input_prefix": request.prefix,
                "input_suffix": request.suffix,
                "input_extra": [{"filename": f.path, "text": f.text} for f in request.context_files],
                "n_predict": request.max_tokens,
                "stream": True,
                **self._sampling_fields(request.sampling),
                "timings_per_token": True,
                "cache_prompt": True,
            }
            if stop:
                body["stop"] = stop
            return "/infill", body, "native"
        template = self.settings.fim_template or fim_template_for(model)
        context = "".join(f"// {f.path}\n{f.text}\n" for f in request.context_files)
        if request.path:
            context += f"// {request.path}\n"
        body = {
            "model": model,
            "prompt": build_fim_prompt(template, request.prefix, request.suffix, context),
            "max_tokens": request.max_tokens,
            "stream": True,
            **self._sampling_fields(request.sampling),
            **self._extras(),
        }
        if stop:
            body["stop"] = stop
        return "/v1/completions", body, "text"

    async def _open(self, path: str, body: dict[str, Any], run: _Run) -> httpx.Response:
        """POST and return the streaming response once its headers are in (with retries)."""
        assert self._client is not None

        async def attempt() -> httpx.Response:
            req = self._client.build_request("POST", path, json=body, headers={"Accept": "text/event-stream"})
            resp = await self._client.send(req, stream=True)
            if resp.status_code >= 300:
                content = await resp.aread()
                await resp.aclose()
                self._check_status(resp, content, f"POST {path}")
            return resp

        return await self._with_retries(f"POST {path}", attempt)

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
        if isinstance(result, httpx.Response):
            await result.aclose()
        return _CANCELLED if run.cancelled.is_set() else _TIMED_OUT

    async def _scrape_counters(self) -> SpecCounters | None:
        if not self.server or self.server.acceptance_source != "metrics":
            return None
        text = await self._get_text("/metrics")
        return spec_counters(text, model=self.server.model) if text else None

    def stream(self, request: Request) -> AsyncIterator[Event]:
        return self._stream(request)

    async def _stream(self, request: Request) -> AsyncIterator[Event]:
        if self.server is None or self._client is None:
            try:
                await self.start()
            except EngineError as err:
                yield Finished(reason="error", text="", stats=Stats(), error=str(err))
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
            state = _StreamState(request)
            try:
                async for event in self._one_attempt(request, run, state):
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
                        hint=_TUNNEL_HINT,
                    ) from None
                await asyncio.sleep(wait)

    async def _one_attempt(self, request: Request, run: _Run, state: "_StreamState") -> AsyncIterator[Event]:
        is_fim = isinstance(request, CompletionRequest)
        use_infill = is_fim and self._infill is not False and self.server is not None and (
            self.server.kind == "llama-server" or self._infill is True
        )
        before = await self._scrape_counters()
        budget = request.time_budget_s if isinstance(request, CompletionRequest) else None
        t_start = time.monotonic()
        path, body, fmt = self._plan(request, infill=use_infill)
        try:
            opened = await self._race(self._open(path, body, run), run, budget)
        except ServerHTTPError as exc:
            if use_infill and self.settings.fim == "auto" and exc.status in (404, 405, 501):
                self._infill = False  # this server or model has no infill: use a FIM prompt
                path, body, fmt = self._plan(request, infill=False)
                left = None if budget is None else max(budget - (time.monotonic() - t_start), 0.0)
                opened = await self._race(self._open(path, body, run), run, left)
            else:
                raise
        if opened is _CANCELLED or opened is _TIMED_OUT:
            stats = self._stats(state, None)
            self._session.merge(stats)
            yield Finished(reason="cancelled" if opened is _CANCELLED else "time", text="", stats=stats)
            return
        run.response = opened
        if use_infill and path == "/infill":
            self._infill = True
        lines = run.response.aiter_lines()
        limiter = _LineLimiter(request.multiline, request.max_lines) if isinstance(request, CompletionRequest) else None
        data_lines: list[str] = []
        reason: FinishReason | None = None
        error: str | None = None
        last_update = 0.0
        while reason is None:
            timeout = None
            if budget is not None:
                timeout = max(budget - (time.monotonic() - t_start), 0.0)
            try:
                line = await self._race(lines.__anext__(), run, timeout)
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.ReadTimeout) as exc:
                if not state.text:
                    raise _LostBeforeText(_describe_connect_error(exc)) from None
                reason, error = "error", self._lost_message(exc, state)
                break
            if line is _CANCELLED:
                reason = "cancelled"
                break
            if line is _TIMED_OUT:
                reason = "time"
                break
            if line is _END:
                if not state.done and state.reason is None:
                    if not state.text:  # answered, then said nothing: a failure, not a lost link
                        raise BackendUnavailableError(
                            f"the server at {self.root} ended the reply without sending anything",
                            hint="Its log says why; a prompt longer than the server's context window "
                            "does this on python -m llama_cpp.server (start it with a larger --n_ctx).",
                        )
                    reason, error = "error", self._lost_message(None, state)
                    break
                reason = state.reason or "eos"
                break
            if line.startswith(":"):  # SSE comment / keep-alive ping
                continue
            if line.startswith("data:"):
                data_lines.append(line[5:].lstrip(" ") if line[5:6] == " " else line[5:])
                continue
            if line.strip() or not data_lines:
                continue  # "event:", "id:" or stray blank lines
            payload = "\n".join(data_lines)
            data_lines = []
            if payload.strip() == "[DONE]":
                state.done = True
                reason = state.reason or "eos"
                break
            try:
                chunk = json.loads(payload)
            except ValueError:
                continue
            if isinstance(chunk, dict) and "error" in chunk:
                msg = _error_text(json.dumps(chunk).encode())
                if not state.text:
                    raise BackendUnavailableError(f"the server at {self.root} failed the request: {msg}")
                reason, error = "error", f"the server stopped the reply with an error: {msg}"
                break
            delta = state.absorb(chunk, fmt)
            if delta:
                if limiter is not None:
                    delta, complete = limiter.feed(delta)
                    if complete:
                        state.reason = "stop"
                        reason = "stop"
                state.text += delta
                state.pieces += 1
                if state.first_token_at is None:
                    state.first_token_at = time.monotonic()
                if delta:
                    yield TextDelta(delta)
            if state.done and fmt == "native":
                reason = state.reason or "eos"
            now = time.monotonic()
            fresh = state.timings_changed or (state.timings is None and delta)
            if fresh and now - last_update >= self.settings.stats_interval_s:
                last_update = now
                state.timings_changed = False
                yield StatsUpdate(self._stats(state, None, live=True))
        if reason in ("cancelled", "time", "stop") and run.response is not None:
            await run.response.aclose()  # closing the stream stops generation on the server
            run.response = None
        after = await self._scrape_counters() if before is not None else None
        delta_counters = after.minus(before) if (after is not None and before is not None) else None
        stats = self._stats(state, delta_counters)
        self._session.merge(stats)
        yield Finished(reason=reason, text=state.text, stats=stats, error=error)

    def _lost_message(self, exc: BaseException | None, state: "_StreamState") -> str:
        why = _describe_connect_error(exc) if exc is not None else "the server closed the stream early"
        return (
            f"the connection to {self.root} was lost after {state.pieces} streamed piece(s) ({why}). "
            "The partial reply is kept; send the request again once the server is back — "
            "specterm reconnects on its own."
        )

    def _stats(self, state: "_StreamState", counters: SpecCounters | None, *, live: bool = False) -> Stats:
        """The request's statistics so far. `live`: mid-stream, before a metrics server's counters
        can be read (acceptance then shows as "no drafts yet", not as "not reported")."""
        elapsed = 0.0
        if state.first_token_at is not None:
            elapsed = time.monotonic() - state.first_token_at
        tokens = state.usage_tokens or state.pieces
        server = self.server
        if server is not None and server.kind == "llama-server" and state.timings:
            return stats_from_timings(
                state.timings,
                tokens_fallback=tokens,
                generation_time_fallback_s=elapsed,
                prompt_tokens_fallback=state.prompt_tokens,
                drafting=server.drafting,
            )
        base = stats_from_timings(
            None,
            tokens_fallback=tokens,
            generation_time_fallback_s=elapsed,
            prompt_tokens_fallback=state.prompt_tokens,
            drafting=server.drafting if server else None,
        )
        if server is not None and server.acceptance_source == "metrics":
            if live:
                base.acceptance_reported = True
                return base
            return apply_counters(base, counters)
        return base


class _LostBeforeText(Exception):
    """The connection dropped before any text arrived: the request can be sent again."""


class _StreamState:
    """What one streamed reply has delivered so far."""

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
            self.reason = "stop" if self.request.stop else "eos"
        else:
            self.reason = "eos"

    def absorb(self, chunk: Any, fmt: str) -> str:
        """Take one JSON chunk; return its text."""
        if not isinstance(chunk, dict):
            return ""
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
                self.reason = {"limit": "length", "word": "stop"}.get(str(stop_type), "eos")
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


def remote_settings_with(settings: RemoteSettings, **changes: Any) -> RemoteSettings:
    """A copy with some fields changed (e.g. the CLI's --url over the config file's)."""
    return replace(settings, **changes)
