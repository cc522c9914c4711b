"""The stream log's writer: one drive of a logged run appends its live events to
``waystone.stream_events``, in batches from a thread of its own (one INSERT of every
event made in the last ``FLUSH_S``, so a token costs no commit of its own), fenced by the
drive's lease token: rows of a worker whose lease was taken over are not written.

A drive begins with one write, before the graph runs: the mark of the checkpoint it starts
from and, when earlier attempts left live events of the step after it (a worker died
mid-step), the event that names them (:data:`ABANDONED`), so a client drops their partial
messages before the retried step's events. Its values are protected (redacted, sealed)
as a run's input is.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from psycopg.types.json import Jsonb

from waystone._streams import keys

if TYPE_CHECKING:
    from waystone._db.database import Database

logger = logging.getLogger(__name__)

FLUSH_S = 0.025  # the longest an event waits for the batch it is written in
BATCH = 500  # a batch this full is written at once
ABANDONED = "waystone/abandoned"  # the event naming the attempts a crash abandoned
HIDDEN = ""  # the name of a mark: read by the servers, never sent


@dataclass
class _Pending:
    keys: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    data: list[Any] = field(default_factory=list)


class StreamLog:
    """The live events of one drive of run ``run_id`` (thread ``thread_id``) under lease
    ``attempt``; ``protect`` / ``reveal``: how values go to Postgres and back."""

    def __init__(
        self,
        db: Database,
        protect: Callable[[Any], Any],
        reveal: Callable[[Any], Any],
        thread_id: str,
        run_id: str,
        attempt: int,
    ) -> None:
        self.db, self.protect, self.reveal = db, protect, reveal
        self.thread_id, self.run_id, self.attempt = thread_id, run_id, attempt
        self.checkpoint = keys.NO_CHECKPOINT
        self.seq = 0
        self.lost = False  # the lease moved on: nothing more is written
        self._pending = _Pending()
        self._cond = threading.Condition()
        self._writing = threading.Lock()  # batches commit one after another, in key order
        self._closed = False
        self._thread: threading.Thread | None = None

    def begin(self, *, resumed: bool = False) -> None:
        """Before the graph runs from the thread's newest checkpoint: the abandoned
        attempts' event, if any, and the mark, written at once (a read and a write).
        ``resumed``: the run waited there (on an interrupt): the attempt before stopped
        there, and abandoned nothing."""
        low, high = keys.left_over("")  # after the newest checkpoint's id, in the query
        rows = self.db.fetch_all(
            "stream_log_begin",
            thread_id=self.thread_id,
            run_id=self.run_id,
            attempt=self.attempt,
            resumed=resumed,
            none=keys.NO_CHECKPOINT,
            low=low,
            high=high,
        )
        self.checkpoint = rows[0]["checkpoint_id"] or keys.NO_CHECKPOINT
        left = [row for row in rows if row["event"] is not None]
        if left:
            said = abandoned(self.checkpoint, left, self.reveal)
            self._add(keys.abandoned(self.checkpoint, self.attempt), ABANDONED, said)
        self._add(keys.mark(self.checkpoint, self.attempt), HIDDEN, {"attempt": self.attempt})
        self.flush()
        self._thread = threading.Thread(target=self._run, name="waystone-stream-log", daemon=True)
        self._thread.start()

    def at(self, checkpoint: str) -> None:
        """The graph committed root checkpoint ``checkpoint``: what follows is its next step's."""
        self.checkpoint, self.seq = checkpoint, 0
        self._add(keys.mark(checkpoint, self.attempt), HIDDEN, {"attempt": self.attempt})

    def add(self, event: str, data: Any) -> None:
        """A live event of the current step, written with the next batch."""
        self.seq += 1
        self._add(keys.live(self.checkpoint, self.attempt, self.seq), event, data)

    def flush(self) -> None:
        """Write every event added so far, now. A write that fails loses its live events
        (the committed ones are not): the graph goes on."""
        with self._writing:
            with self._cond:
                pending, self._pending = self._pending, _Pending()
            try:
                self._write(pending)
            except Exception:
                logger.warning("stream log write failed", exc_info=True, extra=self._log)

    def close(self) -> None:
        """Write what is left and stop the writer."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()
        self.flush()

    def _add(self, key: str, event: str, data: Any) -> None:
        with self._cond:
            self._pending.keys.append(key)
            self._pending.events.append(event)
            self._pending.data.append(Jsonb(self.protect(data)))
            if len(self._pending.keys) == 1 or len(self._pending.keys) >= BATCH:
                self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending.keys and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                deadline = time.monotonic() + FLUSH_S
                while len(self._pending.keys) < BATCH and not self._closed:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
            self.flush()

    def _write(self, pending: _Pending) -> None:
        if not pending.keys or self.lost:
            return
        row = self.db.fetch_one(
            "stream_log_append",
            run_id=self.run_id,
            thread_id=self.thread_id,
            attempt=self.attempt,
            keys=pending.keys,
            events=pending.events,
            data=pending.data,
        )
        if row is not None and row["n"] == 0:
            self.lost = True
            logger.info("stream log: the lease moved on, writing no more", extra=self._log)

    @property
    def _log(self) -> dict[str, Any]:
        return {"thread_id": self.thread_id, "lease_token": self.attempt}


def abandoned(
    checkpoint: str, rows: list[dict[str, Any]], reveal: Callable[[Any], Any]
) -> dict[str, Any]:
    """What the abandoned-attempts event says: the attempts that made ``rows`` (their live
    events of the step after ``checkpoint``) and the ids of the messages they streamed."""
    attempts = sorted({int(row["attempt"]) for row in rows})
    messages: list[str] = []
    for row in rows:
        if row["event"].partition("|")[0] != "messages":
            continue
        data = reveal(row["data"])
        found = data[0].get("id") if isinstance(data, list) and data else None
        if isinstance(found, str) and found not in messages:
            messages.append(found)
    return {"checkpoint_id": checkpoint, "attempts": attempts, "message_ids": messages}


def mark_logged(db: Database, thread_id: str, number: int, run_id: str) -> None:
    """Run ``number`` of ``thread_id`` is logged from now on."""
    db.execute("stream_log_mark", thread_id=thread_id, number=number, run_id=run_id)


def sweep(db: Database, retention_s: float, limit: int = 1000) -> int:
    """Delete the logs of runs that ended more than ``retention_s`` ago; how many."""
    return len(db.fetch_all("stream_log_sweep", retention_s=retention_s, limit=limit))


@dataclass(frozen=True)
class Logged:
    """A live event as a stream reads it back."""

    key: str
    attempt: int
    event: str
    data: Any


def read_after(
    db: Database, reveal: Callable[[Any], Any], thread_id: str, run_id: str, after: str
) -> tuple[int | None, list[Logged]]:
    """The run's current lease token (``None``: no such thread) and its live events after
    key ``after``, in order."""
    rows = db.fetch_all("stream_log_after", thread_id=thread_id, run_id=run_id, after=after)
    if not rows:
        return None, []
    found = [
        Logged(row["event_key"], int(row["attempt"]), row["event"], reveal(row["data"]))
        for row in rows
        if row["event_key"] is not None
    ]
    return int(rows[0]["lease_token"]), found
