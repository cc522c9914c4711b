"""A webhook receiver on loopback for the tests: records every call (path, headers, JSON
body) and answers each path with the statuses it was told, in order (200 once they run
out; ``always`` for a path that never answers 2xx)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


class Receiver:
    def __init__(self, answers: dict[str, list[int]] | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self._answers = {path: list(codes) for path, codes in (answers or {}).items()}
        self.always: dict[str, int] = {}
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                headers = {k.lower(): v for k, v in self.headers.items()}
                code = receiver._record(self.path, headers, body)
                self.send_response(code)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _record(self, path: str, headers: dict[str, str], body: Any) -> int:
        with self._lock:
            self.calls.append({"path": path, "headers": headers, "body": body})
            if path in self.always:
                return self.always[path]
            left = self._answers.get(path) or []
            return left.pop(0) if left else 200

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{path}"

    def to(self, path: str) -> list[dict[str, Any]]:
        with self._lock:
            return [c for c in self.calls if c["path"] == path]

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
