"""The async saver of each running event loop: a psycopg ``AsyncConnectionPool`` belongs
to the loop that opened it, so a process driving runs on several loops (``asyncio.run``
called twice, a worker's loop beside a notebook's) has one pool per loop, opened on the
loop's first async drive, and on it a copy of each graph it drives, saving through it.

Each loop's saver is a twin of a graph's sync saver: it shares what that saver holds
for the next save (a node's ledger changes ride there, see ``WaystoneSaver.ride``), so a
graph driven either way commits the same statements with its checkpoints.

A loop's pool is closed when the loop ends (``asyncio.run`` cancels the task that keeps
it), or when the runtime is closed, whichever comes first.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from psycopg_pool import AsyncConnectionPool

from waystone._checkpointing.aio import AsyncConn, AsyncWaystoneSaver, open_async_pool, twin_of
from waystone._checkpointing.saver import WaystoneSaver
from waystone.config import Settings

logger = logging.getLogger(__name__)

CLOSE_WAIT_S = 5.0  # how long closing a runtime waits for another thread's loop to close


@dataclass
class LoopSaver:
    """One loop's pool, and the graphs whose saves go through it: by name, each with the
    sync graph it was copied from."""

    apool: AsyncConnectionPool[AsyncConn]
    graphs: dict[str, Any] = field(default_factory=dict)

    def twin(self, saver: WaystoneSaver) -> AsyncWaystoneSaver:
        """``saver``, saving natively on this loop's pool (see the module)."""
        return twin_of(saver, self.apool)


@dataclass
class _Opened:
    loop: asyncio.AbstractEventLoop
    ready: asyncio.Task[LoopSaver]
    keeper: asyncio.Task[None] | None = None
    closing: bool = False  # by ``close``, on a loop that goes on (else: the loop's end)
    closed: threading.Event = field(default_factory=threading.Event)


class LoopSavers:
    """The async savers of the loops this runtime has driven runs on."""

    def __init__(self, settings: Settings, url: str) -> None:
        self._settings = settings
        self._url = url
        self._lock = threading.Lock()
        self._loops: dict[asyncio.AbstractEventLoop, _Opened] = {}

    async def current(self) -> LoopSaver:
        """The running loop's pool and saver, opened on its first call there."""
        loop = asyncio.get_running_loop()
        with self._lock:
            opened = self._loops.get(loop)
            if opened is None:
                opened = _Opened(loop, loop.create_task(self._open()))
                self._loops[loop] = opened
        # shielded: a caller cancelled while the pool opens leaves it to the others
        return await asyncio.shield(opened.ready)

    async def _open(self) -> LoopSaver:
        loop = asyncio.get_running_loop()
        try:
            apool = await open_async_pool(self._settings, self._url)
        except BaseException:
            with self._lock:  # the next drive on this loop tries again
                self._loops.pop(loop, None)
            raise
        opened = self._loops[loop]
        opened.keeper = loop.create_task(self._keep(opened, apool), name="waystone-async-pool")
        return LoopSaver(apool)

    async def _keep(self, opened: _Opened, apool: AsyncConnectionPool[AsyncConn]) -> None:
        """Holds the loop's pool open until cancelled: by the loop's end, or by ``close``."""
        try:
            await asyncio.Event().wait()
        finally:
            with self._lock:
                self._loops.pop(opened.loop, None)
            try:
                if not opened.closing:
                    # the loop's end cancels the pool's own tasks too: let them finish, as
                    # the pool cannot stop them in its usual way
                    for _ in range(3):
                        await asyncio.sleep(0)
                await apool.close(timeout=CLOSE_WAIT_S if opened.closing else 0)
            except BaseException:
                logger.warning("an async pool did not close cleanly", exc_info=True)
            finally:
                opened.closed.set()

    def close(self) -> None:
        """Close every loop's pool: at once for a loop running in another thread, as soon
        as this thread's loop runs again for its own (closing is async there)."""
        with self._lock:
            loops = list(self._loops.values())
        for opened in loops:
            if opened.loop.is_closed() or opened.keeper is None:
                continue
            opened.closing = True
            try:
                opened.loop.call_soon_threadsafe(opened.keeper.cancel)
            except RuntimeError:  # closed meanwhile: its pool went with it
                continue
            elsewhere = opened.loop.is_running() and not _runs_here(opened.loop)
            if elsewhere and not opened.closed.wait(CLOSE_WAIT_S):
                logger.warning("an event loop's async pool did not close in time")

    async def aclose(self) -> None:
        """Close the running loop's pool (the others as ``close`` does)."""
        with self._lock:
            here = self._loops.get(asyncio.get_running_loop())
        if here is not None and here.keeper is not None:
            here.closing = True
            here.keeper.cancel()
            await asyncio.wait([here.keeper])
        await asyncio.to_thread(self.close)


def _runs_here(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
