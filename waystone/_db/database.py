"""One connection pool to one Postgres: the URL's, the embedded server's, or a caller's
(a pool, or one connection lent to one user at a time)."""

from __future__ import annotations

import json
import logging
import select
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn

import psycopg
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolTimeout

from waystone import sql
from waystone._db import embedded
from waystone.config import Settings
from waystone.errors import (
    BadInput,
    DatabaseUnavailable,
    LeaseLost,
    TransitionNotAllowed,
    WaystoneError,
    chain,
)

logger = logging.getLogger(__name__)

Conn = psycopg.Connection[DictRow]


def resolve_url(settings: Settings) -> str:
    """The URL to use: ``settings.database_url``, else the embedded server's."""
    if settings.database_url:
        return settings.database_url
    return embedded.ensure_server(settings.home)


def jsonify(params: dict[str, Any]) -> dict[str, Any]:
    return {k: Jsonb(v) if isinstance(v, dict) else v for k, v in params.items()}


def stored(value: Any) -> Any:
    """A parameter as Postgres gives it back (from a JSONB or text column): for a row
    worked out here instead of read back."""
    return json.loads(json.dumps(value))


class OneConnection:
    """A caller's one connection, in place of a pool: lent to one thread at a time (as
    LangGraph's saver does with one), again to the thread that holds it (a migration's
    lock and its statements share it). The caller closes it."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self._lock = threading.RLock()
        _KEPT.add(conn)

    @contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[Conn]:
        if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
            raise PoolTimeout(f"the connection stayed in use for {timeout:g}s")
        try:
            yield self.conn
        finally:
            self._lock.release()

    def close(self) -> None:
        """Nothing: the connection is the caller's."""


class DictRows:
    """A caller's pool or connection whose rows are tuples, which LangGraph's saver takes
    (it asks each cursor for dict rows): each use gets dict rows, and the caller's row
    factory back after it."""

    def __init__(self, inner: ConnectionPool[Conn] | OneConnection) -> None:
        self.inner = inner

    @contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[Conn]:
        with self.inner.connection(timeout=timeout) as conn:
            kept = conn.row_factory
            conn.row_factory = dict_row
            try:
                yield conn
            finally:
                conn.row_factory = kept

    def close(self) -> None:
        """Nothing: the pool or connection is the caller's."""


class Connecting:
    """A connection made for each use and closed after it, in place of a pool: for a saver
    that must leave no session of its own open between calls (its caller may drop the
    database as soon as it is done with it)."""

    def __init__(self, conninfo: str, prepare_threshold: int | None) -> None:
        self.conninfo = conninfo
        self._prepare_threshold = prepare_threshold

    @contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[Conn]:
        with psycopg.connect(
            self.conninfo,
            autocommit=True,
            row_factory=dict_row,
            prepare_threshold=self._prepare_threshold,
            connect_timeout=None if timeout is None else max(1, int(timeout)),
        ) as conn:
            yield conn

    def close(self) -> None:
        """Nothing: no connection outlives its use."""


Pool = ConnectionPool[Conn] | OneConnection | Connecting | DictRows


def connection_kwargs(settings: Settings) -> dict[str, Any]:
    """How every Waystone connection is made, sync or async: autocommit, dict rows (as
    LangGraph's saver reads them), the settings' ``prepare_threshold``."""
    return {
        "autocommit": True,
        "row_factory": dict_row,
        "prepare_threshold": settings.prepare_threshold,
    }


