"""A small, self-contained "payments provider" HTTP server for examples and tests.

It stands in for an external system with side effects (refunds, notifications) so
that durable-execution examples can show what happens when a call fails, times out
or is retried.  Stdlib only: ``http.server.ThreadingHTTPServer`` + ``sqlite3`` + ``json``,
its statements named in ``payments.sql`` beside it (read by ``waystone.sql``, stdlib too).

Run it::

    python -m waystone.examples.payments --port 0 [--host 127.0.0.1] [--db PATH] [--verbose]

Once listening it prints exactly one line to stdout, ``listening on http://HOST:PORT``
(``--port 0`` picks a free port; parse the port from that line).  ``--db`` defaults to
``$WAYSTONE_HOME/payments.sqlite3`` with ``WAYSTONE_HOME`` defaulting to ``./.waystone``.
SIGTERM and SIGINT stop the server cleanly (exit status 0).

API (JSON bodies, ``Content-Type: application/json``):

* ``POST /refunds`` ``{"order_id", "amount": "120.00", "currency": "EUR"}`` with a required
  ``Idempotency-Key`` header (400 if missing).  201 with the new refund; the same key with
  the same body replays the stored refund with 200; the same key with another body is 409.
* ``GET /refunds/{id}``, ``GET /refunds?idempotency_key=K``, ``GET /refunds?order_id=O``.
* ``POST /notifications`` ``{"to", "body", "client_ref"}`` -> 201.  No deduplication:
  every POST sends a new message.  ``GET /notifications/{id}``,
  ``GET /notifications?client_ref=R``.
* ``GET /_ledger`` -> every effect ever applied, in creation order.  ``GET /_health``.
* ``POST /_faults`` ``{"endpoint", "mode", "times": 1, "delay_s": 0}``, ``GET /_faults``,
  ``DELETE /_faults`` (200 with ``{"cleared": n}``).

Faults are stored in the sqlite database, so they survive a restart just like the effects.
They apply only to POST on their endpoint, after the request has passed validation; the
oldest active fault for the endpoint is consumed first, one per request, and is deleted
once its ``times`` reaches zero.  Modes: ``transient`` (503, nothing applied),
``permanent`` (422, nothing applied), ``timeout_after_apply`` (the effect is committed,
then the response is held for ``delay_s`` seconds, 30 if 0) and ``slow`` (sleep
``delay_s`` seconds, then apply and answer normally; past the provider's request
deadline of 5 s nothing is applied and the answer is a 504: a request is applied within
the deadline of its arrival, or never).

A POST may carry its sender's deadline, ``Request-Deadline: <seconds since the epoch>``:
one that is applied only before it, by this server's clock; past it nothing is applied,
the answer is a 504 and the refusal is kept (``refused`` in ``GET /_ledger``). However
long the network held the request, it lands before its deadline or never.

Every request uses its own sqlite connection (WAL mode); write transactions are serialised
by a process-wide lock plus ``BEGIN IMMEDIATE``, so concurrent requests are safe.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import secrets
import signal
import sqlite3
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from urllib.parse import parse_qs, urlsplit

from waystone import sql

__all__ = ["PaymentsServer", "main", "serve"]

JsonObject = dict[str, object]
Reply = tuple[int, object]
Params = tuple[object, ...] | dict[str, object]

MAX_BODY_BYTES = 1 << 20
DEFAULT_TIMEOUT_AFTER_APPLY_S = 30.0
REQUEST_DEADLINE_S = 5.0  # a POST is applied within this long of its arrival, or never
MAX_FAULT_DELAY_S = 3600.0
FAULT_ENDPOINTS = ("refunds", "notifications")
FAULT_MODES = ("transient", "permanent", "timeout_after_apply", "slow")
REFUND_FILTERS = ("idempotency_key", "order_id")
NOTIFICATION_FILTERS = ("client_ref",)
# The list statement each filter leads (the first given leads, the others narrow it), so a
# lookup by key, order or reference keeps its index.
_LED_BY = {
    "idempotency_key": "refunds_by_key",
    "order_id": "refunds_by_order",
    "client_ref": "notifications_by_client_ref",
}

_AMOUNT_RE = re.compile(r"(?:0|[1-9][0-9]*)\.[0-9]{2}")
_CURRENCY_RE = re.compile(r"[A-Z]{3}")

_STATEMENTS = "payments.sql"  # beside this module, run by name


class HttpError(Exception):
    """An error answered as ``{"error": message}`` with the given status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Ctx:
    """Everything a route needs: the database, the write lock and the parsed request."""

    conn: sqlite3.Connection
    lock: threading.Lock
    headers: dict[str, str]
    query: dict[str, list[str]]
    raw_body: bytes
    item_id: str = ""

    def json_body(self) -> JsonObject:
        """Parse the body as a JSON object (400 if not JSON, 422 if not an object)."""
        try:
            value: object = json.loads(self.raw_body)
        except ValueError as exc:
            raise HttpError(400, f"invalid JSON body: {exc}") from None
        if not isinstance(value, dict):
            raise HttpError(422, "body must be a JSON object")
        return {str(k): v for k, v in value.items()}

    def query_filters(self, allowed: tuple[str, ...]) -> dict[str, str]:
        """Return single-valued query parameters; unknown or repeated ones are 422."""
        filters: dict[str, str] = {}
        for name, values in self.query.items():
            if name not in allowed:
                raise HttpError(422, f"unknown query parameter {name!r}")
            if len(values) != 1:
                raise HttpError(422, f"query parameter {name!r} given more than once")
            filters[name] = values[0]
        return filters


