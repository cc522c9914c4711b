"""``waystone serve``: a small HTTP server over a :class:`Runtime`, standard library only.

It offers three things on one port:

* a self-contained HTML dashboard (``GET /``, ``GET /runs/{thread_id}``) that works without
  JavaScript: pending approvals carry plain Approve and Reject forms;
* a JSON API (``/api/runs``, ``/api/runs/{thread_id}``, ``.../history``, ``.../approve``,
  ``.../reject``, ``/api/dashboard``);
* a webhook endpoint for providers, ``POST /signals/{thread_id}/{name}``, whose optional
  ``Idempotency-Key`` header deduplicates deliveries.

Every request that changes something needs the token (``WAYSTONE_API_TOKEN``, read by the
caller): ``Authorization: Bearer <token>`` for the API and webhooks, and for the HTML forms
a session cookie set by ``POST /login`` (HttpOnly, SameSite=Strict; a session Postgres
keeps until logout or expiry, never the token itself), a form sent from a page of this
server (its Origin) and the session's CSRF token. With a token configured, reading needs
it too (a bearer token or a session) unless the server is started for public reads.
Without a configured token every change is refused; reading still works. The server
answers only the host names it is configured for (DNS rebinding), and closes a connection
whose request is not received within its read timeout. Anything refused changes nothing.
The decisions themselves are in :mod:`waystone.web_security`.

Errors come back as ``{"error": message}`` (HTML forms: a page with a back link), with the
HTTP status of the Waystone error: 400 bad input, 404 unknown thread, 409 transition not
allowed, 503 database unavailable, 500 otherwise. A body over ``WAYSTONE_MAX_BODY_BYTES``
(1 MiB by default) gets 413 and is not read.

This module is the plumbing (the server, request parsing, authentication, routing); the
routes themselves are in :mod:`waystone.routes` and the HTML in :mod:`waystone.pages`.
"""

from __future__ import annotations

import hmac
import io
import json
import logging
import os
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import Any, Literal
from urllib.parse import parse_qs, unquote, urlsplit

from waystone._json_input import parse_json_input
from waystone.errors import BadInput, DatabaseUnavailable, WaystoneError, chain
from waystone.pages import CSP, error_page
from waystone.runtime import Runtime
from waystone.web_security import (
    CSRF_FIELD,
    SessionStore,
    allowed_hosts,
    csrf_token,
    csrf_valid,
    host_allowed,
    parse_allowed_hosts,
    same_origin,
    session_of,
)

logger = logging.getLogger(__name__)

TOKEN_ENV = "WAYSTONE_API_TOKEN"
SESSION_COOKIE = "waystone_session"
MAX_BODY_ENV = "WAYSTONE_MAX_BODY_BYTES"
MAX_BODY = 1 << 20  # 1 MiB unless set: approvals and webhook payloads are small
READ_TIMEOUT_S = 10.0  # a request (its line, headers and body) must arrive within this
PAGE_LIMIT = 200

NO_TOKEN = (
    f"changes are disabled: no API token is configured. Set {TOKEN_ENV} and restart "
    "`waystone serve`."
)

Kind = Literal["api", "html"]


