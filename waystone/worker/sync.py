"""``waystone worker``: claim runnable runs, drive them, release them. Stateless; run as
many as you like, on as many machines as you like, against one Postgres. A worker claims
only runs of the agents it has (``WAYSTONE_AGENTS``, or ``agents=``), so pools of workers
can serve different agents side by side.

Idle workers hold no run and wait on LISTEN/NOTIFY (``waystone_runnable``), with a slow
poll as a fallback and a timer for the next wait that times out. Each worker ticks the
crons of its agents in a thread of its own (:mod:`waystone.worker.ticker`). SIGTERM (or a first
SIGINT) finishes the current step of every run in hand, releases the leases and exits; a
second SIGINT exits at once. When Postgres goes away the worker backs off and carries on.
A thread of its own delivers the runs' webhooks (:mod:`waystone._webhooks.deliver`),
woken by NOTIFY on ``waystone_webhook``; ``--until-idle`` does not wait for them. It does
wait for a run left under a lease nobody renews (a killed worker's) to expire, and then
drives it; a run whose worker ran on this machine and is gone is driven at once
(:mod:`waystone._runs.lease_wait`).

A drive stuck past its step budget (see ``waystone._runs.leases``) loses its lease and its
slot: a new slot takes its place, so the worker goes on claiming at its concurrency, and
the stuck thread, should it ever return, ends without claiming again.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import random
import signal
import threading
import time
from dataclasses import dataclass, field
from types import FrameType

import psycopg
from langgraph.runtime import RunControl

from waystone import logs, sql
from waystone._runs.lease_wait import LeaseWait, LeaseWatch
from waystone._runs.registry import Run, process_owner
from waystone._webhooks import deliver
from waystone.errors import DatabaseUnavailable, LeaseLost, WaystoneError
from waystone.runtime import Runtime
from waystone.worker.ticker import CHANNEL as CRONS
from waystone.worker.ticker import CronTicker

logger = logging.getLogger(__name__)

CHANNEL = "waystone_runnable"
HELD_SHOWN = 20  # leases an idle worker looks at: dead owners' first, then the soonest to expire


@dataclass
class WorkerStats:
    driven: int = 0
    lease_lost: int = 0
    errors: int = 0
    db_outages: int = 0
    stuck: int = 0  # drives given up past their step budget (their slots replaced)
    threads: dict[str, int] = field(default_factory=dict)


class Worker:
    """``agents``: the agents whose runs it claims (each one its runtime has); by default
    every agent its runtime has, at each claim. Never a run it could not drive."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        concurrency: int = 1,
        name: str | None = None,
        until_idle: bool = False,
        poll_seconds: float = 5.0,
        agents: list[str] | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if agents is not None:
            unknown = sorted(set(agents) - set(runtime.names()))
            known = ", ".join(runtime.names()) or "none"
            if not agents:
                raise ValueError(f"a worker serves at least one of its runtime's agents: {known}")
            if unknown:
                raise ValueError(f"a worker serves agents its runtime has: {known}; not {unknown}")
        self.rt = runtime
        self.concurrency = concurrency
        self.owner = process_owner() if name is None else f"{process_owner()}:{name}"
        self.until_idle = until_idle
        self.poll_seconds = poll_seconds
        self.agents = agents
        self.stats = WorkerStats()
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._slots: set[threading.Thread] = set()  # the slots that claim (a stuck one left)
        self._started = 0
        # the drives in hand, by (thread id, lease token): a stuck one is dropped at once
        self._controls: dict[tuple[str, int], RunControl] = {}
        self._interrupts = 0
        self._leases = LeaseWatch(relook_s=poll_seconds)
        self._leases_lock = threading.Lock()
        self.ticker = CronTicker(runtime, self._serving, self.owner, self._stopping, poll_seconds)
        self._hooks = deliver.Deliverer(runtime, self.owner, self._stopping, poll_seconds)

    # -- lifecycle -----------------------------------------------------------------------

    def run(self) -> WorkerStats:
        """Work until stopped (or, with ``until_idle``, until nothing is runnable)."""
        listener = threading.Thread(target=self._listen, name="waystone-listen", daemon=True)
        listener.start()
        self.ticker.start()
        self._hooks.start()
        for _ in range(self.concurrency):
            self._add_slot()
        while True:  # the main thread stays free for signal handlers
            with self._lock:
                alive = [slot for slot in self._slots if slot.is_alive()]
            if not alive:
                break
            alive[0].join(0.2)
        self._stopping.set()
        self._wake.set()
        self._hooks.stop()
        return self.stats

    def stop(self, reason: str = "shutdown") -> None:
        """Finish the current step of every run in hand, release the leases, stop."""
        self._stopping.set()
        self._wake.set()
        with self._lock:
            for control in self._controls.values():
                control.request_drain(reason)

    def install_signal_handlers(self) -> None:
        def on_term(signum: int, frame: FrameType | None) -> None:
            del frame
            self._interrupts += 1 if signum == signal.SIGINT else 0
            if self._interrupts >= 2:
                logger.warning("second interrupt: exiting now")
                os._exit(130)
            logger.info("stopping: finishing the current steps", extra={"signal": signum})
            self.stop(signal.Signals(signum).name)

        signal.signal(signal.SIGTERM, on_term)
        signal.signal(signal.SIGINT, on_term)
        faulthandler.register(signal.SIGUSR1)  # `kill -USR1 PID`: every thread's stack

    # -- one slot: claim, drive, repeat ---------------------------------------------------

    def _add_slot(self) -> None:
        with self._lock:
            slot = threading.Thread(
                target=self._slot, name=f"waystone-slot-{self._started}", daemon=True
            )
            self._started += 1
            self._slots.add(slot)
        slot.start()

    def _claims(self) -> bool:
        """Whether this thread is one of the worker's slots (not one replaced when stuck)."""
        with self._lock:
            return threading.current_thread() in self._slots

    def _slot(self) -> None:
        backoff, rechecks = 0.5, 0
        while not self._stopping.is_set() and self._claims():
            self._wake.clear()
            try:
                run = self.rt.claim(agents=self._serving(), owner=self.owner)
            except (DatabaseUnavailable, psycopg.OperationalError) as exc:
                self._outage(exc, backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            backoff = 0.5
            if run is None:
                if rechecks > 0:
                    # woken by a NOTIFY, or just done with a run: a runnable row may be held
                    # for a moment by the statement that announced it, or by other claims
                    # (SKIP LOCKED passes it by; a claim looks at each agent's first few
                    # queued runs only): look again soon, or at once when another NOTIFY
                    # (or a stop) comes meanwhile
                    rechecks -= 1
                    self._wake.wait(0.05)
                    continue
                if self.until_idle and self._idle():
                    left = self._left_behind()
                    if left is None:
                        self._stopping.set()
                        self._wake.set()
                        return
                    if isinstance(left, Run):
                        self._drive(left)
                        rechecks = 1
                    else:
                        self._wake.wait(left)
                    continue
                rechecks = 3 if self._wake.wait(self._idle_timeout()) else 0
                continue
            self._drive(run)
            rechecks = 1

    def _idle(self) -> bool:
        with self._lock:
            return not self._controls

    def _left_behind(self) -> Run | float | None:
        """Nothing to claim: a run a dead local worker left (claimed now), or how long to
        wait for a lease nobody renews to expire (``None``: none to wait for, the worker
        is idle), said on stderr once."""
        try:
            held = self.rt.held_leases(self._serving(), HELD_SHOWN)
            with self._leases_lock:
                wait = self._leases.look(held)
            _say(wait, self._leases.limit_s)
            for lease in wait.take:
                with self._leases_lock:
                    self._leases.claiming(lease)
                logger.warning(
                    "--until-idle: taking run %s now: its lease is held by %s, a process of "
                    "this machine that is gone",
                    lease.thread_id,
                    lease.owner,
                    extra={"thread_id": lease.thread_id},
                )
                run = self.rt.claim(
                    thread_id=lease.thread_id, agents=self._serving(), owner=self.owner
                )
                if run is not None:
                    return run  # the others are offered again at the next look
        except (WaystoneError, psycopg.OperationalError) as exc:
            logger.warning("cannot read the runs' leases, trying again: %s", exc)
            return self.poll_seconds
        return wait.wait_s

    def _serving(self) -> list[str]:
        return self.agents if self.agents is not None else self.rt.names()

    def _idle_timeout(self) -> float:
        """Until the next wait of its agents is due (by the database's clock), at most the
        poll interval. One already due that the claim did not get is another worker's for
        the moment: look again in a second, not at once."""
        try:
            due = self.rt.seconds_to_next_wake(self._serving())
        except WaystoneError:
            return self.poll_seconds
        if due is None:
            return self.poll_seconds
        return min(self.poll_seconds, due + 0.05 if due > 0 else 1.0)

    def _drive(self, run: Run) -> None:
        control = RunControl()
        key = (run.thread_id, run.lease_token)
        with self._lock:
            self._controls[key] = control
            if self._stopping.is_set():
                control.request_drain("shutdown")
        log = {"thread_id": run.thread_id, "lease_token": run.lease_token, "owner": self.owner}
        marked = logs.about_run(run.thread_id)  # every line logged while driving it says so
        slot = threading.current_thread()
        try:
            logger.info("driving run", extra=log)
            self.rt.drive(run, control=control, on_stuck=lambda: self._stuck(slot, run))
            self.stats.driven += 1
        except LeaseLost as exc:
            self.stats.lease_lost += 1
            logger.warning("lease lost, stopped driving: %s", exc, extra=log)
        except (DatabaseUnavailable, psycopg.OperationalError) as exc:
            self._outage(exc, 0.5)
            self._give_back(run)
        except WaystoneError as exc:
            self.stats.errors += 1
            logger.error("run stopped: %s", exc, extra=log)
        finally:
            logs.done_with_run(marked)
            with self._lock:
                if self._controls.get(key) is control:
                    del self._controls[key]

    def _stuck(self, slot: threading.Thread, run: Run) -> None:
        """``slot``'s drive of ``run`` is stuck (called by the heartbeat): it no longer
        counts against the concurrency, and a new slot claims in its place."""
        with self._lock:
            if slot not in self._slots:
                return
            self._slots.discard(slot)
            self._controls.pop((run.thread_id, run.lease_token), None)
            self.stats.stuck += 1
        logger.error(
            "run %s: its drive is stuck in %s; a new slot takes its place (the stuck thread "
            "ends without claiming again if it ever returns)",
            run.thread_id,
            slot.name,
            extra={"thread_id": run.thread_id, "lease_token": run.lease_token, "owner": self.owner},
        )
        if not self._stopping.is_set():
            self._add_slot()

    def _give_back(self, run: Run) -> None:
        """After an outage, hand the lease back so any worker resumes the run at once."""
        for attempt in range(20):
            if self._stopping.is_set():
                return
            try:
                self.rt.release(run)
                return
            except (DatabaseUnavailable, psycopg.OperationalError):
                time.sleep(min(0.25 * 2**attempt, 5.0))

    def _outage(self, exc: BaseException, backoff: float) -> None:
        self.stats.db_outages += 1
        logger.warning("database unavailable, retrying in %.1fs: %s", backoff, exc)
        self._stopping.wait(backoff * (0.5 + random.random() / 2))

    # -- wake-ups --------------------------------------------------------------------------

    def _listen(self) -> None:
        backoff = 0.5
        while not self._stopping.is_set():
            try:
                with psycopg.connect(self.rt.database_url, autocommit=True) as conn:
                    for channel in (CHANNEL, CRONS, deliver.CHANNEL):
                        conn.execute(sql.composed("listen", channel=channel))
                    backoff = 0.5
                    self._wake.set()  # anything that arrived while we were not listening
                    self.ticker.wake.set()
                    self._hooks.wake.set()
                    wakes = {CRONS: self.ticker.wake, deliver.CHANNEL: self._hooks.wake}
                    while not self._stopping.is_set():
                        for note in conn.notifies(timeout=0.5, stop_after=1):
                            wakes.get(note.channel, self._wake).set()
            except psycopg.OperationalError as exc:
                logger.warning("listener lost its connection: %s", exc)
                self._stopping.wait(backoff)
                backoff = min(backoff * 2, 5.0)


def _say(wait: LeaseWait, limit_s: float) -> None:
    for lease in wait.new:
        logger.warning(
            "--until-idle: waiting for run %s: its lease, held by %s, expires at %s (in %.1fs); "
            "the run is driven here then, unless its holder renews the lease (then it is left "
            "to it)",
            lease.thread_id,
            lease.owner,
            lease.expires_at.isoformat(),
            lease.expires_in,
            extra={"thread_id": lease.thread_id},
        )
    for lease in wait.beyond:
        logger.warning(
            "--until-idle: not waiting for run %s: its lease, held by %s, expires at %s (in "
            "%.0fs, more than the %.0fs this worker waits); start a worker after then to drive it",
            lease.thread_id,
            lease.owner,
            lease.expires_at.isoformat(),
            lease.expires_in,
            limit_s,
            extra={"thread_id": lease.thread_id},
        )
