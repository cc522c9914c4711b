"""Waystone's saver with native async saves and reads, on psycopg's ``AsyncConnectionPool``.

The methods LangGraph's async graphs call at every step (``aput``, ``aput_writes``,
``aget_tuple``) reach Postgres on an ``AsyncConnection``, never through a thread. What a
save sends is decided by the sync saver's own code, run on the loop with no I/O: what is
held for the next save, what rides with it, the fence. Its cursor records the statements
(see ``_cursor`` in :mod:`waystone._checkpointing.saver`) into :class:`Batch` es, which are
then sent here as the sync saver sends them: the lease token setting, the held
statements, the save's own, pipelined up to one Sync: one round trip, one implicit
transaction, refused whole by the fence (:class:`~waystone.errors.LeaseLost`).

Personal data is tokenised on the loop, by the vault the sync saver uses: a value this
process has not stored in the vault yet is stored with one short sync insert on the sync
pool, once per value and process (later redactions of it find it in the vault's cache),
so an async twin of every redaction walk is not worth its second code path.

Its sync methods are the sync saver's, on the sync pool, so one saver serves a graph
driven either way; the rarer async methods (``alist``, deletes, ``aprune``, copies) run
the sync ones in a thread.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, cast

import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_checkpoint_id,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from psycopg import AsyncConnection, AsyncCursor
from psycopg.conninfo import make_conninfo
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

from waystone import sql
from waystone._checkpointing.allowlist import Declared
from waystone._checkpointing.at_rest import reveal, reveal_history
from waystone._checkpointing.delta import arun, delta_history
from waystone._checkpointing.held import Answer, Batch
from waystone._checkpointing.saver import WaystoneSaver
from waystone._db.database import (
    FENCE_SQL,
    Connecting,
    Database,
    connection_kwargs,
    reraise,
)
from waystone._privacy.seal import Sealer
from waystone.config import Settings
from waystone.errors import BadInput, LeaseLost

logger = logging.getLogger(__name__)

AsyncConn = AsyncConnection[DictRow]


class AsyncWaystoneSaver(WaystoneSaver):
    """:class:`~waystone._checkpointing.saver.WaystoneSaver` whose saves and reads of the
    latest checkpoint are async on ``apool`` (see the module)."""

    _apool: AsyncPool

    def __init__(
        self,
        conn: AsyncConn | AsyncConnectionPool[AsyncConn],
        *,
        serde: SerializerProtocol | None = None,
        allowed_modules: Iterable[Declared] = (),
        settings: Settings | None = None,
    ) -> None:
        """As LangGraph's ``AsyncPostgresSaver(conn)``: a caller's async connection or pool
        (autocommit, dict rows), which stays theirs to close. Its sync side (the vault's
        first sight of a value, the sync methods) opens a connection to the same database
        for each use: it keeps no session of its own, as the stock saver keeps none."""
        apool = async_pool_of(conn)
        settings = settings or Settings.from_env()
        url = conninfo_of(conn)
        self._on(
            Database(url=url, pool=Connecting(url, settings.prepare_threshold)),
            settings,
            serde,
            allowed_modules,
        )
        self._apool = apool
        self.conn = conn  # type: ignore[assignment]  # the caller's, as the stock saver keeps it

    @classmethod
    @asynccontextmanager
    async def from_conn_string(  # type: ignore[override]  # async, as LangGraph's own
        cls,
        conn_string: str,
        *,
        pipeline: bool = False,
        serde: SerializerProtocol | None = None,
        allowed_modules: Iterable[Declared] = (),
        settings: Settings | None = None,
    ) -> AsyncIterator[AsyncWaystoneSaver]:
        """``async with AsyncWaystoneSaver.from_conn_string(url) as saver``, as for
        LangGraph's ``AsyncPostgresSaver``: a saver on one async connection of its own to
        ``conn_string`` (``saver.conn``, on which a caller may open a pipeline), closed on
        the way out; the rest as :class:`WaystoneSaver`. Pass a pool to the constructor
        for calls that run side by side."""
        del pipeline  # each save is already one pipelined round trip
        settings = dataclasses.replace(settings or Settings.from_env(), database_url=conn_string)
        async with await AsyncConnection.connect(
            conn_string,
            autocommit=True,
            prepare_threshold=settings.prepare_threshold,
            row_factory=dict_row,
        ) as conn:
            yield cls(conn, serde=serde, allowed_modules=allowed_modules, settings=settings)

    async def setup(self) -> None:  # type: ignore[override]  # awaited, as LangGraph's own
        """Create or upgrade LangGraph's tables and Waystone's (its fence included), and
        check the vault's key; idempotent."""
        await asyncio.to_thread(WaystoneSaver.setup, self)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        saved, batches = self._deferred(self.put, config, checkpoint, metadata, new_versions)
        await self._send(batches)
        next_config: RunnableConfig = saved
        return next_config

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        _, batches = self._deferred(self.put_writes, config, writes, task_id, task_path)
        await self._send(batches)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        configurable = config.get("configurable") or {}
        if configurable.get("thread_id") in self._empty and not configurable.get("checkpoint_id"):
            return None  # a new run's first read: nothing to read back
        # what this process holds for the thread's next save is read too (see the sync get)
        _, batches = self._deferred(self._flush_thread, config)
        await self._send(batches)
        thread_id = configurable["thread_id"]
        checkpoint_ns = configurable.get("checkpoint_ns", "")
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id:
            args: tuple[Any, ...] = (thread_id, checkpoint_ns, checkpoint_id)
            where = sql.query("checkpoint_by_id_where")
        else:
            args = (thread_id, checkpoint_ns)
            where = sql.query("latest_checkpoint_where")
        try:
            async with (
                self._apool.connection() as conn,
                conn.cursor(binary=True, row_factory=dict_row) as cur,
            ):
                await cur.execute(self.SELECT_SQL + where, args, binary=True)
                value = await cur.fetchone()
                if value is None:
                    return None
                if value["checkpoint"]["v"] < 4 and value["parent_checkpoint_id"]:
                    # a checkpoint of LangGraph's older format: its sends, as the stock saver
                    await cur.execute(
                        self.SELECT_PENDING_SENDS_SQL, (thread_id, [value["parent_checkpoint_id"]])
                    )
                    if sends := await cur.fetchone():
                        if value["channel_values"] is None:
                            value["channel_values"] = []
                        self._migrate_pending_sends(
                            sends["sends"], value["checkpoint"], value["channel_values"]
                        )
        except psycopg.DatabaseError as exc:
            reraise(exc)
        return reveal(self._sealer, self._load_checkpoint_tuple(value))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        if not channels:
            return {}
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id:  # else the read of the latest sends what is held for the thread
            _, batches = self._deferred(self._flush_thread, config)
            await self._send(batches)
        else:
            target = await self.aget_tuple(config)
            if target is None:
                return {ch: {"writes": []} for ch in channels}
            checkpoint_id = target.config["configurable"]["checkpoint_id"]
        configurable = config["configurable"]
        walk = delta_history(
            self,
            str(configurable["thread_id"]),
            str(configurable.get("checkpoint_ns", "")),
            checkpoint_id,
            channels,
        )
        try:
            async with (
                self._apool.connection() as conn,
                conn.cursor(binary=True, row_factory=dict_row) as cur,
            ):
                return reveal_history(await arun(walk, cur))
        except psycopg.DatabaseError as exc:
            reraise(exc)

    def _deferred(self, decide: Callable[..., Any], *args: Any) -> tuple[Any, list[Batch]]:
        """What ``decide`` (a sync save, or a flush) returns, and the batches it would
        have sent: it runs to its end on the loop, with no I/O, so what it keeps on this
        thread (the fence token, the held statements) is its own."""
        batches: list[Batch] = []
        self._fence.deferred = batches
        try:
            return decide(*args), batches
        finally:
            self._fence.deferred = None

    async def _send(self, batches: list[Batch]) -> None:
        try:
            for batch in batches:
                if batch.after:  # saves of what was held for this one, sent first
                    await asyncio.wait([asyncio.wrap_future(f) for f in batch.after])
                try:
                    await self._send_one(batch)
                except LeaseLost:
                    if batch.own:
                        raise
                    # held under a lease that moved on: dropped, as the sync saver does
                    logger.warning("dropped pending writes of a lease that moved on")
                    continue
                for then in batch.then:
                    then()
        finally:  # sent or not, a checkpoint waiting for them goes on
            for batch in batches:
                for sent in batch.sent:
                    sent()

    async def _send_one(self, batch: Batch) -> None:
        """The batch in one round trip: pipelined up to one Sync, so Postgres runs it as
        one implicit transaction (the token setting is local to it; the first error rolls
        back all of it)."""
        try:
            async with self._apool.connection() as conn:
                asked: list[tuple[AsyncCursor[DictRow], Answer]] = []
                try:
                    async with conn.pipeline():
                        if batch.token is not None:
                            async with conn.cursor(binary=True) as setter:
                                await setter.execute(FENCE_SQL, {"lease_token": str(batch.token)})
                        async with conn.cursor(binary=True, row_factory=dict_row) as cur:
                            for query, params, how in batch.statements:
                                if how is True:
                                    await cur.executemany(query, params)
                                elif how is False:
                                    await cur.execute(query, params)
                                else:  # its rows are wanted: a cursor of its own
                                    asked.append((conn.cursor(row_factory=dict_row), how))
                                    await asked[-1][0].execute(query, params)
                except BaseException:
                    # a statement first prepared in a pipeline that aborted counts as
                    # prepared (see `pipelined` in the database module): the pool replaces
                    # the connection; a caller's own prepares nothing from then on
                    if _callers_connection(self._apool):
                        conn.prepare_threshold = None
                    else:
                        await conn.close()
                    raise
                for answered, answer in asked:  # past the Sync: committed
                    try:
                        answer(await answered.fetchall())
                    except Exception:  # an answer only saves a later read
                        logger.exception("a committed statement's answer failed")
        except psycopg.DatabaseError as exc:
            reraise(exc)


