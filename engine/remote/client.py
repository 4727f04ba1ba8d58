"""The HTTP client under `RemoteEngine`: one httpx client, bounded retries with backoff inside a
deadline, and every failure turned into a message that says what happened (refused, DNS, timeout,
TLS, auth, wrong URL, an error status and its body) and what to do."""

from __future__ import annotations

import asyncio
import errno
import json
import ssl
import time
from typing import Any, Awaitable, Callable, TypeVar

import httpx

from ..errors import BackendUnavailableError, ContextOverflowError
from .settings import RemoteSettings

T = TypeVar("T")

TUNNEL_HINT = (
    "Start the server (e.g. `llama-server -m target.gguf --spec-type draft-simple --spec-draft-model draft.gguf "
    "--port 8080`) or fix [engine] url / --url. For a server on another machine, "
    "`ssh -N -L 8080:127.0.0.1:8080 gpu-box` makes it http://127.0.0.1:8080 here."
)


def _chain(exc: BaseException):
    """`exc`, its causes and contexts, and the members of exception groups, each once."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        cur = todo.pop()
        if cur is None or id(cur) in seen:
            continue
        seen.add(id(cur))
        yield cur
        todo += list(getattr(cur, "exceptions", ()) or ())
        todo += [cur.__cause__, cur.__context__]


def _ssl_error(exc: BaseException) -> BaseException | None:
    for cur in _chain(exc):
        if isinstance(cur, ssl.SSLError):
            return cur
    text = str(exc)
    return exc if ("SSL" in text or "CERTIFICATE" in text or "TLS" in text) else None


def _os_error(exc: BaseException) -> OSError | None:
    for cur in _chain(exc):
        if isinstance(cur, OSError) and cur.errno is not None:
            return cur
    return None


def describe_connect_error(exc: BaseException) -> str:
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
    if os_err is not None and os_err.errno in (errno.ECONNRESET, errno.EPIPE):
        return "the server reset the connection"
    text = str(os_err or exc) or type(exc).__name__
    low = text.lower()
    if "refused" in low:
        return "connection refused (nothing listens on that port)"
    if "name or service not known" in low or "nodename nor servname" in low or "getaddrinfo" in low:
        return f"the host name does not resolve ({text})"
    if "no route" in low or "unreachable" in low:
        return f"the network cannot reach the host ({text})"
    if "disconnected" in low or "incomplete" in low or "peer closed" in low:
        return f"the server closed the connection ({text})"
    return text


def tls_hint(url: str) -> str:
    if url.startswith("https://"):
        return (
            "If the server speaks plain HTTP, use an http:// URL. A self-signed certificate is not "
            "trusted: reach the server through `ssh -L` with an http:// URL instead."
        )
    return "The server expects TLS: use an https:// URL."


def error_text(body: bytes) -> str:
    """The human part of an error body (OpenAI, llama-server, vLLM and FastAPI shapes)."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        text = body.decode("utf-8", "replace").strip()
        return text[:300] or "no details in the reply"
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


