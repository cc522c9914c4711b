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
a session cookie set by ``POST /login`` (HttpOnly, SameSite=Strict) that holds an expiring
HMAC keyed by the token, never the token itself. Without a configured token every change
is refused; reading still works. Anything refused changes nothing.

Errors come back as ``{"error": message}`` (HTML forms: a page with a back link), with the
HTTP status of the Waystone error: 400 bad input, 404 unknown thread, 409 transition not
allowed, 503 database unavailable, 500 otherwise.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import json
import logging
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.message import Message
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import Any, Literal
from urllib.parse import parse_qs, quote, unquote, urlsplit

from waystone.errors import BadInput, DatabaseUnavailable, WaystoneError
from waystone.runtime import RunStatus, Runtime

logger = logging.getLogger(__name__)

TOKEN_ENV = "WAYSTONE_API_TOKEN"
SESSION_COOKIE = "waystone_session"
SESSION_SECONDS = 12 * 3600
MAX_BODY = 1 << 20  # 1 MiB: approvals and webhook payloads are small
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


# -- the session cookie ------------------------------------------------------------------


def session_value(token: str, expires: int) -> str:
    """``<expires>.<hmac>``: an HMAC keyed by the token, so the cookie never holds it."""
    mac = hmac.new(token.encode(), f"waystone-session:{expires}".encode(), hashlib.sha256)
    return f"{expires}.{mac.hexdigest()}"


def session_valid(token: str, value: str, now: float | None = None) -> bool:
    expires_text, _, _mac = value.partition(".")
    if not expires_text.isdigit():
        return False
    expires = int(expires_text)
    if expires < (time.time() if now is None else now):
        return False
    return hmac.compare_digest(value.encode(), session_value(token, expires).encode())


# -- the server --------------------------------------------------------------------------


