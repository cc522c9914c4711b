"""The run registry: the one class that reads and writes runs, events and signals.

State changes go through Postgres, where a trigger enforces the transition table and
records each accepted transition in ``run_events`` in the same transaction.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.types.json import Jsonb

from waystone import sql
from waystone._db.database import Conn, Database, jsonify, stored
from waystone._hints import command
from waystone._identifiers import check_identifier
from waystone._runs.lease_wait import HeldLease
from waystone._runs.states import ALLOWED, STATES
from waystone.errors import LeaseLost, TransitionNotAllowed, UnknownThread, WaystoneError

if TYPE_CHECKING:
    from waystone._checkpointing.held import Statement

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Run:
    thread_id: str
    agent: str
    state: str
    goal: str
    input: dict[str, Any]
    start_key: str | None
    reason: str
    evidence: dict[str, Any]
    lease_token: int
    lease_owner: str | None
    lease_expires_at: datetime | None
    attempts: int
    waiting_for: str | None
    wake_at: datetime | None
    forked_from: str | None
    key_namespace: str | None
    summary: dict[str, Any] | None
    pruned_at: datetime | None
    created_at: datetime
    updated_at: datetime
    started: bool | None = None  # has checkpoints (known when claimed; None: not asked)
    wait_id: str | None = None  # the interrupt whose wait wake_at is the deadline of
    deadline_passed: bool = False  # wake_at has passed, by Postgres' clock (known when claimed)
    prev_state: str | None = None  # the state a claim took it from (known when claimed)
    # who approved the action it waits on, while no worker has resumed it (known when read
    # by ``get`` or ``list_runs``)
    approved_by: str | None = None
    run_number: int | None = None  # its number in the thread (known when read by ``get``)
    logged: bool = False  # a client streams it: its live events are logged (known when claimed)

    @property
    def run_id(self) -> str | None:
        """The run's id (a UUID), when its number is known."""
        return run_id_of(self.thread_id, self.run_number) if self.run_number else None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Run:
        return cls(**{k: row[k] for k in cls.__dataclass_fields__ if k in row})


@dataclass(frozen=True)
class PastRun:
    """A run of a thread that ended before the thread's current run began."""

    thread_id: str
    number: int
    agent: str
    goal: str
    input: Any
    start_key: str | None
    state: str
    reason: str
    evidence: dict[str, Any]
    attempts: int
    last_event: int
    created_at: datetime
    ended_at: datetime

    @property
    def run_id(self) -> str:
        return run_id_of(self.thread_id, self.number)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> PastRun:
        return cls(**{k: row[k] for k in cls.__dataclass_fields__ if k in row})


_RUN_IDS = uuid.UUID("5f0c1d7e-8a2b-4c3d-9e4f-0a1b2c3d4e5f")  # the namespace of run ids


def run_id_of(thread_id: str, number: int) -> str:
    """The id of a thread's ``number``-th run: derived, never stored, so the first run of
    every thread (the only one most threads have) costs no row of its own."""
    return str(uuid.uuid5(_RUN_IDS, f"{thread_id}/{number}"))