class Retryable(Exception):
    """A failure worth another attempt (connect failed, server loading or restarting)."""

    def __init__(self, what: str, cause: BaseException | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.cause = cause


class HttpClient:
    """httpx for one server root, with the engine's retry and error rules."""

    def __init__(self, settings: RemoteSettings, root: str) -> None:
        self.settings = settings
        self.root = root
        self._client: httpx.AsyncClient | None = None

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            s = self.settings
            headers = {"Accept": "application/json"}
            if s.api_key:
                headers["Authorization"] = f"Bearer {s.api_key}"
            timeout = httpx.Timeout(connect=s.connect_timeout_s, read=s.read_timeout_s, write=30.0, pool=s.deadline_s)
            verify: bool | ssl.SSLContext = s.verify_tls if isinstance(s.verify_tls, bool) else (
                ssl.create_default_context(cafile=s.verify_tls)
            )
            self._client = httpx.AsyncClient(
                base_url=self.root, headers=headers, timeout=timeout, verify=verify,
                trust_env=False,  # the engine never reads the environment (proxies included)
                follow_redirects=True,
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

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

    def check_status(self, code: int, body: bytes, what: str) -> None:
        """Raise a user-facing error for a non-2xx answer (retryable ones as Retryable)."""
        if code < 300:
            return
        detail = error_text(body)
        if code in (502, 503, 504):
            raise Retryable(f"HTTP {code} ({detail})")
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
        hint = "The server's log says more; try again once it is fixed." if code >= 500 else None
        raise ServerHTTPError(f"the server at {self.root} rejected {what}: HTTP {code} ({detail})",
                              status=code, hint=hint)

    async def with_retries(self, what: str, attempt: Callable[[], Awaitable[T]]) -> T:
        """Run `attempt` with bounded retries and exponential backoff inside the deadline."""
        s = self.settings
        start = time.monotonic()
        tries = 0
        last: Retryable | None = None
        while True:
            tries += 1
            try:
                return await attempt()
            except Retryable as exc:
                last = exc
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
                last = Retryable(describe_connect_error(exc), exc)
                if _ssl_error(exc) is not None:  # a TLS mismatch does not heal by retrying
                    raise BackendUnavailableError(
                        f"cannot reach the remote backend at {self.root}: {last.what}", hint=tls_hint(self.root),
                    ) from None
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError, httpx.ReadTimeout) as exc:
                last = Retryable(describe_connect_error(exc), exc)
            except (httpx.HTTPError, OSError, ValueError) as exc:  # a bad address, a broken reply
                raise BackendUnavailableError(
                    f"cannot talk to the remote backend at {self.root} ({what}): {describe_connect_error(exc)}",
                    hint=TUNNEL_HINT,
                ) from None
            elapsed = time.monotonic() - start
            wait = s.backoff_s * (2 ** (tries - 1))
            if tries > s.retries or elapsed + wait + s.connect_timeout_s > s.deadline_s + 0.5:
                break
            await asyncio.sleep(wait)
        elapsed = time.monotonic() - start
        raise BackendUnavailableError(
            f"cannot reach the remote backend at {self.root} ({what}): {last.what if last else 'failed'}"
            f" — {tries} attempt{'s' if tries != 1 else ''} in {elapsed:.1f} s",
            hint=TUNNEL_HINT,
        ) from None

    async def get_json(self, path: str, *, retry: bool = True, quiet: bool = False) -> Any:
        async def attempt() -> Any:
            resp = await self.client.get(path)
            if quiet and resp.status_code >= 400:
                return None
            self.check_status(resp.status_code, resp.content, f"GET {path}")
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
            return await self.with_retries(f"GET {path}", attempt)
        try:
            return await attempt()
        except (httpx.HTTPError, Retryable):
            if quiet:
                return None
            raise

    async def get_text(self, path: str) -> str | None:
        """A best-effort GET (metrics, version): None when absent or failing."""
        try:
            resp = await self.client.get(path, timeout=self.settings.connect_timeout_s + 2.0)
        except httpx.HTTPError:
            return None
        return resp.text if resp.status_code == 200 else None

    async def post_quiet(self, path: str, body: dict[str, Any], timeout: float) -> Any:
        """A best-effort JSON POST (tokenize): the decoded reply, or None when absent or failing."""
        try:
            resp = await self.client.post(path, json=body, timeout=timeout)
            return resp.json() if resp.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None

    async def open_stream(self, path: str, body: dict[str, Any]) -> httpx.Response:
        """POST and return the streaming response once its headers are in (with retries)."""

        async def attempt() -> httpx.Response:
            req = self.client.build_request("POST", path, json=body, headers={"Accept": "text/event-stream"})
            resp = await self.client.send(req, stream=True)
            if resp.status_code >= 300:
                content = await resp.aread()
                await resp.aclose()
                self.check_status(resp.status_code, content, f"POST {path}")
            return resp

        return await self.with_retries(f"POST {path}", attempt)