class WaystoneServer(ThreadingHTTPServer):
    """A threading HTTP server that carries the shared Runtime and the token."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], runtime: Runtime, token: str | None) -> None:
        self.runtime = runtime
        self.token = token or None
        super().__init__(address, Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        shown = host if isinstance(host, str) else host.decode()
        if ":" in shown:
            shown = f"[{shown}]"
        return f"http://{shown}:{port}"


class _Server6(WaystoneServer):
    address_family = socket.AF_INET6


def make_server(runtime: Runtime, host: str, port: int, token: str | None) -> ThreadingHTTPServer:
    """A server bound to ``host:port`` (port 0: a free one), not yet serving.

    Call ``serve_forever()`` (for instance in a thread), then ``shutdown()`` and
    ``server_close()``. The runtime is shared by the request threads.
    """
    cls = _Server6 if ":" in host else WaystoneServer
    return cls((host, port), runtime, token)


def serve(
    runtime: Runtime, host: str = "127.0.0.1", port: int = 8765, token: str | None = None
) -> None:
    """Serve until SIGTERM or SIGINT; print ``serving on URL`` once listening."""
    server = make_server(runtime, host, port, token)
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
            logger.warning("%s is not set: the server is read-only", TOKEN_ENV)
        sys.stdout.write(f"serving on {server.url}\n")
        sys.stdout.flush()
        server.serve_forever()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.server_close()


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


SEGMENT = r"(?P<{}>[^/]+)"


def _pattern(template: str) -> re.Pattern[str]:
    regex = re.sub(r"\{(\w+)\}", lambda m: SEGMENT.format(m.group(1)), template)
    return re.compile(f"^{regex}$")


ROUTES: list[Route] = []


def route(method: str, template: str, kind: Kind) -> Callable[..., Any]:
    def register(
        fn: Callable[[Handler, Request], Response],
    ) -> Callable[[Handler, Request], Response]:
        ROUTES.append(Route(method, _pattern(template), kind, fn))
        return fn

    return register


def _json_response(data: Any, status: int = 200) -> Response:
    body = json.dumps(data, default=str, sort_keys=True).encode()
    return Response(status, body, "application/json")


def _html_response(
    text: str, status: int = 200, headers: tuple[tuple[str, str], ...] = ()
) -> Response:
    return Response(status, text.encode(), "text/html; charset=utf-8", headers)


def _redirect(location: str, headers: tuple[tuple[str, str], ...] = ()) -> Response:
    return Response(303, b"", "text/plain", (("Location", location), *headers))


class Handler(BaseHTTPRequestHandler):
    server_version = "waystone"
    sys_version = ""

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
            request = Request(
                method=method,
                path=path,
                params={k: unquote(v) for k, v in m.groupdict().items()},
                query=parse_qs(parts.query, keep_blank_values=True),
                headers=self.headers,
                body=self._read_body() if method in ("POST", "PUT", "PATCH") else b"",
            )
            response = r.action(self, request)
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
        if not length_text.isdigit():
            self.close_connection = True
            raise HttpError(400, "Content-Length is not a number")
        length = int(length_text)
        if length > MAX_BODY:
            self.close_connection = True
            raise HttpError(413, f"the body is larger than {MAX_BODY} bytes")
        return self.rfile.read(length) if length else b""

    def _error(
        self, kind: Kind, status: int, message: str, headers: tuple[tuple[str, str], ...] = ()
    ) -> Response:
        if kind == "api":
            body = json.dumps({"error": message}).encode()
            return Response(status, body, "application/json", headers)
        return _html_response(error_page(status, message), status, headers)

    def _send(self, response: Response) -> None:
        try:
            self.send_response(response.status)
            self.send_header("Content-Type", response.content_type)
            self.send_header("Content-Length", str(len(response.body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Referrer-Policy", "no-referrer")
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

    def require_bearer(self) -> None:
        token = self.app.token
        if token is None:
            raise HttpError(401, NO_TOKEN)
        scheme, _, given = self.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode(), token.encode()
        ):
            raise HttpError(
                401,
                "missing or wrong token: send Authorization: Bearer <WAYSTONE_API_TOKEN>",
                {"WWW-Authenticate": 'Bearer realm="waystone"'},
            )

    def logged_in(self) -> bool:
        token = self.app.token
        if token is None:
            return False
        value = _cookies(self.headers.get("Cookie", "")).get(SESSION_COOKIE)
        return value is not None and session_valid(token, value)

    def require_session(self) -> None:
        if self.app.token is None:
            raise HttpError(401, NO_TOKEN)
        if not self.logged_in():
            raise HttpError(401, "not logged in: log in with the API token first")


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

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, WaystoneError):
            return seen
        if isinstance(seen, psycopg.OperationalError):
            return DatabaseUnavailable(f"Postgres is unreachable: {seen}")
        if isinstance(seen, psycopg.DataError):
            return BadInput(f"the input cannot be stored: {seen}")
        seen = seen.__cause__ or seen.__context__
    return None


# -- request bodies ----------------------------------------------------------------------


def _json_object(body: bytes, what: str, *, empty_ok: bool = False) -> dict[str, Any]:
    if not body.strip() and empty_ok:
        return {}
    try:
        data = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BadInput(f"{what} is not UTF-8: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise BadInput(f"{what} is not valid JSON: {exc.msg} at position {exc.pos}") from exc
    if not isinstance(data, dict):
        raise BadInput(f"{what} must be a JSON object")
    return data


def _text(data: Mapping[str, Any], field: str, *, required: bool) -> str | None:
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


def _form(body: bytes) -> dict[str, str]:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"the form is not UTF-8: {exc}") from exc
    return {k: v[-1] for k, v in parse_qs(text, keep_blank_values=True).items()}


# -- JSON API ----------------------------------------------------------------------------


def _state_param(query: dict[str, list[str]]) -> str | None:
    from waystone.runs.states import STATES

    state = query.get("state", [None])[-1] or None
    if state is not None and state not in STATES:
        raise BadInput(f"state must be one of {', '.join(STATES)}")
    return state


def _limit_param(query: dict[str, list[str]]) -> int:
    text = query.get("limit", ["100"])[-1]
    if not text.isdigit() or not 1 <= int(text) <= 1000:
        raise BadInput("limit must be a whole number from 1 to 1000")
    return int(text)


@route("GET", "/api/runs", "api")
def api_list(h: Handler, req: Request) -> Response:
    runs = h.rt.list(_state_param(req.query), _limit_param(req.query))
    return _json_response({"runs": [r.to_dict() for r in runs]})


@route("GET", "/api/runs/{thread_id}", "api")
def api_status(h: Handler, req: Request) -> Response:
    return _json_response(h.rt.status(req.params["thread_id"]).to_dict())


@route("GET", "/api/runs/{thread_id}/history", "api")
def api_history(h: Handler, req: Request) -> Response:
    return _json_response(h.rt.history(req.params["thread_id"]))


@route("GET", "/api/dashboard", "api")
def api_dashboard(h: Handler, req: Request) -> Response:
    del req
    try:
        from waystone import dashboard
    except ImportError as exc:
        raise HttpError(501, f"the dashboard is not available: {exc}") from exc
    return _json_response(dashboard.snapshot(h.rt.db))


@route("POST", "/api/runs/{thread_id}/approve", "api")
def api_approve(h: Handler, req: Request) -> Response:
    h.require_bearer()
    data = _json_object(req.body, "the body")
    by = _text(data, "by", required=True)
    comment = _text(data, "comment", required=False)
    args = data.get("args")
    if args is not None and (not isinstance(args, dict) or not args):
        raise BadInput("'args' must be a non-empty JSON object")
    assert by is not None
    status = h.rt.approve(req.params["thread_id"], by=by, comment=comment, args=args)
    logger.info("approved %s by %s (api)", status.thread_id, by)
    return _json_response(status.to_dict())


@route("POST", "/api/runs/{thread_id}/reject", "api")
def api_reject(h: Handler, req: Request) -> Response:
    h.require_bearer()
    data = _json_object(req.body, "the body")
    by = _text(data, "by", required=True)
    reason = _text(data, "reason", required=True)
    assert by is not None and reason is not None
    status = h.rt.reject(req.params["thread_id"], by=by, reason=reason)
    logger.info("rejected %s by %s (api)", status.thread_id, by)
    return _json_response(status.to_dict())


@route("POST", "/signals/{thread_id}/{name}", "api")
def webhook(h: Handler, req: Request) -> Response:
    h.require_bearer()
    payload = _json_object(req.body, "the payload", empty_ok=True)
    key = req.headers.get("Idempotency-Key") or None
    status = h.rt.signal(
        req.params["thread_id"], req.params["name"], payload, key=key, actor="webhook"
    )
    logger.info("signal %r for %s (webhook)", req.params["name"], status.thread_id)
    return _json_response(status.to_dict())


# -- HTML --------------------------------------------------------------------------------

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d232a;background:#f6f7f9}
header{background:#1d232a;color:#fff;padding:10px 24px;display:flex;gap:16px;align-items:center}
header a{color:#fff;text-decoration:none}header .grow{flex:1}
main{padding:16px 24px;max-width:1200px}
h1{font-size:18px;margin:0}h2{font-size:16px;margin:24px 0 8px}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{border-bottom:1px solid #e3e6ea;padding:6px 8px;text-align:left;vertical-align:top}
th{background:#eef0f3;font-weight:600}
code{font:12px ui-monospace,monospace;word-break:break-all}
.counts{display:flex;gap:8px;flex-wrap:wrap}
.count{background:#fff;border:1px solid #e3e6ea;border-radius:6px;padding:8px 14px}
.count b{display:block;font-size:20px}
.state{font-weight:600}.s-done{color:#1a7f37}.s-failed{color:#cf222e}
.s-waiting{color:#9a6700}.s-needs-human{color:#8250df}.s-running,.s-queued{color:#0969da}
.approval{background:#fff;border:1px solid #e3e6ea;border-radius:6px;padding:12px;margin:8px 0}
.approval form{display:inline-flex;gap:6px;margin:8px 12px 0 0;align-items:center}
input[type=text],input[type=password]{padding:4px 6px;border:1px solid #c9ced6;border-radius:4px}
button{padding:4px 12px;border-radius:4px;border:1px solid #8c959f;cursor:pointer;background:#fff}
button.approve{background:#1a7f37;color:#fff;border-color:#1a7f37}
button.reject{background:#cf222e;color:#fff;border-color:#cf222e}
.note{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:8px 12px}
.error{background:#ffebe9;border:1px solid #cf222e;border-radius:6px;padding:8px 12px}
"""


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _path(thread_id: str) -> str:
    return quote(thread_id, safe="")


