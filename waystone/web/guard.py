"""What every request of the app passes first (an ASGI middleware): the Host it names
must be one the server answers (DNS rebinding), a body must say its length and stay
under the limit (413, unread), and every answer carries the headers that keep a browser
from sniffing, caching, framing or running it (a page: the Content-Security-Policy)."""

from __future__ import annotations

import os

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from waystone.errors import BadInput
from waystone.web.render import COMMON_HEADERS, PAGE_HEADERS
from waystone.web.replies import error_reply, kind_of, route_path
from waystone.web.security import HostName, host_allowed

MAX_BODY_ENV = "WAYSTONE_MAX_BODY_BYTES"
MAX_BODY = 1 << 20  # 1 MiB unless set: approvals, webhooks and run inputs are small
HEALTH_PATH = "/ok"  # answered for any Host: it says only that the server is up


def max_body_bytes() -> int:
    """The largest request body the app reads: ``WAYSTONE_MAX_BODY_BYTES``, or 1 MiB."""
    raw = os.environ.get(MAX_BODY_ENV, "").strip()
    if not raw:
        return MAX_BODY
    if not (raw.isascii() and raw.isdigit()) or int(raw) == 0:
        raise BadInput(
            f"{MAX_BODY_ENV}={raw!r} is not a number of bytes: set a whole number above 0 "
            f"(the default is {MAX_BODY}, 1 MiB)"
        )
    return int(raw)


class Guard:
    """``hosts``: the Host values answered (None: any, for an app mounted behind a
    server of its own that checks them); ``max_body``: the largest body read."""

    def __init__(self, app: ASGIApp, hosts: frozenset[HostName] | None, max_body: int) -> None:
        self.app, self.hosts, self.max_body = app, hosts, max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            status, message = refusal
            kind = kind_of(route_path(scope), scope["method"])
            # the body stays unread: the connection closes instead of reading it
            root = str(scope.get("root_path", ""))
            reply = error_reply(kind, status, message, {"connection": "close"}, root)
            await reply(scope, receive, self._headed(send))
            return
        await self.app(scope, receive, self._headed(send))

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        headers = Headers(scope=scope)
        host = headers.get("host")
        # a load balancer's health check names the address it dials; /ok tells it nothing
        health = scope["method"] == "GET" and route_path(scope) == HEALTH_PATH
        if self.hosts is not None and not health and not host_allowed(host, self.hosts):
            return 400, (
                f"this server does not answer for the host {host!r}: "
                "start it with --allowed-hosts to add a name"
            )
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return 411, "send a Content-Length (chunked bodies are not accepted)"
        length = headers.get("content-length", "0").strip() or "0"
        if not (length.isascii() and length.isdigit()):
            return 400, "Content-Length is not a number"
        if int(length) > self.max_body:
            return 413, (
                f"the body is {int(length)} bytes, over this server's limit of "
                f"{self.max_body} bytes: send a smaller one (the limit is set by {MAX_BODY_ENV})"
            )
        return None

    def _headed(self, send: Send) -> Send:
        async def headed(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                extra = dict(COMMON_HEADERS)
                if headers.get("content-type", "").startswith("text/html"):
                    extra.update(PAGE_HEADERS)
                for name, value in extra.items():
                    headers.setdefault(name, value)
            await send(message)

        return headed
