"""One connection pool to one Postgres: the URL's, or the embedded server's."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolTimeout

from waystone import sql
from waystone.checkpointing import embedded
from waystone.config import Settings
from waystone.errors import DatabaseUnavailable, LeaseLost, TransitionNotAllowed

logger = logging.getLogger(__name__)

Conn = psycopg.Connection[DictRow]


def resolve_url(settings: Settings) -> str:
    """The URL to use: ``settings.database_url``, else the embedded server's."""
    if settings.database_url:
        return settings.database_url
    return embedded.ensure_server(settings.home)


def _jsonify(params: dict[str, Any]) -> dict[str, Any]:
    return {k: Jsonb(v) if isinstance(v, dict) else v for k, v in params.items()}


@dataclass
class Database:
    """A psycopg pool plus named-query helpers. Connections are autocommit, dict rows."""

    url: str
    pool: ConnectionPool[Conn]

    @classmethod
    def open(cls, settings: Settings) -> Database:
        url = resolve_url(settings)
        pool: ConnectionPool[Conn] = ConnectionPool(
            url,
            min_size=settings.pool_min_size,
            max_size=settings.pool_max_size,
            kwargs={
                "autocommit": True,
                "row_factory": dict_row,
                "prepare_threshold": settings.prepare_threshold,
            },
            open=False,
            name="waystone",
            check=ConnectionPool.check_connection,  # a restarted server leaves dead ones
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
    def connection(self, fence: int | None = None) -> Iterator[Conn]:
        """A pooled connection. With ``fence`` (a lease token) everything runs in one
        transaction whose writes Postgres rejects unless the token is the run's current one.
        """
        try:
            with self.pool.connection(timeout=30) as conn:
                if fence is None:
                    yield conn
                else:
                    with conn.transaction():
                        conn.execute(FENCE_SQL, (str(fence),))
                        yield conn
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailable(
                f"lost the connection to Postgres at {_redact(self.url)}: {exc}"
            ) from exc
        except PoolTimeout as exc:
            raise DatabaseUnavailable(
                f"no connection to Postgres at {_redact(self.url)} within 30s: {exc}"
            ) from exc
        except psycopg.DatabaseError as exc:
            raise translate(exc) from exc

    @contextmanager
    def transaction(self, fence: int | None = None) -> Iterator[Conn]:
        if fence is not None:
            with self.connection(fence) as conn:
                yield conn
            return
        with self.connection() as conn, conn.transaction():
            yield conn

    def fetch_one(
        self, name: str, /, *, fence: int | None = None, **params: Any
    ) -> dict[str, Any] | None:
        with self.connection(fence) as conn:
            return conn.execute(sql.query(name), _jsonify(params)).fetchone()

    def fetch_all(
        self, name: str, /, *, fence: int | None = None, **params: Any
    ) -> list[dict[str, Any]]:
        with self.connection(fence) as conn:
            return conn.execute(sql.query(name), _jsonify(params)).fetchall()

    def execute(
        self, name: str, /, conn: Conn | None = None, *, fence: int | None = None, **params: Any
    ) -> list[dict[str, Any]]:
        """Run a named query on ``conn`` (inside a caller's transaction) or a pooled one."""
        if conn is not None:
            try:
                cur = conn.execute(sql.query(name), _jsonify(params))
            except psycopg.DatabaseError as exc:
                raise translate(exc) from exc
            return cur.fetchall() if cur.description else []
        with self.connection(fence) as own:
            cur = own.execute(sql.query(name), _jsonify(params))
            return cur.fetchall() if cur.description else []


FENCE_SQL = "SELECT set_config('waystone.lease_token', %s, true)"


def translate(exc: psycopg.DatabaseError) -> Exception:
    """Postgres errors that carry Waystone meaning become Waystone errors."""
    if exc.sqlstate == "WS410":
        return LeaseLost(str(exc.diag.message_primary or exc))
    if exc.sqlstate in ("WS409", "WS422"):
        return TransitionNotAllowed(str(exc.diag.message_primary or exc))
    if isinstance(exc, psycopg.OperationalError):
        return DatabaseUnavailable(f"lost the connection to Postgres: {exc}")
    return exc


def _redact(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "<unparseable url>"
    info.pop("password", None)
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items()})