class HttpError(Exception):
    """A request the server refuses, with its HTTP status and a message for the caller."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


def http_status(exc: WaystoneError) -> int:
    """The HTTP status a Waystone error maps to (by its CLI exit code)."""
    if isinstance(exc, DatabaseUnavailable):
        return 503
    return {2: 400, 3: 404, 4: 409, 6: 503}.get(exc.exit_code, 500)


def max_body_bytes() -> int:
    """The largest request body the server reads: ``WAYSTONE_MAX_BODY_BYTES``, or 1 MiB."""
    raw = os.environ.get(MAX_BODY_ENV, "").strip()
    if not raw:
        return MAX_BODY
    if not (raw.isascii() and raw.isdigit()) or int(raw) == 0:
        raise BadInput(
            f"{MAX_BODY_ENV}={raw!r} is not a number of bytes: set a whole number above 0 "
            f"(the default is {MAX_BODY}, 1 MiB)"
        )
    return int(raw)


# -- the server --------------------------------------------------------------------------


class WaystoneServer(ThreadingHTTPServer):
    """A threading HTTP server that carries the shared Runtime, the token and the rules
    of who may read and from where (see :func:`make_server`)."""

    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        runtime: Runtime,
        token: str | None,
        *,
        hosts: Sequence[str] = (),
        public_reads: bool = False,
        read_timeout: float = READ_TIMEOUT_S,
    ) -> None:
        try:
            extra = parse_allowed_hosts(hosts)
        except ValueError as exc:
            raise BadInput(f"--allowed-hosts: {exc}") from exc
        if not read_timeout > 0:
            raise BadInput(
                f"the read timeout must be a positive number of seconds, not {read_timeout}"
            )
        self.runtime = runtime
        self.token = token or None
        self.max_body = max_body_bytes()
        self.public_reads = public_reads
        self.read_timeout = read_timeout
        self.sessions = SessionStore(runtime.connection)
        super().__init__(address, Handler)
        self.allowed_hosts = allowed_hosts(address[0], int(self.server_address[1]), extra)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        shown = host if isinstance(host, str) else host.decode()
        if ":" in shown:
            shown = f"[{shown}]"
        return f"http://{shown}:{port}"


class _Server6(WaystoneServer):
    address_family = socket.AF_INET6


def make_server(
    runtime: Runtime,
    host: str,
    port: int,
    token: str | None,
    *,
    hosts: Sequence[str] = (),
    public_reads: bool = False,
    read_timeout: float = READ_TIMEOUT_S,
) -> ThreadingHTTPServer:
    """A server bound to ``host:port`` (port 0: a free one), not yet serving.

    It answers requests whose Host is the bind host, localhost, 127.0.0.1 or [::1] at its
    port, or one of ``hosts`` (``name``: any port, ``name:port``). ``public_reads`` lets
    anyone read runs though a token is set. ``read_timeout``: seconds a request may take
    to arrive. Call ``serve_forever()`` (for instance in a thread), then ``shutdown()``
    and ``server_close()``. The runtime is shared by the request threads.
    """
    from waystone import routes  # noqa: F401 - importing it registers the routes

    cls = _Server6 if ":" in host else WaystoneServer
    return cls(
        (host, port),
        runtime,
        token,
        hosts=hosts,
        public_reads=public_reads,
        read_timeout=read_timeout,
    )


def serve(
    runtime: Runtime,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    *,
    hosts: Sequence[str] = (),
    public_reads: bool = False,
    read_timeout: float = READ_TIMEOUT_S,
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve until SIGTERM or SIGINT; once listening, ``announce(url)`` (default: print
    ``serving on URL``). The other options are :func:`make_server`'s."""
    server = make_server(
        runtime,
        host,
        port,
        token,
        hosts=hosts,
        public_reads=public_reads,
        read_timeout=read_timeout,
    )
    assert isinstance(server, WaystoneServer)
    stopping = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        del frame
        if not stopping.is_set():
            stopping.set()
            logger.info("received %s: stopping", signal.Signals(signum).name)
            # shutdown() waits for serve_forever() to return: never call it on this thread.
            threading.Thread(target=server.shutdown, name="waystone-serve-stop").start()

    previous: dict[signal.Signals, Any] = {}
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                previous[sig] = signal.signal(sig, stop)
            except ValueError:  # not the main thread: the caller stops the server
                break
        if server.token is None:
            logger.warning(
                "%s is not set: the server is read-only, and anyone who reaches it reads runs",
                TOKEN_ENV,
            )
        elif server.public_reads:
            logger.warning("public reads: anyone who reaches the server reads runs")
        (announce or _print_url)(server.url)
        server.serve_forever()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.server_close()


