"""Signals: decisions and events addressed to a run, recorded once and consumed once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from waystone._db.database import Conn, Database
from waystone._identifiers import check_identifier
from waystone.errors import TransitionNotAllowed

APPROVAL = "approval"  # the signal that carries a person's decision on an approval
RESUME = "resume"  # the signal that carries the value answering a graph's interrupt()


@dataclass(frozen=True)
class Signal:
    id: int
    thread_id: str
    name: str
    dedupe_key: str
    payload: dict[str, Any]
    actor: str
    created_at: datetime
    reserved_for: str | None
    consumed_at: datetime | None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Signal:
        return cls(**{k: row[k] for k in cls.__dataclass_fields__})


class SignalBox:
    def __init__(
        self,
        db: Database,
        redact: Callable[[Any], Any] = lambda v: v,
        reveal: Callable[[Any], Any] = lambda v: v,
    ) -> None:
        self.db = db
        self.redact = redact
        self.reveal = reveal

    def _signal(self, row: dict[str, Any]) -> Signal:
        return Signal.from_row({**row, "payload": self.reveal(row["payload"])})

    def record(
        self,
        thread_id: str,
        name: str,
        dedupe_key: str,
        payload: dict[str, Any],
        actor: str,
        conn: Conn | None = None,
    ) -> tuple[Signal, bool]:
        """Record a signal; if one with the same dedupe key exists, return it and ``False``.
        With ``conn``, inside the caller's transaction. A new one is refused
        (:class:`TransitionNotAllowed`) once the thread's run has ended."""
        rows = self.db.execute(
            "record_signal",
            conn=conn,
            thread_id=thread_id,
            name=check_identifier("signal name", name),
            dedupe_key=check_identifier("signal key", dedupe_key),
            payload=self.redact(payload),
            actor=actor,
        )
        if rows:
            return self._signal(rows[0]), True
        existing = self.get(thread_id, name, dedupe_key, conn=conn)
        if existing is None:
            raise TransitionNotAllowed(
                f"run {thread_id} has ended (done or failed) and takes no signals; "
                "requeue it first if it should go on"
            )
        return existing, False

    def get(
        self, thread_id: str, name: str, dedupe_key: str, conn: Conn | None = None
    ) -> Signal | None:
        """The signal recorded with this dedupe key, consumed or not."""
        rows = self.db.execute(
            "get_signal", conn=conn, thread_id=thread_id, name=name, dedupe_key=dedupe_key
        )
        return self._signal(rows[0]) if rows else None

    def pending(self, thread_id: str) -> list[Signal]:
        return [self._signal(r) for r in self.db.fetch_all("pending_signals", thread_id=thread_id)]

    def reserve(self, signal_id: int, interrupt_id: str) -> None:
        """Hand a signal to an interrupt before resuming it: if the process dies before the
        resume is stored, the signal is delivered to the same interrupt again; once the
        interrupt is answered, the signal is consumed."""
        self.db.execute("reserve_signal", id=signal_id, interrupt_id=interrupt_id)

    def consume(self, signal_id: int, conn: Conn | None = None) -> None:
        self.db.execute("consume_signal", conn=conn, id=signal_id)

    def refuse(self, signal_id: int, conn: Conn | None = None) -> None:
        """Spend a value its interrupt refused, so that another can be given for it."""
        self.db.execute("refuse_signal", conn=conn, id=signal_id)

    def reopen_settled(self, thread_id: str, conn: Conn | None = None) -> int:
        """The signals the stop of the thread's run settled, pending again: for the run
        requeued after that stop; how many."""
        return len(self.db.execute("reopen_settled_signals", conn=conn, thread_id=thread_id))