def page(title: str, body: str, *, logged_in: bool = False) -> str:
    session = (
        '<form method="post" action="/logout"><button type="submit">Log out</button></form>'
        if logged_in
        else '<a href="/login">Log in</a>'
    )
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)} - waystone</title><style>{STYLE}</style></head>"
        f'<body><header><h1><a href="/">waystone</a></h1><span class="grow"></span>'
        f"{session}</header><main>{body}</main></body></html>\n"
    )


def error_page(status: int, message: str) -> str:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"
    login = ' or <a href="/login">log in</a>' if status == 401 else ""
    body = (
        f"<h2>{status} {_e(phrase)}</h2>"
        f'<p class="error" id="error">{_e(message)}</p>'
        f'<p><a href="/">Back to the dashboard</a>{login}</p>'
    )
    return page(f"{status} {phrase}", body)


def _state(state: str) -> str:
    return f'<span class="state s-{_e(state)}">{_e(state)}</span>'


def approval_forms(status: RunStatus) -> str:
    pending = status.pending_approval or {}
    tid = _path(status.thread_id)
    if status.decision_recorded:
        forms = '<p class="note">Decision recorded; a worker (or `waystone run`) resumes it.</p>'
    else:
        forms = (
            f'<form method="post" action="/runs/{tid}/approve" class="approve-form">'
            '<label>by <input type="text" name="by" value="web" required></label>'
            '<input type="text" name="comment" placeholder="comment (optional)">'
            '<button type="submit" class="approve">Approve</button></form>'
            f'<form method="post" action="/runs/{tid}/reject" class="reject-form">'
            '<label>by <input type="text" name="by" value="web" required></label>'
            '<input type="text" name="reason" placeholder="reason (required)" required>'
            '<button type="submit" class="reject">Reject</button></form>'
        )
    return (
        f'<div class="approval" id="approval-{_e(status.thread_id)}" '
        f'data-thread-id="{_e(status.thread_id)}">'
        f'<div><a href="/runs/{tid}"><code>{_e(status.thread_id)}</code></a> '
        f"({_e(status.agent)}) wants <b>{_e(pending.get('tool'))}</b> "
        f"<code>{_e(json.dumps(pending.get('args'), sort_keys=True))}</code></div>"
        f"<div>why: {_e(pending.get('reason'))}</div>"
        f"<div>key: <code>{_e(pending.get('idempotency_key'))}</code></div>"
        f"{forms}</div>"
    )


