"""What tells a server's streams and waits that their run moved: one follower per server
process reads, every ``TICK_S``, the run row and the newest checkpoint of every thread
followed in that process, in one query, and wakes the followers of each thread whose
row or newest checkpoint changed. A process of a hundred streams makes one query per
tick, not a hundred; a stream reads its run again only when it moved (or, for a run whose
live events it streams, when its stream log grew). The graph's own
checkpoints are enough: a subgraph's are streamed once the graph's next one commits (see
:mod:`waystone.web.checkpoints`), and each reads as one step back along the primary key.

It polls rather than LISTENs: a notification per checkpoint needs a trigger on
``public.checkpoints``, on every worker's per-step path, where Postgres serializes the
commits of the transactions that notify (one queue lock); that table is made by
LangGraph's ``setup()`` after Waystone's migrations. Waking on a notification instead
of a tick would change :meth:`Follower._run` only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool

from waystone import sql

if TYPE_CHECKING:
    from waystone.runtime import Runtime

logger = logging.getLogger(__name__)

TICK_S = 0.05


class Follower:
    """Wakes, through an :class:`asyncio.Event` each, whoever follows a thread when its
    run row or its checkpoints change. Lives on the server's event loop."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self._waiting: dict[str, set[asyncio.Event]] = {}
        self._marks: dict[str, tuple[Any, ...]] = {}
        self._logged: dict[str, str] = {}  # a thread's run whose stream log is followed
        self._task: asyncio.Task[None] | None = None
        self._someone = asyncio.Event()

    @contextlib.asynccontextmanager
    async def follow(
        self, thread_id: str, logged: str | None = None
    ) -> AsyncIterator[asyncio.Event]:
        """An event set now (read the run once at the start) and at each change of the
        thread's run (``logged``: and of that run's stream log), until the block ends;
        clear it before each read."""
        changed = asyncio.Event()
        changed.set()
        self._waiting.setdefault(thread_id, set()).add(changed)
        if logged is not None:
            self._logged[thread_id] = logged
        self._someone.set()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        try:
            yield changed
        finally:
            followers = self._waiting.get(thread_id, set())
            followers.discard(changed)
            if not followers:
                self._waiting.pop(thread_id, None)
                self._marks.pop(thread_id, None)
                self._logged.pop(thread_id, None)

    async def close(self) -> None:
        """Stop following (the server shuts down): its task ends with the loop's life."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while True:
            if not self._waiting:
                self._someone.clear()
                await self._someone.wait()
            try:
                await self._tick()
            except Exception:  # the database away: the streams wait, the next tick retries
                logger.warning("following runs failed; trying again", exc_info=True)
            await asyncio.sleep(TICK_S)

    async def _tick(self) -> None:
        threads = list(self._waiting)
        logged = [self._logged.get(thread_id) for thread_id in threads]
        rows = await run_in_threadpool(self._read, threads, logged)
        for row in rows:
            thread_id = row.pop("thread_id")
            mark = tuple(row.values())
            if self._marks.get(thread_id) != mark:
                self._marks[thread_id] = mark
                for changed in self._waiting.get(thread_id, ()):
                    changed.set()

    def _read(self, threads: list[str], logged: list[str | None]) -> list[dict[str, Any]]:
        with self.rt.connection() as conn:
            params = {"threads": threads, "logged": logged}
            return list(conn.execute(sql.query("follow_marks"), params).fetchall())