@dataclass
class Database:
    """A psycopg pool plus named-query helpers. Connections are autocommit, dict rows."""

    url: str
    pool: Pool

    @classmethod
    def on(cls, conn: Conn | ConnectionPool[Conn]) -> Database:
        """A caller's connection or pool, made as LangGraph's saver asks (autocommit, dict
        rows); it stays the caller's to close."""
        if isinstance(conn, ConnectionPool):
            kwargs = conn.kwargs  # or a function that makes them, for each connection
            if isinstance(kwargs, dict) and not kwargs.get("autocommit"):
                raise BadInput(
                    "the pool's connections must be autocommit: "
                    "ConnectionPool(url, kwargs={'autocommit': True})"
                )
            url = conn.conninfo if isinstance(conn.conninfo, str) else f"pool {conn.name}"
            rows = isinstance(kwargs, dict) and kwargs.get("row_factory") is dict_row
            return cls(url=url, pool=conn if rows else DictRows(conn))
        if not isinstance(conn, psycopg.Connection):
            raise BadInput(
                f"expected a psycopg Connection or ConnectionPool, not {type(conn).__name__}"
            )
        if not conn.autocommit:
            raise BadInput(
                "the connection must be autocommit: psycopg.connect(url, autocommit=True)"
            )
        one = OneConnection(conn)
        return cls(url=conn.info.dsn, pool=one if conn.row_factory is dict_row else DictRows(one))

    @classmethod
    def open(cls, settings: Settings) -> Database:
        url = resolve_url(settings)
        pool: ConnectionPool[Conn] = ConnectionPool(
            url,
            min_size=settings.pool_min_size,
            max_size=settings.pool_max_size,
            kwargs=connection_kwargs(settings),
            open=False,
            name="waystone",
            check=check_if_suspect,  # a restarted server leaves dead ones
            reset=_returned,
        )
        try:
            pool.open(wait=True, timeout=15)
        except PoolTimeout as exc:
            pool.close()
            raise DatabaseUnavailable(
                f"cannot connect to Postgres at {_redact(url)}: {exc}. Check that the server "
                "runs and WAYSTONE_DATABASE_URL is right (unset it to use the embedded one)."
            ) from exc
        return cls(url=url, pool=pool)

    def close(self) -> None:
        self.pool.close()

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Postgres errors as Waystone's: the database went away, or it said no."""
        try:
            yield
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailable(
                f"lost the connection to Postgres at {_redact(self.url)}: {exc}"
            ) from exc
        except PoolTimeout as exc:
            raise DatabaseUnavailable(
                f"no connection to Postgres at {_redact(self.url)} within 30s: {exc}"
            ) from exc
        except psycopg.DatabaseError as exc:
            reraise(exc)

    @contextmanager
    def connection(self, fence: int | None = None) -> Iterator[Conn]:
        """A pooled connection. With ``fence`` (a lease token) everything runs in one
        transaction whose writes Postgres rejects unless the token is the run's current one.
        """
        with self._errors(), self.pool.connection(timeout=30) as conn:
            if fence is None:
                yield conn
            else:
                with conn.transaction():
                    conn.execute(FENCE_SQL, {"lease_token": str(fence)})
                    yield conn

    @contextmanager
    def transaction(self, fence: int | None = None) -> Iterator[Conn]:
        if fence is not None:
            with self.connection(fence) as conn:
                yield conn
            return
        with self.connection() as conn, conn.transaction():
            yield conn

    def batch(
        self,
        statements: list[tuple[str, dict[str, Any]]],
        *,
        fence: int | None = None,
        wait_s: float = 30.0,
    ) -> list[list[dict[str, Any]]]:
        """Run named statements as one transaction in one round trip: pipelined up to one
        Sync, so Postgres runs them as one implicit transaction (with ``fence``, the lease
        token setting is local to it; the first error rolls back all of them). Returns
        each statement's rows. ``wait_s`` bounds the wait for a pooled connection."""
        with self._errors(), self.pool.connection(timeout=wait_s) as conn:
            if fence is None and len(statements) == 1:
                name, params = statements[0]
                cur = conn.execute(sql.query(name), jsonify(params))
                return [cur.fetchall() if cur.description else []]
            with pipelined(conn):
                if fence is not None:
                    conn.execute(FENCE_SQL, {"lease_token": str(fence)})
                cursors = [
                    conn.cursor().execute(sql.query(name), jsonify(params))
                    for name, params in statements
                ]
            return [cur.fetchall() if cur.description else [] for cur in cursors]

    def fetch_one(
        self, name: str, /, *, fence: int | None = None, **params: Any
    ) -> dict[str, Any] | None:
        rows = self.batch([(name, params)], fence=fence)[0]
        return rows[0] if rows else None

    def fetch_all(
        self, name: str, /, *, fence: int | None = None, **params: Any
    ) -> list[dict[str, Any]]:
        return self.batch([(name, params)], fence=fence)[0]

    def execute(
        self, name: str, /, conn: Conn | None = None, *, fence: int | None = None, **params: Any
    ) -> list[dict[str, Any]]:
        """Run a named query on ``conn`` (inside a caller's transaction) or a pooled one."""
        if conn is not None:
            try:
                cur = conn.execute(sql.query(name), jsonify(params))
            except psycopg.DatabaseError as exc:
                reraise(exc)
            return cur.fetchall() if cur.description else []
        return self.batch([(name, params)], fence=fence)[0]


