"""Waystone's LangGraph checkpointer: the stock Postgres saver, fenced, with async methods.

Every checkpoint, blob and pending write of a Waystone run carries the lease token of the
process that drives it (``config["configurable"]["lease_token"]``); Postgres rejects the
write (SQLSTATE WS410, :class:`~waystone.errors.LeaseLost`) when the token is no longer the
run's current one. Threads that are not Waystone runs are not fenced, so the saver still
behaves as a plain LangGraph checkpointer (and passes the conformance suite).

The async methods run the sync ones in a thread, so notebooks and async servers can use
the same saver.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Interrupt, Send
from psycopg import Cursor
from psycopg.rows import DictRow, dict_row

from waystone import sql
from waystone.checkpointing.database import FENCE_SQL, Database, translate
from waystone.privacy.seal import SealedSerializer, Sealer, open_value

BOX = "__waystone_boxed__"
STRUCTURAL = frozenset({"source", "step", "parents", "run_id"})  # left readable: queried

LEASE_KEY = "lease_token"


class WaystoneSaver(PostgresSaver):
    """``redact`` (the vault's) runs over every checkpoint value, the inline primitives
    LangGraph keeps as plain JSONB, the metadata and every pending write, before they are
    written: personal data never reaches LangGraph's tables."""

    def __init__(
        self,
        db: Database,
        redact: Callable[[Any], Any] | None = None,
        sealer: Sealer | None = None,
    ) -> None:
        super().__init__(db.pool, serde=SealedSerializer(JsonPlusSerializer(), sealer))
        self._pool = db.pool
        self._fence = threading.local()
        self._redact = redact
        self._sealer = sealer

    # -- at rest: primitives boxed into (sealed) blobs, metadata sealed, then undone ------

    def _protect(
        self, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> tuple[Checkpoint, CheckpointMetadata]:
        values = checkpoint["channel_values"]
        if self._redact is not None:
            values = self._redact(values)
            metadata = self._redact(metadata)
        if self._sealer is not None:
            # LangGraph keeps str/int/float/bool values inline in the checkpoint's JSONB;
            # boxed, they travel as blobs through the sealed serializer instead
            values = {
                k: {BOX: v} if isinstance(v, str | int | float | bool) else v
                for k, v in values.items()
            }
            metadata = {
                k: v if k in STRUCTURAL else self._sealer.seal(v) for k, v in metadata.items()
            }  # type: ignore[assignment]
        return {**checkpoint, "channel_values": values}, metadata

    def _reveal(self, found: CheckpointTuple | None) -> CheckpointTuple | None:
        if found is None:
            return None
        values = found.checkpoint.get("channel_values", {})
        for k, v in list(values.items()):
            if isinstance(v, dict) and set(v) == {BOX}:
                values[k] = v[BOX]
        for k, v in list(found.metadata.items()):
            found.metadata[k] = open_value(self._sealer, v)  # type: ignore[literal-required]
        return found

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._reveal(super().get_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        for found in super().list(config, filter=filter, before=before, limit=limit):
            revealed = self._reveal(found)
            assert revealed is not None
            yield revealed

    @contextmanager
    def _fenced(self, config: RunnableConfig) -> Iterator[None]:
        token = (config.get("configurable") or {}).get(LEASE_KEY)
        self._fence.token = token
        try:
            yield
        except psycopg.DatabaseError as exc:
            raise translate(exc) from exc
        finally:
            self._fence.token = None

    @contextmanager
    def _cursor(self, *, pipeline: bool = False) -> Iterator[Cursor[DictRow]]:
        token = getattr(self._fence, "token", None)
        if token is None:
            with super()._cursor(pipeline=pipeline) as cur:
                yield cur
            return
        # One transaction: the fence setting, then the saver's statements.
        with self.lock, self._pool.connection() as conn, conn.transaction():
            with conn.cursor(binary=True) as setter:
                setter.execute(FENCE_SQL, (str(token),))
            with conn.cursor(binary=True, row_factory=dict_row) as cur:
                yield cur

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        checkpoint, metadata = self._protect(checkpoint, metadata)
        with self._fenced(config):
            return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if self._redact is not None:
            writes = [(channel, self._redact_value(value)) for channel, value in writes]
        with self._fenced(config):
            super().put_writes(config, writes, task_id, task_path)

    def _redact_value(self, value: Any) -> Any:
        assert self._redact is not None
        if isinstance(value, Send):
            return Send(value.node, self._redact(value.arg))
        if isinstance(value, BaseException):  # a failed task's error, kept as a pending write
            message = self._redact(str(value))
            try:
                return type(value)(message)
            except Exception:
                return RuntimeError(f"{type(value).__name__}: {message}")
        if isinstance(value, list) and value and all(isinstance(v, Interrupt) for v in value):
            return [Interrupt(value=self._redact(v.value), id=v.id) for v in value]
        return self._redact(value)

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
            with self.lock, self._pool.connection() as conn, conn.transaction():
                if token is not None:
                    conn.execute(FENCE_SQL, (str(token),))
                yield conn
        except psycopg.DatabaseError as exc:
            raise translate(exc) from exc

    def copy_thread(
        self, source_thread_id: str, target_thread_id: str, *, until: str | None = None
    ) -> None:
        """Copy every checkpoint, blob and pending write of a thread to another (up to and
        including checkpoint ``until``, when given: a fork at that point)."""
        params = {"source": source_thread_id, "target": target_thread_id, "until": until}
        with self._transaction() as conn:
            for name in ("copy_checkpoints", "copy_checkpoint_blobs", "copy_checkpoint_writes"):
                conn.execute(sql.query(name), params)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their pending writes) that the given runs made."""
        ids = [str(r) for r in run_ids]
        if not ids:
            return
        with self._transaction() as conn:
            conn.execute(sql.query("delete_writes_for_runs"), {"run_ids": ids})
            conn.execute(sql.query("delete_checkpoints_for_runs"), {"run_ids": ids})

    # -- async: the sync methods in a worker thread ------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        items = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in items:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)


def make_saver(
    db: Database, redact: Callable[[Any], Any] | None = None, sealer: Sealer | None = None
) -> WaystoneSaver:
    """LangGraph's Postgres saver on Waystone's pool: fenced by lease token, redacting
    personal data, and sealing everything at rest when a key is set."""
    return WaystoneSaver(db, redact, sealer)