Route = Callable[[Ctx], Reply]


# --------------------------------------------------------------------------- storage


def _sql(name: str) -> str:
    return sql.named("waystone.examples", _STATEMENTS)[name]


def _connect(db_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db_path, timeout=10.0, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute(_sql("busy_timeout"))
    return conn


def init_db(db_path: Path) -> None:
    """Create the database file, its parent directory and the schema; enable WAL."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with closing(_connect(db_path)) as conn:
        conn.execute(_sql("wal"))
        conn.executescript(_sql("schema"))


@contextmanager
def _write_tx(conn: sqlite3.Connection, lock: threading.Lock) -> Iterator[None]:
    with lock:
        conn.execute(_sql("begin_write"))
        try:
            yield
        except BaseException:
            conn.execute(_sql("rollback"))
            raise
        conn.execute(_sql("commit"))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def _refund_row(row: sqlite3.Row) -> JsonObject:
    return {
        "id": row["id"],
        "status": row["status"],
        "order_id": row["order_id"],
        "amount": row["amount"],
        "currency": row["currency"],
        "idempotency_key": row["idempotency_key"],
        "created_at": row["created_at"],
    }


def _notification_row(row: sqlite3.Row) -> JsonObject:
    return {
        "id": row["id"],
        "to": row["to_addr"],
        "body": row["body"],
        "client_ref": row["client_ref"],
        "status": row["status"],
        "created_at": row["created_at"],
    }


def _fault_row(row: sqlite3.Row) -> JsonObject:
    return {
        "id": row["id"],
        "endpoint": row["endpoint"],
        "mode": row["mode"],
        "times": row["remaining"],
        "delay_s": row["delay_s"],
    }


def _select(conn: sqlite3.Connection, name: str, params: Params = ()) -> list[sqlite3.Row]:
    return list(conn.execute(_sql(name), params).fetchall())


def list_statement(
    table: str, allowed: tuple[str, ...], filters: dict[str, str]
) -> tuple[str, dict[str, object]]:
    """The statement that lists ``table`` under ``filters``, and its parameters (``None``
    where a filter is not given: any value)."""
    params: dict[str, object] = {name: filters.get(name) for name in allowed}
    leading = next((name for name in allowed if name in filters), None)
    return (table if leading is None else _LED_BY[leading]), params


# --------------------------------------------------------------------------- validation


def _require_str(body: JsonObject, name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value.strip():
        raise HttpError(422, f"{name!r} must be a non-empty string")
    return value


def _validate_refund(body: JsonObject) -> tuple[str, str, str]:
    order_id = _require_str(body, "order_id")
    amount = body.get("amount")
    if not isinstance(amount, str) or not _AMOUNT_RE.fullmatch(amount):
        raise HttpError(422, "'amount' must be a decimal string with exactly 2 decimals")
    if Decimal(amount) <= 0:
        raise HttpError(422, "'amount' must be greater than 0")
    currency = body.get("currency")
    if not isinstance(currency, str) or not _CURRENCY_RE.fullmatch(currency):
        raise HttpError(422, "'currency' must be 3 uppercase letters")
    return order_id, amount, currency


def _validate_notification(body: JsonObject) -> tuple[str, str, str]:
    return _require_str(body, "to"), _require_str(body, "body"), _require_str(body, "client_ref")


def _validate_fault(body: JsonObject) -> tuple[str, str, int, float]:
    endpoint = body.get("endpoint")
    if endpoint not in FAULT_ENDPOINTS:
        raise HttpError(422, f"'endpoint' must be one of {list(FAULT_ENDPOINTS)}")
    mode = body.get("mode")
    if mode not in FAULT_MODES:
        raise HttpError(422, f"'mode' must be one of {list(FAULT_MODES)}")
    times = body.get("times", 1)
    if not isinstance(times, int) or isinstance(times, bool) or times < 1:
        raise HttpError(422, "'times' must be an integer >= 1")
    delay = body.get("delay_s", 0)
    if not isinstance(delay, int | float) or isinstance(delay, bool):
        raise HttpError(422, "'delay_s' must be a number")
    if not math.isfinite(delay) or not 0 <= delay <= MAX_FAULT_DELAY_S:
        raise HttpError(422, f"'delay_s' must be between 0 and {MAX_FAULT_DELAY_S:g}")
    return str(endpoint), str(mode), times, float(delay)


# --------------------------------------------------------------------------- faults


def _take_fault(ctx: Ctx, endpoint: str) -> tuple[str, float] | None:
    """Consume one use of the oldest active fault for ``endpoint``, if any."""
    with _write_tx(ctx.conn, ctx.lock):
        row = ctx.conn.execute(_sql("oldest_fault"), (endpoint,)).fetchone()
        if row is None:
            return None
        if row["remaining"] <= 1:
            ctx.conn.execute(_sql("delete_fault"), (row["seq"],))
        else:
            ctx.conn.execute(_sql("use_fault"), (row["seq"],))
    return str(row["mode"]), float(row["delay_s"])


def _before_deadline(ctx: Ctx, endpoint: str, ref: str, apply: Callable[[], Reply]) -> Reply:
    """Run ``apply`` only if the request's ``Request-Deadline`` (if any) has not passed."""
    given = ctx.headers.get("request-deadline")
    if given is None:
        return apply()
    try:
        deadline = float(given)
    except ValueError:
        raise HttpError(400, "Request-Deadline must be seconds since the epoch") from None
    now = time.time()
    if not math.isfinite(deadline) or now > deadline:
        with _write_tx(ctx.conn, ctx.lock):
            ctx.conn.execute(_sql("refuse"), (endpoint, ref, deadline, now))
        raise HttpError(504, "the request arrived past its deadline; nothing was applied")
    return apply()


def _with_faults(ctx: Ctx, endpoint: str, ref: str, apply: Callable[[], Reply]) -> Reply:
    """Run ``apply`` under whatever fault is armed for ``endpoint``, before the request's
    deadline (``ref``: its idempotency key or client reference, kept if it is refused)."""

    def checked() -> Reply:
        return _before_deadline(ctx, endpoint, ref, apply)

    fault = _take_fault(ctx, endpoint)
    if fault is None:
        return checked()
    mode, delay = fault
    if mode == "transient":
        raise HttpError(503, "injected transient failure")
    if mode == "permanent":
        raise HttpError(422, f"injected permanent failure: {endpoint} request rejected")
    if mode == "slow":
        if delay > REQUEST_DEADLINE_S:
            # The provider's own processing limit: a request is applied within this long
            # of its arrival, or never.
            time.sleep(REQUEST_DEADLINE_S)
            raise HttpError(504, "request deadline exceeded; nothing was applied")
        time.sleep(delay)
        return checked()
    reply = checked()  # timeout_after_apply: the effect is committed, the answer is late
    time.sleep(delay or DEFAULT_TIMEOUT_AFTER_APPLY_S)
    return reply


def _add_fault(ctx: Ctx) -> Reply:
    endpoint, mode, times, delay = _validate_fault(ctx.json_body())
    fault_id = _new_id("fa")
    with _write_tx(ctx.conn, ctx.lock):
        ctx.conn.execute(_sql("add_fault"), (fault_id, endpoint, mode, times, delay))
    fault = {"id": fault_id, "endpoint": endpoint, "mode": mode, "times": times, "delay_s": delay}
    return 201, fault


def _list_faults(ctx: Ctx) -> Reply:
    return 200, [_fault_row(row) for row in _select(ctx.conn, "faults")]


def _clear_faults(ctx: Ctx) -> Reply:
    with _write_tx(ctx.conn, ctx.lock):
        cleared = ctx.conn.execute(_sql("clear_faults")).rowcount
    return 200, {"cleared": cleared}


# --------------------------------------------------------------------------- refunds


def _create_refund(ctx: Ctx, key: str, order_id: str, amount: str, currency: str) -> Reply:
    with _write_tx(ctx.conn, ctx.lock):
        row = ctx.conn.execute(_sql("refund_by_key"), (key,)).fetchone()
        if row is not None:
            if (row["order_id"], row["amount"], row["currency"]) != (order_id, amount, currency):
                raise HttpError(409, "Idempotency-Key was already used with a different body")
            return 200, _refund_row(row)
        refund: JsonObject = {
            "id": _new_id("re"),
            "status": "succeeded",
            "order_id": order_id,
            "amount": amount,
            "currency": currency,
            "idempotency_key": key,
            "created_at": _now(),
        }
        ctx.conn.execute(_sql("add_refund"), refund)
    return 201, refund


def _post_refund(ctx: Ctx) -> Reply:
    key = ctx.headers.get("idempotency-key", "")
    if not key.strip():
        raise HttpError(400, "missing Idempotency-Key header")
    order_id, amount, currency = _validate_refund(ctx.json_body())
    return _with_faults(
        ctx, "refunds", key, lambda: _create_refund(ctx, key, order_id, amount, currency)
    )


def _list_refunds(ctx: Ctx) -> Reply:
    filters = ctx.query_filters(REFUND_FILTERS)
    rows = _select(ctx.conn, *list_statement("refunds", REFUND_FILTERS, filters))
    return 200, [_refund_row(row) for row in rows]


def _get_refund(ctx: Ctx) -> Reply:
    row = ctx.conn.execute(_sql("refund_by_id"), (ctx.item_id,)).fetchone()
    if row is None:
        raise HttpError(404, f"refund {ctx.item_id!r} not found")
    return 200, _refund_row(row)


# --------------------------------------------------------------------------- notifications


def _create_notification(ctx: Ctx, to: str, body: str, client_ref: str) -> Reply:
    notification: JsonObject = {
        "id": _new_id("no"),
        "to": to,
        "body": body,
        "client_ref": client_ref,
        "status": "sent",
        "created_at": _now(),
    }
    with _write_tx(ctx.conn, ctx.lock):
        ctx.conn.execute(_sql("add_notification"), notification)
    return 201, notification


def _post_notification(ctx: Ctx) -> Reply:
    to, body, client_ref = _validate_notification(ctx.json_body())
    return _with_faults(
        ctx, "notifications", client_ref, lambda: _create_notification(ctx, to, body, client_ref)
    )


def _list_notifications(ctx: Ctx) -> Reply:
    filters = ctx.query_filters(NOTIFICATION_FILTERS)
    rows = _select(ctx.conn, *list_statement("notifications", NOTIFICATION_FILTERS, filters))
    return 200, [_notification_row(row) for row in rows]


def _get_notification(ctx: Ctx) -> Reply:
    row = ctx.conn.execute(_sql("notification_by_id"), (ctx.item_id,)).fetchone()
    if row is None:
        raise HttpError(404, f"notification {ctx.item_id!r} not found")
    return 200, _notification_row(row)


# --------------------------------------------------------------------------- admin


def _health(ctx: Ctx) -> Reply:
    return 200, {"ok": True}


def _ledger(ctx: Ctx) -> Reply:
    refunds = _select(ctx.conn, "refunds")
    notes = _select(ctx.conn, "notifications")
    refused = _select(ctx.conn, "refused")
    return 200, {
        "refunds": [_refund_row(row) for row in refunds],
        "notifications": [_notification_row(row) for row in notes],
        "refused": [dict(row) for row in refused],
    }


_ROUTES: dict[str, dict[str, Route]] = {
    "/_health": {"GET": _health},
    "/_ledger": {"GET": _ledger},
    "/_faults": {"GET": _list_faults, "POST": _add_fault, "DELETE": _clear_faults},
    "/refunds": {"GET": _list_refunds, "POST": _post_refund},
    "/notifications": {"GET": _list_notifications, "POST": _post_notification},
}
_ITEM_ROUTES: dict[str, dict[str, Route]] = {
    "/refunds/": {"GET": _get_refund},
    "/notifications/": {"GET": _get_notification},
}


def _resolve(method: str, path: str) -> tuple[Route, str]:
    """Find the route for ``method`` and ``path``; return it with the path's item id."""
    methods, item_id = _ROUTES.get(path), ""
    if methods is None:
        for prefix, candidate in _ITEM_ROUTES.items():
            rest = path.removeprefix(prefix)
            if rest != path and rest and "/" not in rest:
                methods, item_id = candidate, rest
                break
    if methods is None:
        raise HttpError(404, f"no such path: {path}")
    route = methods.get(method)
    if route is None:
        raise HttpError(405, f"method {method} not allowed on {path}")
    return route, item_id


# --------------------------------------------------------------------------- HTTP


class PaymentsServer(ThreadingHTTPServer):
    """A threading HTTP server that knows its database and shares one write lock."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], db_path: Path, *, verbose: bool) -> None:
        self.db_path = db_path
        self.verbose = verbose
        self.write_lock = threading.Lock()
        super().__init__(address, PaymentsHandler)

    @property
    def port(self) -> int:
        """The TCP port actually bound (useful after binding port 0)."""
        return int(self.server_address[1])


class PaymentsHandler(BaseHTTPRequestHandler):
    """Reads the request, dispatches to a route and answers with JSON."""

    server_version = "WaystonePayments/1.0"

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    @property
    def _app(self) -> PaymentsServer:
        assert isinstance(self.server, PaymentsServer)
        return self.server

    def log_message(self, format: str, *args: object) -> None:
        if self._app.verbose:
            super().log_message(format, *args)

    def _read_body(self) -> bytes:
        """Always drain the body first so an early error reply is not reset by the kernel."""
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise HttpError(400, "invalid Content-Length header") from None
        if length < 0:
            raise HttpError(400, "invalid Content-Length header")
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            raise HttpError(413, "request body too large")
        return self.rfile.read(length) if length else b""

    def _dispatch(self, method: str) -> None:
        try:
            status, payload = self._handle(method)
        except HttpError as exc:
            status, payload = exc.status, {"error": exc.message}
        except Exception as exc:  # a bug: answer 500, keep serving
            traceback.print_exc(file=sys.stderr)
            status, payload = 500, {"error": f"internal error: {type(exc).__name__}"}
        self._send_json(status, payload)

    def _handle(self, method: str) -> Reply:
        raw_body = self._read_body()
        url = urlsplit(self.path)
        route, item_id = _resolve(method, url.path)
        app = self._app
        with closing(_connect(app.db_path)) as conn:
            ctx = Ctx(
                conn=conn,
                lock=app.write_lock,
                headers={k.lower(): v for k, v in self.headers.items()},
                query=parse_qs(url.query, keep_blank_values=True),
                raw_body=raw_body,
                item_id=item_id,
            )
            return route(ctx)

    def _send_json(self, status: int, payload: object) -> None:
        data = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. timeout_after_apply)


def serve(host: str, port: int, db_path: Path, *, verbose: bool = False) -> ThreadingHTTPServer:
    """Initialise the database and bind a server; call ``serve_forever()`` to run it."""
    init_db(db_path)
    return PaymentsServer((host, port), db_path, verbose=verbose)


# --------------------------------------------------------------------------- CLI


def default_db_path() -> Path:
    """``$WAYSTONE_HOME/payments.sqlite3``; ``WAYSTONE_HOME`` defaults to ``./.waystone``."""
    from waystone.config import Settings  # only here: the provider itself is stdlib only

    home: Path = Settings.read("home")
    return home / "payments.sqlite3"


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m waystone.examples.payments",
        description="Example payments provider (refunds, notifications, fault injection).",
    )
    parser.add_argument("--port", type=int, required=True, help="TCP port; 0 picks a free one")
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--db", type=Path, default=None, help="sqlite file (default see above)")
    parser.add_argument("--verbose", action="store_true", help="log every request to stderr")
    return parser.parse_args(argv)


def _install_stop_handlers(stop: threading.Event) -> None:
    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def main(argv: list[str] | None = None) -> int:
    """Run the server until SIGTERM/SIGINT; return the process exit status."""
    args = _parse_args(argv)
    db_path: Path = args.db if args.db is not None else default_db_path()
    try:
        server = serve(args.host, args.port, db_path, verbose=args.verbose)
    except (OSError, sqlite3.Error) as exc:
        print(f"payments: cannot start: {exc}", file=sys.stderr)
        return 1
    stop = threading.Event()
    _install_stop_handlers(stop)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="payments-http"
    )
    thread.start()
    print(f"listening on http://{args.host}:{server.server_address[1]}", flush=True)
    try:
        stop.wait()
    finally:
        server.shutdown()
        thread.join()
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
