"""The web server over a test's runtime, in a background thread, and the tiny HTTP client
the page and API tests send their requests with."""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from typing import Any

from waystone import Runtime
from waystone.web.serve import WebServer

TOKEN = "t0ken-for-the-serve-tests"  # the API token of ``Served`` in the tests


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def send(
    port: int, method: str, path: str, data: bytes | str | None, headers: dict[str, str]
) -> Reply:
    """One request to 127.0.0.1:``port`` with exactly these headers, and its reply."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
    finally:
        conn.close()


class Served:
    """A server over the test runtime, in a background thread, and a tiny HTTP client."""

    def __init__(self, runtime: Runtime, token: str | None) -> None:
        self.server = WebServer(runtime, "127.0.0.1", 0, token)
        self.host, self.port = "127.0.0.1", self.server.port
        self.url = self.server.url
        self.server.start()

    def close(self) -> None:
        self.server.stop()

    def request(
        self,
        method: str,
        path: str,
        body: bytes | str | dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        token: str | None = None,
    ) -> Reply:
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        if isinstance(data, str):
            data = data.encode()
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        if data is not None:
            sent.setdefault("Content-Type", "application/json")
        return send(self.port, method, path, data, sent)
