"""``waystone worker --async``: up to ``--concurrency`` runs driven at once as tasks on one
event loop, for graphs whose nodes spend their time awaiting (a model, a provider).

A run is driven by :meth:`Runtime.adrive`: its async nodes run on the loop, its saves go
out on the loop's async pool, and what the drive reads and records between steps (claims,
signals, transitions) runs in a thread on the sync pool. Both pools are bounded
(``WAYSTONE_POOL_MAX_SIZE`` each), whatever the concurrency: a run holds a connection only
for a round trip, never while it awaits. Claims, wake-ups (LISTEN/NOTIFY), SIGTERM's drain
and ``--until-idle`` (its wait for a killed worker's lease included) behave as the
threaded worker's (:mod:`waystone.worker.sync`).

It is a flag, not chosen per graph: the threaded worker is the faster one for sync graphs
(no loop between a node and its save), and whether a sync node blocks is not something a
worker can tell; a graph with async nodes needs this one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading

import psycopg
from langgraph.runtime import RunControl

from waystone import logs
from waystone._runs.registry import Run
from waystone.errors import DatabaseUnavailable, LeaseLost, WaystoneError
from waystone.worker.sync import Worker, WorkerStats

logger = logging.getLogger(__name__)

CLAIMERS = 4  # claims under way at once: a burst of runnable runs is taken up in parallel


class _LoopWake:
    """The worker's wake-up, set from any thread (the listener, a signal handler), awaited
    on the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.event = asyncio.Event()

    def set(self) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has ended: nothing waits
            self._loop.call_soon_threadsafe(self.event.set)

    def clear(self) -> None:
        self.event.clear()

    async def wait(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self.event.wait(), timeout)
        except TimeoutError:
            return False
        return True


class AsyncWorker(Worker):
    """:class:`~waystone.worker.sync.Worker` driving its runs as tasks on one event loop (see
    the module)."""

    def run(self) -> WorkerStats:
        listener = threading.Thread(target=self._listen, name="waystone-listen", daemon=True)
        listener.start()
        self.ticker.start()
        self._hooks.start()
        try:
            asyncio.run(self._work())
        finally:
            self._stopping.set()
            self._hooks.stop()
        return self.stats

    async def _work(self) -> None:
        woken = _LoopWake(asyncio.get_running_loop())
        self._awake = woken
        self._wake = woken  # type: ignore[assignment]  # set from the listener, as a thread's
        self._free = asyncio.Semaphore(self.concurrency)
        self._drives: set[asyncio.Task[None]] = set()
        self._claims_out = 0  # claims under way: a run one of them takes is not idle time
        claimers = [asyncio.create_task(self._claiming()) for _ in range(CLAIMERS)]
        await asyncio.gather(*claimers)
        while self._drives:
            await asyncio.wait(set(self._drives))

    async def _claiming(self) -> None:
        outages, rechecks = 0, 0
        while not self._stopping.is_set():
            await self._free.acquire()
            if self._stopping.is_set():
                self._free.release()
                return
            self._awake.clear()
            self._claims_out += 1
            try:
                run = await asyncio.to_thread(
                    self.rt.claim, agents=self._serving(), owner=self.owner
                )
            except (DatabaseUnavailable, psycopg.OperationalError) as exc:
                self._claims_out -= 1
                self._free.release()
                outages += 1
                await self._aoutage(exc, outages)
                continue
            outages = 0
            if run is not None:
                self._start(run)
            self._claims_out -= 1
            if run is None:
                self._free.release()
                if rechecks > 0:  # as the threaded worker's slot: see Worker._slot
                    rechecks -= 1
                    await self._awake.wait(0.05)
                    continue
                if self.until_idle and self._idle():
                    self._claims_out += 1  # a run it takes is not idle time either
                    try:
                        left = await asyncio.to_thread(self._left_behind)
                        if isinstance(left, Run):
                            await self._free.acquire()
                            self._start(left)
                    finally:
                        self._claims_out -= 1
                    if left is None:
                        self._stopping.set()
                        self._awake.set()
                        return
                    if isinstance(left, Run):
                        rechecks = 1
                    else:
                        await self._awake.wait(left)
                    continue
                timeout = await asyncio.to_thread(self._idle_timeout)
                rechecks = 3 if await self._awake.wait(timeout) else 0
                continue
            rechecks = 1

    def _idle(self) -> bool:
        return self._claims_out == 0 and super()._idle()

    def _start(self, run: Run) -> None:
        control = RunControl()
        key = (run.thread_id, run.lease_token)
        with self._lock:  # registered before the claim is let go: `--until-idle` sees it
            self._controls[key] = control
            if self._stopping.is_set():
                control.request_drain("shutdown")
        task = asyncio.create_task(self._adrive(run, control), name=f"drive-{run.thread_id}")
        self._drives.add(task)
        task.add_done_callback(self._drives.discard)
        task.add_done_callback(lambda _: self._free.release())

    async def _adrive(self, run: Run, control: RunControl) -> None:
        key = (run.thread_id, run.lease_token)
        log = {"thread_id": run.thread_id, "lease_token": run.lease_token, "owner": self.owner}
        marked = logs.about_run(run.thread_id)
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        assert task is not None
        try:
            logger.info("driving run", extra=log)
            await self.rt.adrive(
                run, control=control, on_stuck=lambda: self._astuck(loop, task, run)
            )
            self.stats.driven += 1
        except LeaseLost as exc:
            self.stats.lease_lost += 1
            logger.warning("lease lost, stopped driving: %s", exc, extra=log)
        except (DatabaseUnavailable, psycopg.OperationalError) as exc:
            await self._aoutage(exc, 1)  # the first failure in a row
            await asyncio.to_thread(self._give_back, run)
        except WaystoneError as exc:
            self.stats.errors += 1
            logger.error("run stopped: %s", exc, extra=log)
        except asyncio.CancelledError:
            if not self._stopping.is_set():
                # given up as stuck: its lease lapses; the worker goes on
                logger.error("run %s: its stuck drive was cancelled", run.thread_id, extra=log)
            else:
                raise
        finally:
            logs.done_with_run(marked)
            with self._lock:
                if self._controls.get(key) is control:
                    del self._controls[key]

    def _astuck(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[None], run: Run) -> None:
        """``run``'s drive is stuck (called by the heartbeat's thread): its task is
        cancelled, so its slot claims again."""
        with self._lock:
            self._controls.pop((run.thread_id, run.lease_token), None)
            self.stats.stuck += 1
        loop.call_soon_threadsafe(task.cancel)

    async def _aoutage(self, exc: BaseException, outages: int) -> None:
        await asyncio.to_thread(self._outage, exc, outages)
