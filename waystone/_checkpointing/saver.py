"""Waystone's LangGraph checkpointer: the stock Postgres saver, fenced, with async methods.

Every checkpoint, blob and pending write of a Waystone run carries the lease token of the
process that drives it (``config["configurable"]["lease_token"]``); Postgres rejects the
write (SQLSTATE WS410, :class:`~waystone.errors.LeaseLost`) when the token is no longer the
run's current one. Threads that are not Waystone runs are not fenced, so the saver still
behaves as a plain LangGraph checkpointer (and passes the conformance suite).

One round trip per step. LangGraph saves a step as a task's pending writes (``put_writes``)
and then the checkpoint (``put``), each in its own transaction. For a fenced run, the writes
of a step's one pulled task are held in memory and committed in the checkpoint's own
transaction: one pipelined batch (fence, blobs, checkpoint, writes), one commit. Writes
that must outlive a failed or paused step are never held: errors, interrupts and resume
values, the results of a ``Send`` task with siblings (parallel checks) and of a second task
of the same step go out at once, together with anything held for that checkpoint. A
``Send`` task that is its step's only task (one check) is held like a node's own. So a
crash between a node's return and its checkpoint's commit runs that node again, as
LangGraph does for a crash inside the node; Waystone's nodes are written for that (an
effect is in the ledger before the node returns, and a check only reads). Threads without
a lease token are saved as the stock saver does.

A node's own ledger changes may ride with its writes too (``ride``): the receipt of an
effect the tool can reconcile and a confirmation are committed in the transaction that
saves the node's writes (its checkpoint's, in the subgraph's namespace for a subgraph's
node; its own, for a ``Send`` branch with siblings), before them, so the step is still one
round trip and they are durable exactly when the node is done. A run that ends makes its
final transition in the transaction of its graph's last checkpoint the same way
(``finishing``). Whatever is held under one lease never commits under another (``_own``).
Writes that go out at once take what is held with them, and LangGraph sends them in the
background, saving the step's checkpoint without waiting for them: that save waits for
them (``Out``), so a receipt never commits after a checkpoint past its effect.

A new run's first two checkpoints (its input, and the input mapped by ``__start__``) are no
node's boundary: both are made from the run's input, which its row already holds. They are
held too, and committed with the first node's checkpoint; a crash before that starts the
run again from its input, as it would have from them.

Connections come from the pool, one per call, so a step's writes and its checkpoint never
wait on each other behind a saver-wide lock.

The async methods run the sync ones in a thread, so notebooks and async servers can use
the same saver; :mod:`waystone._checkpointing.aio` saves natively on an async pool, from the
same decisions and statements (this saver's cursor records them for it).

Built by hand, it is LangGraph's ``PostgresSaver`` in use: ``from_conn_string(url)``, or a
psycopg connection or pool, ``serde=``, ``setup()``. Its personal data is redacted through
the vault the runtime uses (the key in ``WAYSTONE_ENCRYPTION_KEY``, else the one under
``WAYSTONE_HOME``), and sealed at rest when ``WAYSTONE_ENCRYPTION_KEY`` is set, so a
runtime on the same database and settings reads what it wrote.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, wait
from contextlib import contextmanager
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
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.serde.base import SerializerProtocol, maybe_add_typed_methods
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from psycopg import Cursor
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool

from waystone import sql
from waystone._checkpointing.allowlist import Declared, allowed_classes
from waystone._checkpointing.at_rest import (
    matching,
    protect,
    reveal,
    reveal_history,
    split_filter,
)
from waystone._checkpointing.delta import delta_history, run
from waystone._checkpointing.held import (
    LEASE_KEY,
    Answer,
    Batch,
    Held,
    Out,
    Recorder,
    Statement,
    may_hold,
    one_send,
    saved_in,
    until_asked,
)
from waystone._checkpointing.in_threads import InThreads
from waystone._checkpointing.lease_guards import progressed
from waystone._db.database import (
    FENCE_SQL,
    Conn,
    Database,
    DictRows,
    OneConnection,
    pipelined,
    reraise,
)
from waystone._db.migrations import migrate
from waystone._privacy.keys import at_rest_sealer, load_key
from waystone._privacy.seal import SealedSerializer, Sealer
from waystone._privacy.vault import Vault
from waystone.config import Settings
from waystone.errors import BadInput, LeaseLost

logger = logging.getLogger(__name__)

Finisher = Callable[[dict[str, Any]], list[Statement] | None]
LATEST_KEPT = 4096  # threads whose latest checkpoint id this process remembers


class WaystoneSaver(InThreads, PostgresSaver):
    """LangGraph's Postgres saver, fenced, redacting and sealing (see the module).

    ``conn`` is a psycopg connection or ``ConnectionPool``, autocommit with dict rows, as
    for ``PostgresSaver``; it stays the caller's to close. ``serde`` replaces LangGraph's
    serializer, given here or assigned later (the sealing wraps it either way). Loads make
    what the installed LangGraph's serializer makes: a user's classes by default, only its
    safe types in its strict mode (``LANGGRAPH_STRICT_MSGPACK``), where the graph's state
    types and the classes in ``allowed_modules`` and ``settings.allowed_modules``
    (``WAYSTONE_ALLOWED_MODULES``; see :mod:`waystone._checkpointing.allowlist`) are made
    too, and any other class named in a blob comes back as its fields. ``settings``
    (default: from the environment) says where the vault's key is, as for the runtime.

    The vault's redaction runs over every checkpoint value, the inline primitives
    LangGraph keeps as plain JSONB, the metadata (with the config values LangGraph merges
    into it) and every pending write, before they are written: personal data never
    reaches LangGraph's tables. It keeps every value's type (LangGraph tells a
    DeltaChannel's snapshot from a tuple by its type), so what is stored is what the stock
    saver stores, tokens in place of personal data."""

    def __init__(
        self,
        conn: Conn | ConnectionPool[Conn],
        *,
        pipe: psycopg.Pipeline | None = None,
        serde: SerializerProtocol | None = None,
        allowed_modules: Iterable[Declared] = (),
        settings: Settings | None = None,
    ) -> None:
        self._on(Database.on(conn), settings, serde, allowed_modules)
        # `conn`'s pipeline, as for the stock saver: the stock methods Waystone keeps (prune)
        # sync it before a transaction of their own
        self.pipe = pipe

    def _on(
        self,
        db: Database,
        settings: Settings | None,
        serde: SerializerProtocol | None,
        allowed_modules: Iterable[Declared],
    ) -> None:
        settings = settings or Settings.from_env()
        vault = Vault(db, load_key(settings.home))
        self._start(
            db,
            redact=_KeyChecked(vault),
            sealer=at_rest_sealer(),
            serde=serde,
            allowed_modules=[*settings.allowed_modules, *allowed_modules],
        )
        self._vault: Vault | None = vault

    @classmethod
    @contextmanager
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        pipeline: bool = False,
        serde: SerializerProtocol | None = None,
        allowed_modules: Iterable[Declared] = (),
        settings: Settings | None = None,
    ) -> Iterator[WaystoneSaver]:
        """A saver on one connection of its own to ``conn_string``, closed on the way out,
        as LangGraph's ``PostgresSaver.from_conn_string``: ``saver.conn`` is that connection
        (a caller may open a pipeline on it), and calls take turns on it. Pass a pool to the
        constructor for calls that run side by side. ``pipeline`` changes nothing: each
        save is already one pipelined round trip."""
        del pipeline
        settings = dataclasses.replace(settings or Settings.from_env(), database_url=conn_string)
        with psycopg.Connection.connect(
            conn_string,
            autocommit=True,
            prepare_threshold=settings.prepare_threshold,
            row_factory=dict_row,
        ) as conn:
            yield cls(conn, serde=serde, allowed_modules=allowed_modules, settings=settings)

    def setup(self) -> None:
        """Create or upgrade LangGraph's tables and Waystone's (its fence included), and
        check the vault's key against the database's; idempotent."""
        migrate(self._db)
        if self._vault is not None:
            self._vault.check_key()

    @classmethod
    def _made(
        cls,
        db: Database,
        redact: Callable[[Any], Any] | None,
        sealer: Sealer | None,
        allowed_modules: Iterable[Declared] = (),
    ) -> WaystoneSaver:
        saver = cls.__new__(cls)
        saver._start(db, redact, sealer, allowed_modules=allowed_modules)
        saver._vault = None
        return saver

    def _start(
        self,
        db: Database,
        redact: Callable[[Any], Any] | None,
        sealer: Sealer | None,
        *,
        serde: SerializerProtocol | None = None,
        allowed_modules: Iterable[Declared] = (),
    ) -> None:
        # Loads follow the installed LangGraph's own serializer: what it allows by default
        # (LANGGRAPH_STRICT_MSGPACK narrows it to its safe types), and the classes declared
        inner = serde or JsonPlusSerializer()
        extra = allowed_classes(allowed_modules)
        if extra:
            if not isinstance(inner, JsonPlusSerializer):
                raise BadInput(
                    "allowed_modules widen JsonPlusSerializer's allowlist; a serde of "
                    f"another kind ({type(inner).__name__}) decides what it loads itself"
                )
            inner = inner.with_msgpack_allowlist(extra)
        pool = db.pool
        self._sealer = sealer
        given = pool.inner if isinstance(pool, DictRows) else pool
        stock = given.conn if isinstance(given, OneConnection) else given
        super().__init__(cast(Conn | ConnectionPool[Conn], stock), serde=inner)
        self._db = db
        self._pool = pool
        self._fence = threading.local()
        self._redact = redact
        self._held_lock = threading.Lock()
        self._held: dict[tuple[str, str], Held] = {}
        self._out = Out(self._held_lock)  # saves of held statements a checkpoint waits for
        # (thread, ns) -> the id of the latest checkpoint this process committed, or the
        # one it is saving. Only writes made from it can wait for the next save.
        self._latest: OrderedDict[tuple[str, str], str | None] = OrderedDict()
        # (thread, ns) -> the latest checkpoint, when its next step runs one task, a Send
        self._lone: dict[tuple[str, str], str] = {}
        self._saving: dict[tuple[str, str], str] = {}
        self._empty: set[str] = set()  # threads known to have no checkpoint (see `empty`)
        self._fresh: set[str] = set()  # new runs whose input saves may wait (see `empty`)
        self._finishers: dict[tuple[str, int], Finisher] = {}  # (thread, lease): `finishing`
        self._finished: set[tuple[str, int]] = set()

    @property
    def serde(self) -> SerializerProtocol:
        """The serializer blobs go through, sealed at rest when a key is set."""
        return self._serde

    @serde.setter
    def serde(self, serde: SerializerProtocol) -> None:
        # Whatever serializer is given, at construction or later, is wrapped: none of them
        # can write a blob unsealed while encryption at rest is on
        if not isinstance(serde, SealedSerializer) or serde.sealer is not self._sealer:
            inner = serde.inner if isinstance(serde, SealedSerializer) else serde
            serde = SealedSerializer(maybe_add_typed_methods(inner), self._sealer)
        self._serde = serde

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> WaystoneSaver:
        """The same saver (its pool, and what it holds for the next save) loading the
        classes of ``extra_allowlist`` too: LangGraph's strict mode asks it for a graph's
        state types when it compiles the graph."""
        serde = self.serde
        assert isinstance(serde, SealedSerializer)
        widened = serde.with_msgpack_allowlist(extra_allowlist)
        if widened is serde:
            return self
        clone = copy.copy(self)
        clone.serde = widened
        return clone

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        configurable = config.get("configurable") or {}
        if configurable.get("thread_id") in self._empty and not configurable.get("checkpoint_id"):
            return None  # a new run's first read: nothing to read back
        self._flush_before_read(config)
        return reveal(self._sealer, super().get_tuple(config))

    @contextmanager
    def empty(self, thread_id: str) -> Iterator[None]:
        """Inside, reads of ``thread_id``'s latest checkpoint find none without asking
        Postgres: for a run whose claim saw no checkpoint (its lease keeps everyone else
        from writing one) until this process writes the first. Its input checkpoints are
        held for its first node's (see the module's docstring)."""
        self._empty.add(thread_id)
        self._fresh.add(thread_id)
        try:
            yield
        finally:
            self._empty.discard(thread_id)
            self._fresh.discard(thread_id)

    @contextmanager
    def finishing(
        self, thread_id: str, lease_token: int, finish: Finisher
    ) -> Iterator[Callable[[], bool]]:
        """Inside, each save of ``thread_id`` under ``lease_token`` asks ``finish`` (given
        the checkpoint's values) for statements to commit in the save's own transaction:
        the run's final transition, with the graph's last checkpoint. They go first: the
        transition locks the run's row, so the fence checks after it never need to upgrade
        a share lock on it. Yields whether a save committed some."""
        key = (thread_id, lease_token)
        self._finishers[key] = finish
        self._finished.discard(key)
        try:
            yield lambda: key in self._finished
        finally:
            self._finishers.pop(key, None)
            self._finished.discard(key)

    def _flush_before_read(self, config: RunnableConfig | None) -> None:
        """A reader in this process sees the writes held for the thread's next save. If
        their run's lease has moved on, they are stale: dropped, and the read goes on."""
        try:
            self._flush_thread(config)
        except LeaseLost:
            logger.warning("dropped pending writes of a lease that moved on")

    def _flush_thread(self, config: RunnableConfig | None) -> None:
        if not self._held or config is None:
            return
        thread_id = (config.get("configurable") or {}).get("thread_id")
        with self._held_lock:
            found = [
                (self._held.pop(w), self._out.take(w))
                for w in list(self._held)
                if w[0] == thread_id
            ]
        with self._sending([sent for _, sent in found]):
            for held, _ in found:
                self._write_held(held)

    def _write_held(self, held: Held) -> None:
        with self.fenced(held.lease_token):
            self._fence.held = held.all(self.INSERT_CHECKPOINT_WRITES_SQL)
            try:
                with self._cursor(pipeline=True):
                    pass
            except psycopg.DatabaseError as exc:
                reraise(exc)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        self._flush_before_read(config)
        if filter and self._redact is not None:
            filter = self._redact(filter)  # stored metadata holds tokens: ask for the same
        plain, sealed = split_filter(filter, self._sealer)  # sealed keys: matched here
        found = super().list(config, filter=plain, before=before, limit=None if sealed else limit)
        yield from matching((reveal(self._sealer, item) for item in found), sealed, limit)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        self._flush_before_read(config)
        if not channels:
            return {}
        checkpoint_id = get_checkpoint_id(config)
        if not checkpoint_id:
            target = self.get_tuple(config)
            if target is None:
                return {ch: {"writes": []} for ch in channels}
            checkpoint_id = target.config["configurable"]["checkpoint_id"]
        walk = delta_history(self, *_where(config), checkpoint_id, channels)
        try:
            with self._cursor() as cur:
                return reveal_history(run(walk, cur))
        except psycopg.DatabaseError as exc:
            reraise(exc)

    @contextmanager
    def _fenced(self, config: RunnableConfig) -> Iterator[None]:
        token = (config.get("configurable") or {}).get(LEASE_KEY)
        self._fence.token = token
        try:
            yield
        except psycopg.DatabaseError as exc:
            reraise(exc)
        finally:
            self._fence.token = None

    @contextmanager
    def _cursor(self, *, pipeline: bool = False) -> Iterator[Cursor[DictRow]]:
        recorder = getattr(self._fence, "recorder", None)
        if recorder is not None:  # a held save: keep its statements for the next one
            yield cast(Cursor[DictRow], recorder)
            return
        token = getattr(self._fence, "token", None)
        held: list[Statement] = getattr(self._fence, "held", None) or []
        self._fence.held = None
        deferred: list[Batch] | None = getattr(self._fence, "deferred", None)
        if deferred is not None:  # an async save: its batch goes out on the loop (see aio)
            assert pipeline, "an async save only writes; reads go out on the async pool"
            recorder = Recorder()
            yield cast(Cursor[DictRow], recorder)
            deferred.append(Batch(token, [*held, *recorder.statements], bool(recorder.statements)))
            return
        with self._pool.connection() as conn:
            if token is None and not pipeline and not held:
                with conn.cursor(binary=True, row_factory=dict_row) as cur:
                    yield cur
                return
            # One round trip: the fence setting, what was held for this save, then the
            # saver's statements, pipelined up to one Sync, so Postgres runs them as one
            # implicit transaction (the setting is local to it; the first error rolls back
            # all of them).
            asked: list[tuple[Cursor[DictRow], Answer]] = []
            with pipelined(conn):
                if token is not None:
                    with conn.cursor(binary=True) as setter:
                        setter.execute(FENCE_SQL, {"lease_token": str(token)})
                with conn.cursor(binary=True, row_factory=dict_row) as cur:
                    for query, params, how in held:
                        if how is True:
                            cur.executemany(query, params)
                        elif how is False:
                            cur.execute(query, params)
                        else:  # its rows are wanted: a cursor of its own
                            asked.append((conn.cursor(row_factory=dict_row), how))
                            asked[-1][0].execute(query, params)
                    yield cur
            for answered, answer in asked:  # past the Sync: committed
                try:
                    answer(answered.fetchall())
                except Exception:  # an answer only saves a later read: never fail the save
                    logger.exception("a committed statement's answer failed")

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        step = metadata.get("step")
        values = checkpoint["channel_values"]
        # The metadata as LangGraph would store it (the config's `metadata` and
        # `configurable` values merged in), protected whole; the stock put is then given a
        # config that adds nothing more.
        metadata = get_serializable_checkpoint_metadata(config, metadata)
        checkpoint, metadata = protect(
            checkpoint, metadata, new_versions, self._redact, self._sealer
        )
        stored = _bare(config)
        where = _where(config)
        self._empty.discard(where[0])
        token = (config.get("configurable") or {}).get(LEASE_KEY)
        lease = int(token) if token is not None else None
        progressed(where[0], lease)  # a step boundary: the drive is not stuck
        hold = (
            where[0] in self._fresh
            and where[1] == ""
            and lease is not None
            and isinstance(step, int)
            and step < 1  # the input, and the input mapped by __start__
        )
        if not hold:
            self._fresh.discard(where[0])
        with self._held_lock:
            held = self._held.pop(where, None)
            going = self._out.of(where)  # what was held here, on its way: committed first
            # writes made from the parent, arriving late, go out on their own; writes made
            # from this checkpoint (the input's) wait for the next save
            self._latest[where] = None
            self._saving[where] = checkpoint["id"]
        held = self._own(held, lease)
        earlier = held.all(self.INSERT_CHECKPOINT_WRITES_SQL) if held else None
        try:
            if hold and lease is not None:
                recorder = Recorder()
                self._fence.recorder = recorder
                try:
                    saved = super().put(stored, checkpoint, metadata, new_versions)
                finally:
                    self._fence.recorder = None
                statements = [*(earlier or []), *recorder.statements]
                with self._held_lock:
                    self._held[where] = Held(lease, [], statements)
            else:
                key = (where[0], lease) if lease is not None and not where[1] else None
                finisher = self._finishers.get(key) if key is not None else None
                ending = finisher(values) if finisher is not None else None
                with self._fenced(config), self._after(going):
                    self._fence.held = [*(ending or []), *(earlier or [])]
                    saved = super().put(stored, checkpoint, metadata, new_versions)
                if ending and lease is not None:
                    self._after_commit(functools.partial(self._finished.add, (where[0], lease)))
        finally:
            with self._held_lock:
                self._saving.pop(where, None)
        with self._held_lock:
            self._latest[where] = checkpoint["id"]
            self._latest.move_to_end(where)
            while len(self._latest) > LATEST_KEPT:
                self._lone.pop(self._latest.popitem(last=False)[0], None)
            if one_send(values):
                self._lone[where] = checkpoint["id"]
            else:
                self._lone.pop(where, None)
        return saved

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if self._redact is not None:
            writes = [(channel, self._redact(value)) for channel, value in writes]
        configurable = config["configurable"]
        where = _where(config)
        token = configurable.get(LEASE_KEY)
        progressed(where[0], int(token) if token is not None else None)  # a task is done
        checkpoint_id = str(configurable["checkpoint_id"])
        lone = self._lone.get(where) == checkpoint_id
        if self._may_hold(configurable, writes, task_path, lone=lone):
            rows = self._dump_writes(*where, checkpoint_id, task_id, task_path, writes)
            with self._held_lock:
                current = (self._latest.get(where), self._saving.get(where))
                held = self._held.get(where)
                lease = int(configurable[LEASE_KEY])
                if checkpoint_id in current and (
                    held is None or (not held.rows and held.lease_token == lease)
                ):
                    if held is None:
                        self._held[where] = Held(lease, rows)
                    else:  # after a held checkpoint: its task's writes wait with it
                        held.rows = rows
                    return
        with self._held_lock:
            held = self._held.pop(where, None)  # a sibling's writes: out together, now
            sent = [self._out.take(where)] if held is not None else []
            if held is not None:
                # a statement whose rows are wanted, and every statement after it (which may
                # depend on it), wait for the next save: LangGraph does not wait for these
                # writes before its next step; it waits for that save
                held.statements, kept = until_asked(held.statements)
                if kept:
                    self._held[where] = Held(held.lease_token, [], kept)
        with self._sending(sent):
            held = self._own(held, int(token) if token is not None else None)
            with self._fenced(config):
                self._fence.held = held.all(self.INSERT_CHECKPOINT_WRITES_SQL) if held else None
                super().put_writes(config, writes, task_id, task_path)

    def _own(self, held: Held | None, lease: int | None) -> Held | None:
        """``held`` if it was held under ``lease``, for a save under it to commit. Held under
        another lease (two slots of one process on one thread, one of them stale), it is
        written on its own, under its own token, and dropped if that token moved on."""
        if held is None or held.lease_token == lease:
            return held
        try:
            self._write_held(held)
        except LeaseLost:
            logger.warning("dropped pending writes of a lease that moved on")
        return None

    _may_hold = staticmethod(may_hold)

    def _after_commit(self, then: Callable[[], None]) -> None:
        """``then`` once the save just made has committed: now, or after an async save's
        batch (see :mod:`waystone._checkpointing.aio`)."""
        deferred: list[Batch] | None = getattr(self._fence, "deferred", None)
        if deferred:
            deferred[-1].then.append(then)
        else:
            then()

    @contextmanager
    def _sending(self, sent: Sequence[Callable[[], None]]) -> Iterator[None]:
        """Calls each of ``sent`` (see ``Out.take``) once the saves made inside were sent,
        committed or not: at once, or after an async save's batches (see aio)."""
        deferred: list[Batch] | None = getattr(self._fence, "deferred", None)
        before = len(deferred) if deferred is not None else 0
        try:
            yield
        except BaseException:
            for then in sent:
                then()
            raise
        if deferred is not None and len(deferred) > before:
            deferred[-1].sent.extend(sent)
        else:
            for then in sent:
                then()

    @contextmanager
    def _after(self, going: Sequence[Future[None]]) -> Iterator[None]:
        """The save made inside commits after ``going`` were sent: waited for here, or
        by an async save before it sends its batch (see aio)."""
        deferred: list[Batch] | None = getattr(self._fence, "deferred", None)
        if deferred is None and going:
            wait(going)
        before = len(deferred) if deferred is not None else 0
        yield
        if deferred is not None and len(deferred) > before:
            deferred[-1].after.extend(going)

    def flush(self, thread_id: str) -> None:
        """Commit the writes held for ``thread_id`` (normally its next save does); raises
        :class:`LeaseLost` when the lease they were made under has moved on."""
        self._flush_thread({"configurable": {"thread_id": thread_id}})

    def ride(self, thread_id: str, lease_token: int, statements: Sequence[Statement]) -> None:
        """Commit ``statements`` (fenced by ``lease_token``) in the transaction of the next
        save of the calling task's writes, before them: a node's own ledger change then
        becomes durable exactly when the node's writes do, in a subgraph or a ``Send``
        branch too (saved in its subgraph's namespace, or at once). They go out as held
        writes do: with that save, an error or interrupt write, a reader's flush, or the
        driver's."""
        where = (thread_id, saved_in())
        with self._held_lock:
            held = self._held.get(where)
            if held is not None and held.lease_token == lease_token:
                held.statements.extend(statements)
                return
        if held is not None:  # an earlier lease's, in this process: out first, or dropped
            self._flush_before_read({"configurable": {"thread_id": thread_id}})
        with self._held_lock:
            self._held.setdefault(where, Held(lease_token, [])).statements.extend(statements)

    # -- beyond the stock saver: copy, delete by run, in one transaction each ----------

    @contextmanager
    def fenced(self, lease_token: int | None) -> Iterator[None]:
        """Writes made inside carry ``lease_token`` (for methods that take no config)."""
        previous = getattr(self._fence, "token", None)
        self._fence.token = lease_token
        try:
            yield
        finally:
            self._fence.token = previous

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Connection[DictRow]]:
        token = getattr(self._fence, "token", None)
        try:
            with self._pool.connection() as conn, conn.transaction():
                if token is not None:
                    conn.execute(FENCE_SQL, {"lease_token": str(token)})
                yield conn
        except psycopg.DatabaseError as exc:
            reraise(exc)

    def copy_thread(
        self,
        source_thread_id: str,
        target_thread_id: str,
        *,
        until: str | None = None,
        conn: psycopg.Connection[DictRow] | None = None,
    ) -> None:
        """Copy every checkpoint, blob and pending write of a thread to another (up to and
        including checkpoint ``until``, when given: a fork at that point). With ``conn``,
        inside the caller's transaction (which sets the fence itself)."""
        params = {"source": source_thread_id, "target": target_thread_id, "until": until}
        names = ("copy_checkpoints", "copy_checkpoint_blobs", "copy_checkpoint_writes")
        if conn is not None:
            for name in names:
                conn.execute(sql.query(name), params)
            return
        with self._transaction() as own:
            for name in names:
                own.execute(sql.query(name), params)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their pending writes) that the given runs made."""
        ids = [str(r) for r in run_ids]
        if not ids:
            return
        with self._transaction() as conn:
            conn.execute(sql.query("delete_writes_for_runs"), {"run_ids": ids})
            conn.execute(sql.query("delete_checkpoints_for_runs"), {"run_ids": ids})


def _bare(config: RunnableConfig) -> RunnableConfig:
    """Only what locates a checkpoint: the stock saver merges nothing else into its
    metadata."""
    configurable = config["configurable"]
    kept = ("thread_id", "checkpoint_ns", "checkpoint_id")
    return {"configurable": {k: configurable[k] for k in kept if k in configurable}}


def _where(config: RunnableConfig) -> tuple[str, str]:
    configurable = config["configurable"]
    return str(configurable["thread_id"]), str(configurable.get("checkpoint_ns", ""))


class _KeyChecked:
    """The vault's redaction, once the vault's key is checked against the database's: a
    saver made before ``setup()`` checks it at its first write."""

    def __init__(self, vault: Vault) -> None:
        self._vault = vault
        self._checked = False

    def __call__(self, value: Any) -> Any:
        if not self._checked:
            self._vault.check_key()
            self._checked = True
        return self._vault.redact(value)


def make_saver(
    db: Database,
    redact: Callable[[Any], Any] | None = None,
    sealer: Sealer | None = None,
    allowed_modules: Iterable[Declared] = (),
) -> WaystoneSaver:
    """LangGraph's Postgres saver on Waystone's pool: fenced by lease token, redacting
    personal data, and sealing everything at rest when a key is set."""
    return WaystoneSaver._made(db, redact, sealer, allowed_modules)
