"""A local stand-in for the Hugging Face Hub's file endpoints, on 127.0.0.1 (never the network).

It speaks just enough of the protocol `huggingface_hub.hf_hub_download` uses: HEAD and GET on
`/{repo}/resolve/{revision}/{file}` with X-Repo-Commit / ETag / Content-Length, byte ranges for
resumed downloads, and the X-Error-Code values the client maps to its typed errors.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

COMMIT = "c0ffee" + "0" * 34


@dataclass
class FakeHub:
    files: dict[tuple[str, str], bytes] = field(default_factory=dict)
    gated: set[str] = field(default_factory=set)
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)  # method, path, Range
    server: ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def add(self, repo: str, filename: str, data: bytes) -> None:
        self.files[(repo, filename)] = data

    def gets(self, filename: str) -> list[str | None]:
        """The Range header of every GET for `filename` (None: the whole file)."""
        return [rng for method, path, rng in self.requests if method == "GET" and path.endswith("/" + filename)]

    def start(self) -> "FakeHub":
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def _resolve(self):
                path = unquote(self.path.split("?")[0]).lstrip("/")
                if "/resolve/" not in path:
                    return None, None, 200
                repo, _, rest = path.partition("/resolve/")
                _revision, _, filename = rest.partition("/")
                if repo in hub.gated:
                    return repo, None, 403
                if not any(r == repo for r, _ in hub.files):
                    return repo, None, 404
                data = hub.files.get((repo, filename))
                return repo, data, 200 if data is not None else 404

            def _answer(self, with_body: bool) -> None:
                hub.requests.append((self.command, self.path, self.headers.get("Range")))
                repo, data, status = self._resolve()
                if repo is None:  # the endpoint itself: the reachability probe
                    self.send_response(200)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if status != 200 or data is None:
                    code = {403: "GatedRepo"}.get(status)
                    if code is None:
                        code = "EntryNotFound" if any(r == repo for r, _ in hub.files) else "RepoNotFound"
                    self.send_response(status if status != 200 else 404)
                    self.send_header("X-Error-Code", code)
                    self.send_header("X-Error-Message", code)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                start = 0
                rng = self.headers.get("Range")
                if rng and rng.startswith("bytes=") and with_body:
                    start = int(rng[6:].split("-")[0] or 0)
                body = data[start:]
                self.send_response(206 if start else 200)
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("ETag", '"' + hashlib.sha256(data).hexdigest() + '"')
                self.send_header("Content-Length", str(len(body) if with_body else len(data)))
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                if with_body:
                    self.wfile.write(body)

            def do_HEAD(self) -> None:  # noqa: N802 - http.server naming
                self._answer(with_body=False)

            def do_GET(self) -> None:  # noqa: N802
                self._answer(with_body=True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