class AsyncOneConnection:
    """A caller's one async connection, in place of a pool: lent to one task at a time, as
    LangGraph's async saver does with one. The caller closes it."""

    def __init__(self, conn: AsyncConn) -> None:
        self.conn = conn
        self._lock = asyncio.Lock()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConn]:
        async with self._lock:
            yield self.conn


class AsyncDictRows:
    """A caller's async pool or connection whose rows are tuples: each use gets dict rows,
    and the caller's row factory back after it (see the database module's ``DictRows``)."""

    def __init__(self, inner: AsyncConnectionPool[AsyncConn] | AsyncOneConnection) -> None:
        self.inner = inner

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConn]:
        async with self.inner.connection() as conn:
            kept = conn.row_factory
            conn.row_factory = dict_row
            try:
                yield conn
            finally:
                conn.row_factory = kept


AsyncPool = AsyncConnectionPool[AsyncConn] | AsyncOneConnection | AsyncDictRows


def _callers_connection(pool: AsyncPool) -> bool:
    """Whether ``pool`` lends a caller's one connection, which is never closed here."""
    inner = pool.inner if isinstance(pool, AsyncDictRows) else pool
    return isinstance(inner, AsyncOneConnection)


def async_pool_of(conn: object) -> AsyncPool:
    """A caller's async connection or pool, checked as LangGraph's saver needs it."""
    if isinstance(conn, AsyncConnectionPool):
        kwargs = conn.kwargs
        if isinstance(kwargs, dict) and not kwargs.get("autocommit"):
            raise BadInput(
                "the pool's connections must be autocommit: AsyncConnectionPool("
                "url, kwargs={'autocommit': True})"
            )
        pool = cast(AsyncConnectionPool[AsyncConn], conn)
        rows = isinstance(kwargs, dict) and kwargs.get("row_factory") is dict_row
        return pool if rows else AsyncDictRows(pool)
    if isinstance(conn, AsyncConnection):
        if not conn.autocommit:
            raise BadInput(
                "the connection must be autocommit: await "
                "AsyncConnection.connect(url, autocommit=True)"
            )
        one = AsyncOneConnection(cast(AsyncConn, conn))
        return one if conn.row_factory is dict_row else AsyncDictRows(one)
    raise BadInput(
        f"expected a psycopg AsyncConnection or AsyncConnectionPool, not {type(conn).__name__}"
        " (for a sync connection or pool, use WaystoneSaver)"
    )