def _print_url(url: str) -> None:
    sys.stdout.write(f"serving on {url}\n")
    sys.stdout.flush()


# -- routing -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    params: dict[str, str]
    query: dict[str, list[str]]
    headers: Message
    body: bytes


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    content_type: str
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    kind: Kind
    action: Callable[[Handler, Request], Response]
    anonymous: bool  # a GET anyone may read (the login page); other reads need a reader


SEGMENT = r"(?P<{}>[^/]+)"


def _pattern(template: str) -> re.Pattern[str]:
    regex = re.sub(r"\{(\w+)\}", lambda m: SEGMENT.format(m.group(1)), template)
    return re.compile(f"^{regex}$")


ROUTES: list[Route] = []


def route(method: str, template: str, kind: Kind, *, anonymous: bool = False) -> Callable[..., Any]:
    def register(
        fn: Callable[[Handler, Request], Response],
    ) -> Callable[[Handler, Request], Response]:
        ROUTES.append(Route(method, _pattern(template), kind, fn, anonymous))
        return fn

    return register


def json_response(data: Any, status: int = 200) -> Response:
    body = json.dumps(data, default=str, sort_keys=True).encode()
    return Response(status, body, "application/json")


def html_response(
    text: str, status: int = 200, headers: tuple[tuple[str, str], ...] = ()
) -> Response:
    return Response(status, text.encode(), "text/html; charset=utf-8", headers)


def redirect(location: str, headers: tuple[tuple[str, str], ...] = ()) -> Response:
    return Response(303, b"", "text/plain", (("Location", location), *headers))


class _RequestDeadline(io.RawIOBase):
    """A connection's reads, each given what is left of its request's time: a client that
    sends a request a byte at a time is cut off as surely as one that stops."""

    def __init__(self, sock: socket.socket, seconds: float) -> None:
        super().__init__()
        self.sock, self.seconds = sock, seconds
        self.restart()

    def restart(self) -> None:
        self.deadline = time.monotonic() + self.seconds

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"the request was not received within {self.seconds:g} s")
        self.sock.settimeout(left)
        return self.sock.recv_into(buffer)


