"""The effect ledger: the one class that reads and writes ``waystone.effects``."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from waystone import sql
from waystone._checkpointing.held import Statement
from waystone._db.database import Database, jsonify, stored

logger = logging.getLogger(__name__)

Rider = Callable[[str, int, list[Statement]], None]  # (thread, lease token, statements)

WRITTEN_KEPT = 1024  # effects remembered as this process wrote them


@dataclass(frozen=True)
class Note:
    """An event for the run's history, written in the same transaction as a ledger change."""

    thread_id: str
    kind: str
    reason: str
    evidence: dict[str, Any]


@dataclass(frozen=True)
class Effect:
    key: str
    thread_id: str
    ordinal: int
    tool: str
    args: dict[str, Any]
    status: str
    attempts: int
    receipt: dict[str, Any] | None
    confirmation: dict[str, Any] | None
    error: str | None
    created_at: datetime
    updated_at: datetime
    # monotonic time before this process's last write of it that checked the lease token
    # (the fence): the run was still this lease's then (None: no such write)
    fenced_at: float | None = None
    tool_call_id: str | None = None  # the model's tool call it was made for, if any

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Effect:
        return cls(**{k: row[k] for k in cls.__dataclass_fields__ if k in row})


class Ledger:
    """``redact`` runs over arguments, receipts, confirmations and errors before writing.
    ``ride`` (the saver's) lets a change commit with the next save of the writing node's
    writes."""

    def __init__(
        self,
        db: Database,
        redact: Callable[[Any], Any] = lambda v: v,
        reveal: Callable[[Any], Any] = lambda v: v,
        ride: Rider | None = None,
    ) -> None:
        self.db = db
        self.redact = redact
        self.reveal = reveal
        self.ride = ride
        # effects this process last wrote, by (writing run, key), with the lease token
        self._written: OrderedDict[tuple[str, str], tuple[int, Effect]] = OrderedDict()
        # intents ride_intent inserted, not yet taken by a perform (see `opened`)
        self._opened: OrderedDict[tuple[str, str], tuple[int, Effect]] = OrderedDict()
        self._lock = threading.Lock()

    def _wrote(self, effect: Effect, fence: int | None, writer: str | None) -> Effect:
        if fence is not None and writer is not None:
            with self._lock:
                self._written[(writer, effect.key)] = (fence, effect)
                self._written.move_to_end((writer, effect.key))
                while len(self._written) > WRITTEN_KEPT:
                    self._written.popitem(last=False)
        return effect

    def written(self, key: str, fence: int | None, writer: str) -> Effect | None:
        """The effect as run ``writer`` last wrote it in this process under lease ``fence``
        (no read), or ``None``. Under its lease no other process writes for that run."""
        with self._lock:
            found = self._written.get((writer, key))
        return found[1] if found is not None and fence is not None and found[0] == fence else None

    def _effect(self, row: dict[str, Any]) -> Effect:
        opened = {**row}
        for name in ("args", "receipt", "confirmation", "error"):
            opened[name] = self.reveal(row.get(name))
        return Effect.from_row(opened)

    def get(self, key: str) -> Effect | None:
        row = self.db.fetch_one("get_effect", key=key)
        return self._effect(row) if row else None

    def for_thread(self, thread_id: str) -> list[Effect]:
        return [self._effect(r) for r in self.db.fetch_all("list_effects", thread_id=thread_id)]

    def for_tool_calls(
        self, thread_id: str, tool_call_ids: list[str], tools: list[str], since: datetime | None
    ) -> list[Effect]:
        """The thread's effects made for those tool calls; and its effects of ``tools``
        made after ``since`` for no known tool call (``since`` None: none of those)."""
        rows = self.db.fetch_all(
            "effects_of_tool_calls",
            thread_id=thread_id,
            tool_call_ids=tool_call_ids,
            tools=tools,
            since=since,
        )
        return [self._effect(r) for r in rows]

    def seconds_to_deadline(self, key: str, timeout_s: float) -> float:
        """Seconds until the latest deadline a call of the effect was sent with has passed,
        by the database's clock (negative: passed); ``timeout_s`` stands in for a call that
        recorded none."""
        row = self.db.fetch_one("effect_deadline_in", key=key, timeout_s=timeout_s)
        return float(row["due_in"]) if row else 0.0

    def open_intent(
        self,
        *,
        key: str,
        thread_id: str,
        ordinal: int,
        tool: str,
        args: dict[str, Any],
        timeout_s: float | None,
        fence: int | None = None,
        tool_call_id: str | None = None,
    ) -> tuple[Effect, bool]:
        """The effect for ``key``: a new intent, committed (and ``True``), or the row the
        ledger already holds (and ``False``), which this call leaves as it is."""
        row = self._intent(
            "open_intent", key, thread_id, ordinal, tool, args, timeout_s, fence, tool_call_id
        )
        if row is None:
            # another run (a fork and its origin share keys) inserted the key while this
            # statement ran: its snapshot cannot see that row, a new statement does
            existing = self.get(key)
            if existing is None:
                raise RuntimeError(f"the effect {key!r} is neither new nor in the ledger")
            return existing, False
        return self._wrote(self._effect(row), fence, thread_id), bool(row["fresh"])

    def ride_intent(
        self,
        *,
        key: str,
        thread_id: str,
        ordinal: int,
        tool: str,
        args: dict[str, Any],
        fence: int,
    ) -> None:
        """Open the intent for ``key`` in the transaction of the run's next checkpoint, not
        in a commit of its own: authorize's, once it approves an action whose provider
        deduplicates on the key. If that
        transaction inserted the row, :meth:`opened` hands it to the next perform of the key
        by this run under this lease, which calls the provider at once: nothing can have
        called it since the row was inserted. A crash before then leaves an intent that
        the resumed execute reconciles, as after a crash past ``open_intent``. The
        statement goes out only with a checkpoint (or a flush), never with pending writes
        that LangGraph does not wait for (see the saver's ``put_writes``)."""
        assert self.ride is not None, "riding needs the saver's ride"
        params = self._intent_params(key, thread_id, ordinal, tool, args, None)
        sent = time.monotonic()  # before the checkpoint that carries it checks the fence

        def inserted(rows: list[dict[str, Any]]) -> None:
            if not rows:  # the key was there already: perform reads what it holds
                return
            with self._lock:
                effect = replace(self._effect(rows[0]), fenced_at=sent)
                self._opened[(thread_id, key)] = (fence, effect)
                while len(self._opened) > WRITTEN_KEPT:
                    self._opened.popitem(last=False)

        self.ride(thread_id, fence, [(sql.query("ride_intent"), jsonify(params), inserted)])

    def opened(self, key: str, fence: int | None, thread_id: str) -> Effect | None:
        """The intent :meth:`ride_intent` inserted for run ``thread_id`` under lease
        ``fence``, handed out once (the caller is about to call the provider); ``None``
        when there is none, or it was inserted under another lease."""
        with self._lock:
            found = self._opened.pop((thread_id, key), None)
        if found is None or fence is None or found[0] != fence:
            return None
        return self._wrote(found[1], fence, thread_id)

    def untaken(self, thread_id: str, fence: int) -> list[str]:
        """The keys of the intents :meth:`ride_intent` inserted for run ``thread_id`` under
        lease ``fence`` that no perform took (the provider was not called for them under
        that lease), forgotten here: for a run that stops driving."""
        with self._lock:
            found = [k for k, (f, _) in self._opened.items() if k[0] == thread_id and f == fence]
            for k in found:
                del self._opened[k]
        return [key for _, key in found]

    def hand_back(self, thread_id: str, fence: int) -> tuple[int, int]:
        """Count the :meth:`untaken` intents of run ``thread_id`` under lease ``fence`` as
        no attempt: the run stopped between authorize, whose checkpoint they rode with, and
        execute (a drain), so the provider was never called for them. The next perform
        applies such an intent under its key as its first attempt, not its second. Best
        effort (only a count is at stake): returns how many changed, of how many untaken.

        Only an intent still at its first count changes, and that is what makes this safe:
        an untaken entry exists only where this lease's ride inserted the row (at one
        attempt), and any call that did not take it first went through
        :meth:`record_intent`, which counted a second (an entry answered after execute had
        read the ledger). Such a row, or one applied since, is left as it is."""
        keys = self.untaken(thread_id, fence)
        if not keys:
            return 0, 0
        try:
            rows = self.db.fetch_all(
                "hand_back_intents", fence=fence, thread_id=thread_id, keys=keys, lease_token=fence
            )
        except Exception:
            logger.warning("could not hand back %s", keys, exc_info=True)
            return 0, len(keys)
        return len(rows), len(keys)

    def late_receipt(self, thread_id: str, key: str, receipt: dict[str, Any]) -> bool:
        """Record the receipt of an effect this process applied for ``thread_id`` after
        losing its lease (its own fenced write was refused): only on an effect still
        waiting for its outcome. Best effort, like any write of a process that lost the
        run: whether it was recorded."""
        try:
            rows = self.db.batch(
                [
                    ("late_receipt_fence", {"thread_id": thread_id}),
                    (
                        "late_receipt",
                        {"thread_id": thread_id, "key": key, "receipt": self.redact(receipt)},
                    ),
                ]
            )[1]
        except Exception:
            logger.warning("could not record the late receipt of %s", key, exc_info=True)
            return False
        return bool(rows)

    def late_receipts(self, thread_id: str, fence: int) -> int:
        """Record the receipts this process worked out for ``thread_id`` under lease
        ``fence`` (to commit with a checkpoint the lost lease refused): how many landed."""
        with self._lock:
            mine = [
                e
                for (writer, _), (f, e) in self._written.items()
                if writer == thread_id
                and f == fence
                and e.receipt is not None
                and e.status in ("applied", "confirmed")
            ]
        return sum(self.late_receipt(thread_id, e.key, e.receipt or {}) for e in mine)

    def record_intent(
        self,
        *,
        key: str,
        thread_id: str,
        ordinal: int,
        tool: str,
        args: dict[str, Any],
        timeout_s: float | None,
        fence: int | None = None,
        tool_call_id: str | None = None,
    ) -> Effect:
        """Commit the intent (or count one more attempt) before calling the provider."""
        row = self._intent(
            "record_intent", key, thread_id, ordinal, tool, args, timeout_s, fence, tool_call_id
        )
        assert row is not None
        return self._wrote(self._effect(row), fence, thread_id)

    def _intent(
        self,
        query: str,
        key: str,
        thread_id: str,
        ordinal: int,
        tool: str,
        args: dict[str, Any],
        timeout_s: float | None,
        fence: int | None,
        tool_call_id: str | None = None,
    ) -> dict[str, Any] | None:
        params = self._intent_params(key, thread_id, ordinal, tool, args, timeout_s, tool_call_id)
        sent = time.monotonic()
        row = self.db.fetch_one(query, fence=fence, **params)
        if row is not None and fence is not None:
            row["fenced_at"] = sent
        return row

    def _intent_params(
        self,
        key: str,
        thread_id: str,
        ordinal: int,
        tool: str,
        args: dict[str, Any],
        timeout_s: float | None,
        tool_call_id: str | None = None,
    ) -> dict[str, Any]:
        return {
            "key": key,
            "thread_id": thread_id,
            "ordinal": ordinal,
            "tool": tool,
            "args": self.redact(args),
            # the deadline of the call it is for, kept for a provider that does not
            # deduplicate (deadline_of); None: not kept
            "timeout_s": timeout_s,
            "tool_call_id": tool_call_id,
        }

    def interrupted(self, key: str, fence: int | None, note: Note) -> Effect | None:
        """Record that the call of the open intent ``key`` raised interrupt(): it counts
        no attempt, and the next call of the key is made (see ``interrupt_effect``). The
        effect as changed, ``None`` when it was no open intent."""
        row = self.db.fetch_one(
            "interrupt_effect",
            fence=fence,
            key=key,
            thread_id=note.thread_id,
            reason=self.redact(note.reason),
            evidence=self.redact(note.evidence),
            lease_token=fence,
        )
        return self._wrote(self._effect(row), fence, note.thread_id) if row else None

    def update(
        self,
        key: str,
        status: str,
        *,
        receipt: dict[str, Any] | None = None,
        confirmation: dict[str, Any] | None = None,
        error: str | None = None,
        fence: int | None = None,
        note: Note | None = None,
        current: Effect | None = None,
    ) -> Effect:
        """Change an effect; with ``note``, its event goes in the same transaction (one
        round trip), so the history says what the ledger says.

        With ``current`` (the effect as this run last wrote or read it, under ``fence``),
        a note and a rider, the change is not sent now: it commits with the writing node's
        writes, in their transaction (see the saver's ``ride``), and the changed effect
        is worked out here. For a change that a crash may lose: the node runs again."""
        params: dict[str, Any] = {
            "key": key,
            "status": status,
            "receipt": self.redact(receipt),
            "confirmation": self.redact(confirmation),
            "error": self.redact(error),
        }
        if current is not None and note is not None and fence is not None and self.ride:
            noted = {
                **params,
                "thread_id": note.thread_id,
                "kind": note.kind,
                "reason": self.redact(note.reason),
                "evidence": self.redact(note.evidence),
                "lease_token": fence,
            }
            changed = self._changed(current, params)  # first: a value JSON cannot hold fails here
            self.ride(
                note.thread_id, fence, [(sql.query("update_effect_noted"), jsonify(noted), False)]
            )
            return self._wrote(changed, fence, note.thread_id)
        if note is None:
            rows = self.db.fetch_all("update_effect", fence=fence, **params)
        else:
            rows = self.db.fetch_all(
                "update_effect_noted",
                fence=fence,
                **params,
                thread_id=note.thread_id,
                kind=note.kind,
                reason=self.redact(note.reason),
                evidence=self.redact(note.evidence),
                lease_token=fence,
            )
        if not rows:
            raise KeyError(f"no effect with key {key!r} in the ledger")
        return self._wrote(self._effect(rows[0]), fence, note.thread_id if note else None)

    def _changed(self, current: Effect, params: dict[str, Any]) -> Effect:
        """``current`` as ``update_effect`` will leave it (values as read back: JSON)."""

        def opened(value: Any) -> Any:
            return self.reveal(stored(value))

        return replace(
            current,
            status=params["status"],
            receipt=current.receipt if params["receipt"] is None else opened(params["receipt"]),
            confirmation=(
                current.confirmation
                if params["confirmation"] is None
                else opened(params["confirmation"])
            ),
            error=None if params["error"] is None else opened(params["error"]),
            updated_at=datetime.now(UTC),
        )