def conninfo_of(conn: AsyncConn | AsyncConnectionPool[AsyncConn]) -> str:
    """Where ``conn`` connects, its password included (a connection's ``dsn`` leaves it
    out), for the sync side's own connections."""
    if isinstance(conn, AsyncConnectionPool):
        if not isinstance(conn.conninfo, str):
            raise BadInput(
                "the pool's conninfo is a function: give the saver its URL instead, "
                "AsyncWaystoneSaver.from_conn_string(url)"
            )
        return conn.conninfo
    password = conn.pgconn.password
    if not password:
        return conn.info.dsn
    return make_conninfo(conn.info.dsn, password=password.decode())


async def open_async_pool(settings: Settings, url: str) -> AsyncConnectionPool[AsyncConn]:
    """An async pool to ``url``, its connections made as the sync pool's (autocommit, dict
    rows), bounded by ``settings.pool_max_size``."""
    pool: AsyncConnectionPool[AsyncConn] = AsyncConnectionPool(
        url,
        min_size=settings.pool_min_size,
        max_size=settings.pool_max_size,
        kwargs=connection_kwargs(settings),
        open=False,
        name="waystone-async",
    )
    await pool.open(wait=True, timeout=15)
    return pool


def make_async_saver(
    db: Database,
    apool: AsyncPool,
    redact: Callable[[Any], Any] | None = None,
    sealer: Sealer | None = None,
    allowed_modules: Iterable[Declared] = (),
) -> AsyncWaystoneSaver:
    """The async saver on Waystone's pools: ``db``'s for its sync methods and the vault,
    ``apool`` for its async saves and reads."""
    saver = AsyncWaystoneSaver.__new__(AsyncWaystoneSaver)
    saver._start(db, redact, sealer, allowed_modules=allowed_modules)
    saver._vault = None
    saver._apool = apool
    return saver


def twin_of(
    saver: WaystoneSaver, apool: AsyncPool, kind: type[AsyncWaystoneSaver] | None = None
) -> AsyncWaystoneSaver:
    """``saver`` with native async saves on ``apool``: the same pools, serializer, and what
    is held for the next save (shared, not copied), so statements ridden through either
    one commit with the next save through either."""
    kind = kind or AsyncWaystoneSaver
    twin = kind.__new__(kind)
    twin.__dict__.update(saver.__dict__)
    twin._apool = apool
    return twin