class Handler(BaseHTTPRequestHandler):
    server_version = "waystone"
    sys_version = ""

    def setup(self) -> None:
        super().setup()
        self.rfile.close()
        self.deadline = _RequestDeadline(self.connection, self.app.read_timeout)
        self.rfile = io.BufferedReader(self.deadline)

    def handle_one_request(self) -> None:
        # An idle keep-alive connection, and each request on it, gets the read timeout.
        self.deadline.restart()
        super().handle_one_request()

    @property
    def app(self) -> WaystoneServer:
        assert isinstance(self.server, WaystoneServer)
        return self.server

    @property
    def rt(self) -> Runtime:
        return self.app.runtime

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s %s", self.address_string(), format % args)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    # -- dispatch ------------------------------------------------------------------------

    def _dispatch(self, method: str) -> None:
        parts = urlsplit(self.path)
        path = parts.path or "/"
        kind: Kind = "api" if path.startswith(("/api/", "/signals/")) else "html"
        try:
            host = self.headers.get("Host")
            if not host_allowed(host, self.app.allowed_hosts):
                self.close_connection = True
                raise HttpError(
                    400,
                    f"this server does not answer for the host {host!r}: "
                    "start it with --allowed-hosts to add a name",
                )
            found, allowed = None, []
            for r in ROUTES:
                m = r.pattern.match(path)
                if m is None:
                    continue
                if r.method == method:
                    found = (r, m)
                    break
                allowed.append(r.method)
            if found is None:
                if allowed:
                    raise HttpError(
                        405, f"{method} is not allowed here", {"Allow": ", ".join(allowed)}
                    )
                raise HttpError(404, f"no such page or endpoint: {path}")
            r, m = found
            kind = r.kind
            if method == "GET" and not r.anonymous:
                self.require_reader()
            request = Request(
                method=method,
                path=path,
                params={k: unquote(v) for k, v in m.groupdict().items()},
                query=parse_qs(parts.query, keep_blank_values=True),
                headers=self.headers,
                body=self._read_body() if method in ("POST", "PUT", "PATCH") else b"",
            )
            response = r.action(self, request)
        except TimeoutError as exc:
            self.close_connection = True
            response = self._error(kind, 408, str(exc))
        except HttpError as exc:
            response = self._error(kind, exc.status, exc.message, tuple(exc.headers.items()))
        except WaystoneError as exc:
            status = http_status(exc)
            if status >= 500:
                logger.error("%s %s: %s", method, path, exc)
            response = self._error(kind, status, str(exc))
        except Exception as exc:
            meaning = _meaning(exc)
            if meaning is None:
                logger.exception("%s %s failed", method, path)
                response = self._error(kind, 500, f"internal error: {type(exc).__name__}")
            else:
                response = self._error(kind, http_status(meaning), str(meaning))
        self._send(response)

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True
            raise HttpError(411, "send a Content-Length (chunked bodies are not accepted)")
        length_text = self.headers.get("Content-Length", "0").strip() or "0"
        if not (length_text.isascii() and length_text.isdigit()):
            self.close_connection = True
            raise HttpError(400, "Content-Length is not a number")
        length, limit = int(length_text), self.app.max_body
        if length > limit:  # refused unread: the connection closes instead
            self.close_connection = True
            raise HttpError(
                413,
                f"the body is {length} bytes, over this server's limit of {limit} bytes: send "
                f"a smaller one (the limit is set by {MAX_BODY_ENV})",
            )
        return self.rfile.read(length) if length else b""

    def _error(
        self, kind: Kind, status: int, message: str, headers: tuple[tuple[str, str], ...] = ()
    ) -> Response:
        if kind == "api":
            body = json.dumps({"error": message}).encode()
            return Response(status, body, "application/json", headers)
        return html_response(error_page(status, message), status, headers)

    def _send(self, response: Response) -> None:
        try:
            self.connection.settimeout(self.app.read_timeout)  # reads left it at their rest
            self.send_response(response.status)
            self.send_header("Content-Type", response.content_type)
            self.send_header("Content-Length", str(len(response.body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            # same-origin, not no-referrer: with no-referrer a browser sends `Origin: null`
            # on the page's own form posts, which the origin check must refuse
            self.send_header("Referrer-Policy", "same-origin")
            if response.content_type.startswith("text/html"):
                self.send_header("Content-Security-Policy", CSP)
                self.send_header("X-Frame-Options", "DENY")
            for name, value in response.headers:
                self.send_header(name, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)
        except (BrokenPipeError, ConnectionResetError):
            logger.debug("client went away before the response was sent")

    # -- auth ----------------------------------------------------------------------------

    def bearer_valid(self) -> bool:
        token = self.app.token
        scheme, _, given = self.headers.get("Authorization", "").partition(" ")
        return (
            token is not None
            and scheme.lower() == "bearer"
            and hmac.compare_digest(given.strip().encode(), token.encode())
        )

    def require_bearer(self) -> None:
        if self.app.token is None:
            raise HttpError(401, NO_TOKEN)
        if not self.bearer_valid():
            raise HttpError(
                401,
                "missing or wrong token: send Authorization: Bearer <WAYSTONE_API_TOKEN>",
                {"WWW-Authenticate": 'Bearer realm="waystone"'},
            )

    def session(self) -> str | None:
        """The id of the open session the request's cookie carries, if any."""
        token = self.app.token
        if token is None:
            return None
        session_id = session_of(token, _cookies(self.headers.get("Cookie", "")).get(SESSION_COOKIE))
        if session_id is None or not self.app.sessions.active(session_id):
            return None
        return session_id

    def csrf(self, session_id: str | None) -> str | None:
        """The CSRF token the session's forms carry (None: not logged in)."""
        if session_id is None or self.app.token is None:
            return None
        return csrf_token(self.app.token, session_id)

    def authenticated(self) -> bool:
        """The request carries the token or an open session: it may see real values
        (public reads and a server without a token show tokens only)."""
        return self.bearer_valid() or self.session() is not None

    def require_reader(self) -> None:
        """Reading is open without a token (a read-only server) or with public reads;
        otherwise it needs the bearer token or a session."""
        if self.app.token is None or self.app.public_reads or self.bearer_valid():
            return
        if self.session() is None:
            raise HttpError(
                401,
                "reading needs the API token: log in, or send Authorization: Bearer "
                "<WAYSTONE_API_TOKEN>",
                {"WWW-Authenticate": 'Bearer realm="waystone"'},
            )

    def require_session(self, form: Mapping[str, str]) -> str:
        """A form post's session id, once the post is known to come from one of this
        server's pages of that session: its Origin, and the session's CSRF token."""
        token = self.app.token
        if token is None:
            raise HttpError(401, NO_TOKEN)
        session_id = self.session()
        if session_id is None:
            raise HttpError(401, "not logged in: log in with the API token first")
        self.require_same_origin()
        if not csrf_valid(token, session_id, form.get(CSRF_FIELD)):
            raise HttpError(
                403, "the form's CSRF token is missing or wrong: reload the page and send it again"
            )
        return session_id

    def require_same_origin(self) -> None:
        host = self.headers.get("Host", "")
        if not same_origin(self.headers.get("Origin"), self.headers.get("Referer"), host):
            raise HttpError(
                403,
                f"this form was not sent from a page of http://{host} (Origin "
                f"{self.headers.get('Origin')!r}): open the dashboard there and send it again",
            )


def _cookies(header: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in header.split(";"):
        name, sep, value = part.strip().partition("=")
        if sep and name and name not in found:
            found[name] = value.strip().strip('"')
    return found


def _meaning(exc: BaseException) -> WaystoneError | None:
    """The Waystone error behind a database exception, if any (as the CLI maps them)."""
    import psycopg

    for link in chain(exc):
        if isinstance(link, WaystoneError):
            return link
        if isinstance(link, psycopg.OperationalError):
            return DatabaseUnavailable(f"Postgres is unreachable: {link}")
        if isinstance(link, psycopg.DataError):
            return BadInput(f"the input cannot be stored: {link}")
    return None


# -- request bodies ----------------------------------------------------------------------


def json_object(body: bytes, what: str, *, empty_ok: bool = False) -> dict[str, Any]:
    if not body.strip() and empty_ok:
        return {}
    data = parse_json_input(body, what)
    if not isinstance(data, dict):
        raise BadInput(f"{what} must be a JSON object")
    return data


def text_field(data: Mapping[str, Any], field: str, *, required: bool) -> str | None:
    value = data.get(field)
    if value is None:
        if required:
            raise BadInput(f"{field!r} is required")
        return None
    if not isinstance(value, str):
        raise BadInput(f"{field!r} must be a string")
    value = value.strip()
    if required and not value:
        raise BadInput(f"{field!r} must not be empty")
    return value


def form_fields(body: bytes) -> dict[str, str]:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"the form is not UTF-8: {exc}") from exc
    return {k: v[-1] for k, v in parse_qs(text, keep_blank_values=True).items()}


# -- JSON API ----------------------------------------------------------------------------


def state_param(query: dict[str, list[str]]) -> str | None:
    from waystone._runs.states import STATES

    state = query.get("state", [None])[-1] or None
    if state is not None and state not in STATES:
        raise BadInput(f"state must be one of {', '.join(STATES)}")
    return state


def limit_param(query: dict[str, list[str]]) -> int:
    text = query.get("limit", ["100"])[-1]
    if not text.isdigit() or not 1 <= int(text) <= 1000:
        raise BadInput("limit must be a whole number from 1 to 1000")
    return int(text)
