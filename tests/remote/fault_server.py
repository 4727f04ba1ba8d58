"""A tiny OpenAI-compatible server on loopback that misbehaves on purpose (tests/remote's fault
suite): each request is answered by the mode the test sets — a good stream, a reset mid-stream, a
slow first byte, malformed SSE or JSON, an HTTP error with a body. Real sockets, real HTTP."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "fault-model"


def sse(obj) -> bytes:
    return b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n"


def text_chunk(text: str, finish: str | None = None) -> bytes:
    return sse({"choices": [{"index": 0, "text": text, "finish_reason": finish}]})


class FaultServer:
    """Serves on a fixed port; `mode` decides the next answers; `stop()`/`start()` take it away
    and bring it back on the same port."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.mode = "ok"
        self.requests: list[str] = []
        self._connections: set[socket.socket] = set()
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                owner._connections.add(self.connection)

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": MODEL, "owned_by": "fault"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                owner.requests.append(self.path)
                getattr(self, "mode_" + owner.mode)()

            def _send(self, code: int, body, ctype: str = "application/json") -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, *parts: bytes, delay: float = 0.0) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for part in parts:
                    self.wfile.write(part)
                    self.wfile.flush()
                    time.sleep(delay)
                self.close_connection = True

            def _reset(self) -> None:
                """Close with RST (SO_LINGER 0): how a crashed server or a dropped link looks."""
                self.wfile.flush()
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
                self.close_connection = True

            def mode_ok(self) -> None:
                self._stream(text_chunk("x = 1"), text_chunk("\n", "stop"), sse(b"[DONE]"))

            def mode_reset_mid_stream(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self.wfile.write(text_chunk("partial"))
                self.wfile.flush()
                time.sleep(0.1)
                self._reset()

            def mode_reset_at_once(self) -> None:
                self._reset()

            def mode_slow_first_byte(self) -> None:
                time.sleep(3.0)
                self.mode_ok()

            def mode_malformed_sse(self) -> None:
                self._stream(b"<html><body>Bad gateway page</body></html>\n", b"not an event stream\n")

            def mode_malformed_json(self) -> None:
                self._stream(sse(b"{this is not json"), sse(b"[DONE]"))

            def mode_malformed_json_after_text(self) -> None:
                self._stream(text_chunk("x = 1"), sse(b"{broken"), sse(b"[DONE]"))

            def mode_error_event(self) -> None:
                self._stream(sse({"error": {"message": "the model crashed (out of memory)"}}))

            def mode_http_400(self) -> None:
                self._send(400, {"error": {"message": "unknown sampling field 'min_p'", "type": "invalid_request"}})

            def mode_http_422(self) -> None:
                self._send(422, {"detail": [{"loc": ["body", "prompt"], "msg": "field required"}]})

            def mode_http_500(self) -> None:
                self._send(500, b"internal kaboom in the server", "text/plain")

            def mode_http_503(self) -> None:
                self._send(503, {"error": {"message": "Loading model"}})

        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """Gone as a killed server is: the port closed and open keep-alive connections dropped."""
        for conn in list(self._connections):
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._connections.clear()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