def _counts(rt: Runtime) -> dict[str, int]:
    from waystone.runs.states import STATES

    with rt.db.connection() as conn:
        rows = conn.execute(
            "SELECT state, count(*) AS n FROM waystone.runs GROUP BY state"
        ).fetchall()
    found = {str(row["state"]): int(row["n"]) for row in rows}
    return {state: found.get(state, 0) for state in STATES} | found


@route("GET", "/", "html")
def index(h: Handler, req: Request) -> Response:
    del req
    rt = h.rt
    counts = _counts(rt)
    runs = rt.list(None, PAGE_LIMIT)
    waiting = [rt.status(r.thread_id) for r in rt.list("waiting", PAGE_LIMIT)]
    approvals = [s for s in waiting if s.pending_approval is not None]
    parts: list[str] = []
    if h.app.token is None:
        parts.append(f'<p class="note">Read-only: {_e(NO_TOKEN)}</p>')
    elif not h.logged_in():
        parts.append('<p class="note"><a href="/login">Log in</a> to approve or reject.</p>')
    parts.append('<h2>Runs by state</h2><div class="counts" id="counts">')
    parts.extend(
        f'<div class="count" data-state="{_e(s)}"><b>{n}</b>{_state(s)}</div>'
        for s, n in counts.items()
    )
    parts.append("</div>")
    parts.append(f'<h2>Pending approvals ({len(approvals)})</h2><div id="approvals">')
    parts.extend(approval_forms(s) for s in approvals)
    if not approvals:
        parts.append("<p>No run waits for an approval.</p>")
    parts.append("</div>")
    parts.append(
        f'<h2>Runs (newest {len(runs)})</h2><table id="runs"><thead><tr><th>thread id</th>'
        "<th>agent</th><th>state</th><th>attempts</th><th>updated</th><th>reason</th>"
        "</tr></thead><tbody>"
    )
    parts.extend(
        f'<tr id="run-{_e(r.thread_id)}" data-state="{_e(r.state)}">'
        f'<td><a href="/runs/{_path(r.thread_id)}"><code>{_e(r.thread_id)}</code></a></td>'
        f'<td>{_e(r.agent)}</td><td class="run-state">{_state(r.state)}</td>'
        f"<td>{r.attempts}</td><td>{_e(r.updated_at[:19])}</td><td>{_e(r.reason)}</td></tr>"
        for r in runs
    )
    parts.append("</tbody></table>")
    return _html_response(page("runs", "".join(parts), logged_in=h.logged_in()))