FENCE_SQL = sql.query("set_lease_token")


_KEPT: weakref.WeakSet[Conn] = weakref.WeakSet()  # a caller's: never closed here


@contextmanager
def pipelined(conn: Conn) -> Iterator[None]:
    """``conn`` in pipeline mode. A pipeline that fails closes the connection, and the pool
    replaces it: psycopg counts a statement it first prepared in the pipeline as prepared
    even when the pipeline aborted before the server made it, so every later use of that
    statement on the connection would fail ("prepared statement ... does not exist"). A
    caller's own connection is kept instead, and prepares no statement from then on: it
    then never names one that may not exist."""
    try:
        with conn.pipeline():
            yield
    except BaseException:
        if conn in _KEPT:
            conn.prepare_threshold = None
        else:
            conn.close()
        raise


IDLE_CHECK_S = 10.0
_returned_at: weakref.WeakKeyDictionary[Conn, float] = weakref.WeakKeyDictionary()


def _returned(conn: Conn) -> None:
    _returned_at[conn] = time.monotonic()


def check_if_suspect(conn: Conn) -> None:
    """The pool's check on checkout, without a round trip for a connection that is
    recently used and quiet: one whose server went away (a restart, a terminated backend)
    has a readable socket (the FATAL message, or EOF), and one idle for a while may have
    been dropped on the way (a NAT, a proxy); those get a real round trip."""
    if conn.closed:
        raise psycopg.OperationalError("the connection is closed")
    idle = time.monotonic() - _returned_at.get(conn, 0.0)
    if idle > IDLE_CHECK_S or _readable(conn.fileno()):
        ConnectionPool.check_connection(conn)


def _readable(fd: int) -> bool:
    """Whether the socket has something to read (any descriptor number, unlike select)."""
    if not hasattr(select, "poll"):  # pragma: no cover - not on Linux or macOS
        return True  # no cheap way to tell: check with a round trip
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


def translate(exc: psycopg.DatabaseError) -> Exception:
    """Postgres errors that carry Waystone meaning become Waystone errors."""
    if exc.sqlstate == "WS410":
        return LeaseLost(str(exc.diag.message_primary or exc))
    if exc.sqlstate in ("WS409", "WS422"):
        return TransitionNotAllowed(str(exc.diag.message_primary or exc))
    if isinstance(exc, psycopg.OperationalError):
        return DatabaseUnavailable(f"lost the connection to Postgres: {exc}")
    return exc


def reraise(exc: psycopg.DatabaseError) -> NoReturn:
    """Raise ``exc`` as the Waystone error it means (raised from it), or else as it is:
    never raised from itself, which makes its chain a cycle."""
    meaning = translate(exc)
    if meaning is exc:
        raise exc
    raise meaning from exc


def _redact(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "<unparseable url>"
    info.pop("password", None)
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items()})


def meaning_of(exc: BaseException) -> WaystoneError | None:
    """The Waystone error behind an exception raised through LangGraph, if any."""
    for link in chain(exc):
        if isinstance(link, WaystoneError):
            return link
        if isinstance(link, psycopg.DatabaseError):
            translated = translate(link)
            if isinstance(translated, WaystoneError):
                return translated
    return None
