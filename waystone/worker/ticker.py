"""A worker's cron ticker: one thread that takes the due ticks of the crons of the
worker's graphs and sleeps until the next one is due, by the database's clock.

It has a thread of its own, not a claim slot's turn: a worker whose slots all drive long
runs still ticks on time. A cron made or changed anywhere wakes it (``NOTIFY
waystone_crons``, heard by the worker's listener); the worker's poll interval bounds its
sleep, as a fallback for a lost notification. Any number of tickers may be up: a tick is
taken by one of them (see :mod:`waystone._runtime.crons`). It also sweeps the stream logs
past their retention (:mod:`waystone._streams.log`), once a minute.

The same thread sweeps the store's expired items, every ``store.ttl.sweep_interval_minutes``
(five by default): one delete, whichever worker comes first.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import psycopg

from waystone._retry import RetryPolicy
from waystone.errors import DatabaseUnavailable, WaystoneError
from waystone.runtime import Runtime

logger = logging.getLogger(__name__)

CHANNEL = "waystone_crons"
SWEEP_S = 60.0  # how often it deletes the stream logs past their retention
OUTAGE = RetryPolicy(base_delay_s=0.5, max_delay_s=5.0, jitter=False)  # attempts unbounded


class CronTicker:
    """``agents``: the graphs whose crons it ticks (the worker's, asked at each tick);
    ``stopping``: set when the worker stops."""

    def __init__(
        self,
        runtime: Runtime,
        agents: Callable[[], list[str]],
        owner: str,
        stopping: threading.Event,
        poll_seconds: float,
    ) -> None:
        self.rt, self.agents, self.owner = runtime, agents, owner
        self.stopping, self.poll_seconds = stopping, poll_seconds
        self.wake = threading.Event()
        self.ticked = 0
        self.logs_swept_at: float | None = None  # monotonic time of the last log sweep
        self.swept_at: float | None = None  # monotonic time of the last store sweep

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="waystone-ticker", daemon=True)
        thread.start()
        return thread

    def run(self) -> None:
        outages = 0
        while not self.stopping.is_set():
            self.wake.clear()
            try:
                self.ticked += self.rt.crons.tick(self.agents(), self.owner)
                self._sweep_logs()
                timeout = min(self._until_next(), self._sweep())
                outages = 0
            except (DatabaseUnavailable, psycopg.OperationalError) as exc:
                outages += 1
                timeout = OUTAGE.delay(outages, 0.0)
                logger.warning("ticker: database unavailable, retrying in %.1fs: %s", timeout, exc)
            except (WaystoneError, psycopg.Error) as exc:  # its transaction undone: retried
                logger.error("ticker: a tick failed: %s", exc)
                timeout = self.poll_seconds
            self.wake.wait(timeout)

    def _sweep_logs(self) -> None:
        """Stream logs past their retention go, once a minute (any ticker may)."""
        now = time.monotonic()
        if self.logs_swept_at is None or now - self.logs_swept_at >= SWEEP_S:
            self.logs_swept_at = now
            self.rt.sweep_stream_logs()

    def _sweep(self) -> float:
        """Sweep the store when its time has come; until the next sweep."""
        every = self.rt.store_sweep_seconds
        now = time.monotonic()
        if self.swept_at is None or now - self.swept_at >= every:
            swept = self.rt.sweep_store()
            self.swept_at = now
            if swept:
                logger.info("ticker: swept %d expired store items", swept)
            return every
        return every - (now - self.swept_at)

    def _until_next(self) -> float:
        """Until the next cron is due, at most the poll interval. One already due that
        this tick did not take is another ticker's for the moment: look again soon."""
        due = self.rt.crons.seconds_to_next(self.agents())
        if due is None:
            return self.poll_seconds
        return min(self.poll_seconds, due + 0.01 if due > 0 else 0.2)