def _pid_namespace() -> str:
    try:
        return pid_namespace_label(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


def pid_namespace_label(inode: int) -> str:
    """A PID namespace's inode in hex: its ten decimal digits (``4026531836``) read as a
    phone number to the log redaction, which would hide it in every worker's name."""
    return f"{inode:x}"


def process_owner() -> str:
    """``host:pidns:pid:nonce``: who holds a lease, precise enough to tell that a local
    owner died (same host and PID namespace, and the pid is gone)."""
    return f"{socket.gethostname()}:{_pid_namespace()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def owner_is_dead(owner: str | None) -> bool:
    """True only when the owner ran on this host, in this PID namespace, and its process no
    longer exists. Anything else waits for the lease to expire."""
    if not owner:
        return False
    parts = owner.split(":")
    if len(parts) < 4:
        return False
    host, pidns, pid_text = parts[0], parts[1], parts[2]
    if host != socket.gethostname() or pidns != _pid_namespace() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _same(value: Any) -> Any:
    return value


class RunRegistry:
    """``redact`` runs over every reason, evidence and input before it is written."""

    def __init__(
        self,
        db: Database,
        redact: Callable[[Any], Any] = _same,
        reveal: Callable[[Any], Any] = _same,
    ) -> None:
        self.db = db
        self.redact = redact  # on the way in: tokens for personal data, sealed at rest
        self.reveal = reveal  # on the way out: sealed values opened (tokens stay tokens)

    def ending(
        self,
        run: Run,
        to_state: str,
        reason: str,
        evidence: dict[str, Any],
        ended: Callable[[Run], None] = lambda run: None,
    ) -> tuple[Statement, Run]:
        """The transition that ends ``run`` (from running, under its lease, to ``to_state``,
        spending its signals) as a statement for another transaction to commit (its graph's
        last checkpoint's: see the driver), and the run as that leaves it, worked out here;
        once that transaction commits, ``ended`` is given the run as Postgres holds it (its
        clock's ``updated_at``). The statement never quietly changes nothing: it fails,
        and its transaction with it (``end_run``)."""
        if to_state not in STATES or to_state == "running":
            raise TransitionNotAllowed(f"a run cannot end in state {to_state!r}")
        params = {
            "thread_id": run.thread_id,
            "to_state": to_state,
            "reason": self.redact(reason),
            "evidence": self.redact(evidence),
            "lease_token": run.lease_token,
        }
        worked_out = replace(
            run,
            state=to_state,
            reason=self.reveal(stored(params["reason"])),
            evidence=self.reveal(stored(params["evidence"])),
            lease_owner=None,
            lease_expires_at=None,
            waiting_for=None,
            wake_at=None,
            wait_id=None,
            deadline_passed=False,
            approved_by=None,
            updated_at=datetime.now(UTC),  # until Postgres' own comes back (``ended``)
            started=None,
        )

        def committed(rows: list[dict[str, Any]]) -> None:
            if rows:
                ended(self._run(rows[0]))

        return (sql.query("end_run"), jsonify(params), committed), worked_out

    def _run(self, row: dict[str, Any]) -> Run:
        opened = {**row}
        for name in ("goal", "input", "reason", "evidence", "summary"):
            opened[name] = self.reveal(row.get(name))
        return Run.from_row(opened)

    def create(
        self,
        *,
        thread_id: str,
        agent: str,
        goal: str,
        input: dict[str, Any],
        start_key: str | None = None,
        actor: str = "waystone",
        forked_from: str | None = None,
        key_namespace: str | None = None,
        reason: str = "created",
        conn: Conn | None = None,
        next_run: bool = False,
    ) -> tuple[Run | PastRun, bool]:
        """Create a queued run; return it and whether it is new.

        With a ``start_key`` already used, that key's run comes back instead (a
        :class:`PastRun` when a later run followed it on its thread). With ``next_run``, a
        thread whose run ended gets a new run, of the same graph; a thread with a run that
        has not ended gets none (:class:`TransitionNotAllowed`). With ``conn``, inside the
        caller's transaction (the run is runnable when it commits).
        """
        new = self._new_run(
            thread_id, agent, goal, input, start_key, reason, actor, forked_from, key_namespace
        )
        created = self.db.execute("create_run", conn=conn, **new)
        if not created and next_run:
            created = self.db.execute("begin_run", conn=conn, **new)
        if created:
            return self._run(created[0]), True
        if start_key is not None:
            used = self.by_start_key(start_key)
            if used is not None:
                return used, False
        existing = self.db.fetch_one("get_run", thread_id=thread_id)
        if existing is not None:
            raise TransitionNotAllowed(self._taken(self._run(existing), agent, next_run))
        raise TransitionNotAllowed(f"could not create run {thread_id!r}")  # pragma: no cover

    @staticmethod
    def _taken(existing: Run, agent: str, next_run: bool) -> str:
        """Why a thread takes no new run."""
        thread_id = existing.thread_id
        if not next_run:
            return (
                f"a run with thread id {thread_id!r} already exists (state {existing.state}); "
                f"choose another --thread-id or see {command('status', thread_id)}"
            )
        if existing.agent != agent:
            return f"thread {thread_id!r} is a thread of {existing.agent}, not of {agent}"
        if existing.pruned_at is not None:
            return f"thread {thread_id!r} was pruned; its state is gone (start a new thread)"
        return (
            f"thread {thread_id!r} has a run that has not ended (it is {existing.state}); a "
            f"thread runs one run at a time: wait for it to end or cancel it (see "
            f"{command('status', thread_id)})"
        )

    def by_start_key(self, start_key: str) -> Run | PastRun | None:
        """The run a start key started: a thread's current run, or one that ended before
        it."""
        current = self.db.fetch_one("get_run_by_start_key", start_key=start_key)
        if current is not None:
            return self._run(current)
        past = self.db.fetch_one("past_run_by_start_key", start_key=start_key)
        return self._past(past) if past is not None else None

    def past_run(self, thread_id: str, run_id: str, before: int) -> PastRun | None:
        """The thread's run ``run_id``, if it is one of those before its ``before``-th run:
        its number is found from the id (derived, never stored), its row read by key."""
        number = next(
            (n for n in range(before - 1, 0, -1) if run_id_of(thread_id, n) == run_id), None
        )
        if number is None:
            return None
        row = self.db.fetch_one("past_run", thread_id=thread_id, number=number)
        return self._past(row) if row is not None else None

    def past_runs(self, thread_id: str) -> list[PastRun]:
        """The runs of a thread that ended before its current run began, in order."""
        return [self._past(r) for r in self.db.fetch_all("past_runs", thread_id=thread_id)]

    def _past(self, row: dict[str, Any]) -> PastRun:
        opened = {**row}
        for name in ("goal", "input", "reason", "evidence"):
            opened[name] = self.reveal(row.get(name))
        return PastRun.from_row(opened)

    def create_claimed(
        self,
        *,
        thread_id: str,
        agent: str,
        goal: str,
        input: dict[str, Any],
        owner: str,
        lease_seconds: float,
        start_key: str | None = None,
        next_run: bool = False,
    ) -> Run | None:
        """Create a run and claim it for ``owner``: one transaction, one round trip (the
        insert and the claim pipelined up to one Sync), for a caller that drives the run at
        once. With ``next_run``, a thread whose run ended gets a new one (as ``create``).
        ``None`` when the thread id or the start key is taken: nothing is created, and
        nothing is claimed (the claim takes only a run its own transaction inserted). Its
        insert wakes no worker (``claiming``): once committed, the run is not runnable."""
        new = self._new_run(thread_id, agent, goal, input, start_key, "created", "waystone")
        claim = {"thread_id": thread_id, "owner": owner, "lease_seconds": lease_seconds}
        statements: list[tuple[str, dict[str, Any]]] = [
            ("claiming", {"thread_id": thread_id}),
            ("create_run", new),
        ]
        if next_run:
            statements.append(("begin_run", new))
        statements.append(("claim_created", {**claim, "reason": "claimed"}))
        claimed = self.db.batch(statements)[-1]
        return self._run(claimed[0]) if claimed else None

    def _new_run(
        self,
        thread_id: str,
        agent: str,
        goal: str,
        input: dict[str, Any],
        start_key: str | None,
        reason: str,
        actor: str,
        forked_from: str | None = None,
        key_namespace: str | None = None,
    ) -> dict[str, Any]:
        return {
            "thread_id": thread_id,
            "agent": agent,
            "goal": self.redact(goal),
            "input": Jsonb(self.redact(input)),  # a graph's may be any JSON value
            "start_key": start_key,
            "reason": reason,
            "evidence": {"agent": agent, **({"forked_from": forked_from} if forked_from else {})},
            "actor": actor,
            "forked_from": forked_from,
            "key_namespace": key_namespace,
        }

    def get(self, thread_id: str) -> Run:
        row = self.db.fetch_one("get_run", thread_id=check_identifier("thread id", thread_id))
        if row is None:
            raise UnknownThread(thread_id)
        return self._run(row)

    def list_runs(self, state: str | None = None, limit: int = 100) -> list[Run]:
        rows = self.db.fetch_all("list_runs", state=state, limit=limit)
        return [self._run(r) for r in rows]

    def transition(
        self,
        thread_id: str,
        to_state: str,
        *,
        reason: str,
        evidence: dict[str, Any] | None = None,
        from_states: tuple[str, ...] | None = None,
        lease_token: int | None = None,
        actor: str = "waystone",
        waiting_for: str | None = None,
        wake_at: datetime | None = None,
        wait_seconds: float | None = None,
        wait_id: str | None = None,
        bump: bool = False,
        conn: Conn | None = None,
        spend_signals: bool = False,
    ) -> Run:
        """Move a run to ``to_state``. Raises :class:`TransitionNotAllowed` if it cannot.

        ``lease_token`` makes it conditional on the caller still holding the lease;
        ``bump`` raises the token, so a process that holds the run loses it (cancel).
        ``spend_signals`` consumes, in the same statement, the signals a run that ends has
        used and the approvals it no longer waits on. A wait's deadline is ``wake_at`` (a
        time read from the database), or ``wait_seconds`` ahead of the database's clock (a
        worker's may be off); ``wait_id`` names the interrupt it belongs to.
        """
        if to_state not in STATES:
            raise TransitionNotAllowed(f"unknown state {to_state!r}")
        if wake_at is not None and wait_seconds is not None:
            raise ValueError("give a wait's deadline as wake_at or as wait_seconds, not both")
        sources = from_states or tuple(s for s, dsts in ALLOWED.items() if to_state in dsts)
        rows = self.db.execute(
            "transition",
            conn=conn,
            thread_id=thread_id,
            to_state=to_state,
            reason=self.redact(reason),
            evidence=self.redact(evidence or {}),
            actor=actor,
            from_states=list(sources),
            lease_token=lease_token,
            waiting_for=waiting_for,
            wake_at=wake_at,
            wait_seconds=wait_seconds,
            wait_id=wait_id,
            bump=bump,
            spend_signals=spend_signals,
        )
        if rows:
            return self._run(rows[0])
        run = self.get(thread_id)  # raises UnknownThread
        if lease_token is not None and run.lease_token != lease_token:
            raise LeaseLost(
                f"run {thread_id} is now held by {run.lease_owner} (token {run.lease_token}); "
                f"this process's token {lease_token} is stale"
            )
        raise TransitionNotAllowed(
            f"run {thread_id} is {run.state}; it cannot move to {to_state} "
            f"(allowed from: {', '.join(sources) or 'nowhere'})"
        )

    def claim(
        self,
        *,
        owner: str,
        lease_seconds: float,
        thread_id: str | None = None,
        agents: list[str] | None = None,
    ) -> Run | None:
        """Claim a runnable run: the named one (of one of ``agents``, when given), or the
        oldest runnable run of ``agents`` (required then: the agents the caller can drive).

        A running run whose lease expired changes hands without a state change; the
        takeover is recorded on its history. ``None`` when nothing is runnable. A named
        run held by a local process that died is taken at once (checked only when the
        first try finds it not runnable).
        """
        if thread_id is None and not agents:
            raise ValueError("a claim of the next run names the agents it can drive")
        if thread_id is not None:
            check_identifier("thread id", thread_id)
        params: dict[str, Any] = {
            "thread_id": thread_id,
            "agents": agents,
            "owner": owner,
            "lease_seconds": lease_seconds,
            "dead_owner": None,
            "reason": "claimed",
        }
        query = "claim" if thread_id is None else "claim_named"
        row = self.db.fetch_one(query, **params)
        dead = None
        if row is None and thread_id is not None:
            current = self.get(thread_id)
            if current.state == "running" and owner_is_dead(current.lease_owner):
                dead = current.lease_owner
                row = self.db.fetch_one(query, **{**params, "dead_owner": dead})
        if row is None:
            return None
        run = self._run(row)
        if row["prev_state"] == "running":
            why = (
                "previous owner died"
                if row["prev_owner"] == dead and dead
                else "lease released"
                if row["prev_owner"] is None
                else "lease expired"
            )
            self.event(
                run.thread_id,
                "lease-takeover",
                f"lease taken over: {why}",
                {"previous_owner": row["prev_owner"], "owner": owner},
                actor=owner,
                lease_token=run.lease_token,
            )
        return run

    def holds(self, thread_id: str, lease_token: int) -> bool:
        """Whether the run is still running under ``lease_token`` (not cancelled, not taken
        over), by a read of its row: asked right before a provider call."""
        row = self.db.fetch_one("holds_lease", thread_id=thread_id, lease_token=lease_token)
        return row is not None

    def release(self, thread_id: str, lease_token: int) -> bool:
        """Hand the lease back (no state change); the next claim takes the run at once."""
        return bool(self.db.execute("release", thread_id=thread_id, lease_token=lease_token))

    def lease(self, thread_id: str) -> dict[str, Any] | None:
        """A running run's lease: its holder, its expiry and the seconds until then (negative
        once expired), by the database's clock; ``None`` when the run is not running."""
        row = self.db.fetch_one("lease_of", thread_id=thread_id)
        if row is None:
            return None
        expires_at, expires_in = row["lease_expires_at"], row["expires_in"]
        return {
            "owner": row["lease_owner"],
            "expires_at": expires_at.isoformat() if expires_at else None,
            "expires_in_s": round(expires_in, 1) if expires_in is not None else None,
            "expired": expires_in is None or expires_in < 0,
        }

    def seconds_to_next_wake(self, agents: list[str]) -> float | None:
        """Seconds until the first waiting run of ``agents`` is due (negative: overdue), by
        the database's clock; ``None`` when none waits with a deadline."""
        row = self.db.fetch_one("next_wake", agents=agents)
        return row["due_in"] if row else None

    def held_leases(self, agents: list[str], limit: int) -> list[HeldLease]:
        """Up to ``limit`` unexpired leases on running runs of ``agents``: those whose owner
        ran on this machine and is gone first (however many live ones expire sooner), then
        the soonest to expire, by the database's clock."""
        owners = self.db.fetch_all("lease_owners", agents=agents)
        dead = [r["lease_owner"] for r in owners if owner_is_dead(r["lease_owner"])]
        rows = self.db.fetch_all("held_leases", agents=agents, dead=dead, limit=limit)
        return [HeldLease.from_row(row) for row in rows]

    def database_ok(self, wait_s: float) -> bool:
        """Whether Postgres answers a round trip within ``wait_s``, the wait for a pooled
        connection included."""
        limit = {"limit": f"{max(1, round(wait_s * 1000))}ms"}
        try:
            self.db.batch([("bounded", limit), ("database_ok", {})], wait_s=wait_s)
        except (WaystoneError, psycopg.Error):
            return False
        return True

    def heartbeat(
        self, thread_id: str, lease_token: int, lease_seconds: float, *, limit_s: float = 30.0
    ) -> bool:
        """Renew the lease; False when it is no longer this token's (taken over, or the run
        moved on). Waiting for a connection, a lock or the statement itself is cut off after
        ``limit_s`` (an error), so one run's renewal cannot hold up another's."""
        params = {"thread_id": thread_id, "lease_token": lease_token}
        limit = {"limit": f"{max(1, round(limit_s * 1000))}ms"}
        rows = self.db.batch(
            [("bounded", limit), ("heartbeat", {**params, "lease_seconds": lease_seconds})],
            wait_s=limit_s,
        )[1]
        return bool(rows)

    def event(
        self,
        thread_id: str,
        kind: str,
        reason: str,
        evidence: dict[str, Any] | None = None,
        *,
        actor: str = "waystone",
        lease_token: int | None = None,
        conn: Conn | None = None,
    ) -> None:
        """Record an event. With a ``lease_token`` the write is fenced by it; with ``conn``,
        inside the caller's transaction (which sets any fence itself)."""
        self.db.execute(
            "insert_event",
            conn=conn,
            fence=lease_token,
            thread_id=thread_id,
            kind=kind,
            reason=self.redact(reason),
            evidence=self.redact(evidence or {}),
            actor=actor,
            lease_token=lease_token,
        )

    def event_statement(
        self,
        thread_id: str,
        kind: str,
        reason: str,
        evidence: dict[str, Any],
        *,
        lease_token: int,
    ) -> Statement:
        """An event as a statement for another transaction to commit (a checkpoint's: see
        the saver's ``ride``), fenced by that transaction's lease token."""
        params = {
            "thread_id": thread_id,
            "kind": kind,
            "reason": self.redact(reason),
            "evidence": self.redact(evidence),
            "actor": "waystone",
            "lease_token": lease_token,
        }
        return (sql.query("insert_event"), jsonify(params), False)

    def events(self, thread_id: str) -> list[dict[str, Any]]:
        return [
            {**e, "reason": self.reveal(e["reason"]), "evidence": self.reveal(e["evidence"])}
            for e in self.db.fetch_all("list_events", thread_id=thread_id)
        ]