@route("GET", "/runs/{thread_id}", "html")
def run_page(h: Handler, req: Request) -> Response:
    thread_id = req.params["thread_id"]
    status = h.rt.status(thread_id)
    hist = h.rt.history(thread_id)
    parts = [
        f"<h2><code>{_e(thread_id)}</code> {_state(status.state)} ({_e(status.agent)})</h2>",
        f"<p>reason: {_e(status.reason)}</p>",
    ]
    if status.step:
        parts.append(f"<p>next step: <code>{_e(status.step)}</code></p>")
    if status.waiting_for:
        parts.append(f"<p>waiting for: <code>{_e(status.waiting_for)}</code></p>")
    if status.pending_approval is not None:
        parts.append(approval_forms(status))
    parts.append(
        '<h2>Events</h2><table id="events"><thead><tr><th>#</th><th>at</th><th>kind</th>'
        "<th>what</th><th>actor</th></tr></thead><tbody>"
    )
    for ev in hist["events"]:
        what = _e(ev.get("reason"))
        if ev.get("kind") == "transition":
            what = f"{_e(ev.get('from_state') or '∅')} → {_e(ev.get('to_state'))}: {what}"
        parts.append(
            f"<tr><td>{_e(ev.get('id'))}</td><td>{_e(str(ev.get('created_at'))[:23])}</td>"
            f"<td>{_e(ev.get('kind'))}</td><td>{what}</td><td>{_e(ev.get('actor'))}</td></tr>"
        )
    parts.append(
        '</tbody></table><h2>Checkpoints</h2><table id="checkpoints"><thead><tr>'
        "<th>step</th><th>checkpoint</th><th>after</th><th>next</th></tr></thead><tbody>"
    )
    for cp in hist["checkpoints"]:
        parts.append(
            f"<tr><td>{_e(cp['step'])}</td><td><code>{_e(cp['checkpoint_id'])}</code></td>"
            f"<td>{_e(', '.join(cp['after']))}</td><td>{_e(', '.join(cp['next']))}</td></tr>"
        )
    parts.append(
        '</tbody></table><h2>Effects</h2><table id="effects"><thead><tr><th>key</th>'
        "<th>tool</th><th>status</th><th>attempts</th><th>receipt</th></tr></thead><tbody>"
    )
    for ef in hist["effects"]:
        receipt = (ef.get("receipt") or {}).get("id", "")
        parts.append(
            f"<tr><td><code>{_e(ef['key'])}</code></td><td>{_e(ef['tool'])}</td>"
            f"<td>{_e(ef['status'])}</td><td>{_e(ef['attempts'])}</td>"
            f"<td><code>{_e(receipt)}</code></td></tr>"
        )
    parts.append('</tbody></table><p><a href="/">Back to the dashboard</a></p>')
    return _html_response(page(thread_id, "".join(parts), logged_in=h.logged_in()))


def login_page(message: str | None = None) -> str:
    note = f'<p class="error" id="error">{_e(message)}</p>' if message else ""
    body = (
        f"<h2>Log in</h2>{note}"
        '<form method="post" action="/login" id="login">'
        '<label>API token <input type="password" name="token" autocomplete="current-password" '
        "required></label> "
        '<button type="submit">Log in</button></form>'
        f"<p>The token is the server's <code>{TOKEN_ENV}</code>.</p>"
    )
    return page("log in", body)


@route("GET", "/login", "html")
def login_form(h: Handler, req: Request) -> Response:
    del req
    if h.app.token is None:
        return _html_response(login_page(NO_TOKEN))
    return _html_response(login_page())


@route("POST", "/login", "html")
def login(h: Handler, req: Request) -> Response:
    token = h.app.token
    if token is None:
        return _html_response(login_page(NO_TOKEN), 401)
    given = _form(req.body).get("token", "")
    if not hmac.compare_digest(given.encode(), token.encode()):
        logger.warning("failed login from %s", h.address_string())
        return _html_response(login_page("wrong token"), 401)
    expires = int(time.time()) + SESSION_SECONDS
    cookie = (
        f"{SESSION_COOKIE}={session_value(token, expires)}; Path=/; HttpOnly; "
        f"SameSite=Strict; Max-Age={SESSION_SECONDS}"
    )
    return _redirect("/", (("Set-Cookie", cookie),))


@route("POST", "/logout", "html")
def logout(h: Handler, req: Request) -> Response:
    del h, req
    cookie = f"{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"
    return _redirect("/", (("Set-Cookie", cookie),))


@route("POST", "/runs/{thread_id}/approve", "html")
def form_approve(h: Handler, req: Request) -> Response:
    h.require_session()
    form = _form(req.body)
    by = _text(form, "by", required=True)
    assert by is not None
    comment = _text(form, "comment", required=False) or None
    status = h.rt.approve(req.params["thread_id"], by=by, comment=comment)
    logger.info("approved %s by %s (form)", status.thread_id, by)
    return _redirect("/")


@route("POST", "/runs/{thread_id}/reject", "html")
def form_reject(h: Handler, req: Request) -> Response:
    h.require_session()
    form = _form(req.body)
    by = _text(form, "by", required=True)
    reason = _text(form, "reason", required=True)
    assert by is not None and reason is not None
    status = h.rt.reject(req.params["thread_id"], by=by, reason=reason)
    logger.info("rejected %s by %s (form)", status.thread_id, by)
    return _redirect("/")
