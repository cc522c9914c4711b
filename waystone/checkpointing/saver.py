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
from collections.abc import AsyncIterator, Iterator, Sequence
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
from psycopg import Cursor
from psycopg.rows import DictRow, dict_row

from waystone.checkpointing.database import FENCE_SQL, Database, translate

LEASE_KEY = "lease_token"


class WaystoneSaver(PostgresSaver):
    def __init__(self, db: Database) -> None:
        super().__init__(db.pool)
        self._pool = db.pool
        self._fence = threading.local()

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
        with self._fenced(config):
            return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        with self._fenced(config):
            super().put_writes(config, writes, task_id, task_path)

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


def make_saver(db: Database) -> WaystoneSaver:
    """LangGraph's Postgres saver on Waystone's pool, fenced by lease token."""
    return WaystoneSaver(db)
