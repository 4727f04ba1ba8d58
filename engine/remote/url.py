"""The server's base URL, checked before anything connects (no HTTP library needed, so the config
module can check `[engine] url` when it reads it)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from ..errors import EngineError

_EXAMPLES = 'Use e.g. "http://127.0.0.1:8080" or "https://gpu.example.com/v1".'


def normalise_url(url: str) -> str:
    """The server root: scheme added when missing, trailing `/` and `/v1` removed. An address that
    cannot work (no host, a port outside 1-65535, spaces) is an EngineError naming the setting."""
    url = url.strip()
    if not url:
        raise EngineError(
            "no URL for the remote backend",
            hint='Set [engine] url (e.g. url = "http://127.0.0.1:8080") or pass --url.',
        )
    if "://" not in url:
        url = "http://" + url
    where = f"the remote backend URL {url!r} ([engine] url / --url)"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as err:  # "Port out of range 0-65535", "Port could not be cast ..."
        raise EngineError(f"{where} has an invalid port ({err})", hint=_EXAMPLES) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EngineError(f"{where} is not an http(s) address", hint=_EXAMPLES)
    if port == 0 or any(ch.isspace() for ch in url):
        raise EngineError(f"{where} is not a usable address (port 0 or a blank inside)", hint=_EXAMPLES)
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))
