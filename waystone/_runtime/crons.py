"""Crons: schedules kept in Postgres whose ticks start runs, as the LangGraph server API
has them. A cron on a thread starts each run on that thread; one without starts each on
a new thread. Its input and metadata are redacted and sealed as a run's input.

Workers tick them (:mod:`waystone.worker.ticker`). A tick is taken in one transaction: the due
cron's row is locked (``SKIP LOCKED``: another ticker passes it by), its run is created
with a start key of the cron and the tick's time, the tick is recorded in ``cron_ticks``
(one row per tick) and the cron's next tick is set; so each tick starts one run, however
many tickers are up (:mod:`waystone._runtime.cron_ticks`)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, fields
from datetime import datetime
from typing import TYPE_CHECKING, Any

from psycopg.types.json import Jsonb

from waystone._identifiers import check_identifier
from waystone._runs import schedule
from waystone._runtime.cron_ticks import Tick
from waystone._runtime.threads import SEARCH_LIMIT
from waystone.errors import BadInput, UnknownThread

if TYPE_CHECKING:
    from waystone._runtime.catalog import Catalog
    from waystone._runtime.parts import Parts


@dataclass(frozen=True)
class Cron:
    cron_id: str
    agent: str
    thread_id: str | None
    owner: str | None  # the API token's owner that made it; None: the operator's
    schedule: str
    timezone: str | None
    input: Any
    metadata: dict[str, Any]
    on_run_completed: str | None
    end_time: datetime | None
    enabled: bool
    next_run_date: datetime
    created_at: datetime
    updated_at: datetime


class Crons:
    def __init__(self, parts: Parts, catalog: Catalog) -> None:
        self._parts = parts
        self._catalog = catalog

    # -- what a person asks ----------------------------------------------------------------

    def create(
        self,
        agent: str,
        cron_schedule: Any,
        input: Any,
        *,
        thread_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        timezone: str | None = None,
        end_time: datetime | None = None,
        enabled: bool = True,
        on_run_completed: str | None = None,
        owner: str | None = None,
    ) -> Cron:
        """A new cron of ``agent``, ``owner``'s when given (its tick threads are that
        owner's too); on ``thread_id`` (a thread that exists), or a new thread each tick.
        Everything is checked before anything is written."""
        parts, db = self._parts, self._parts.db
        schedule.check(cron_schedule, timezone)
        clean = self._input(agent, input)
        if thread_id is not None:
            check_identifier("thread id", thread_id)
            if db.fetch_one("get_thread", thread_id=thread_id) is None:
                raise UnknownThread(thread_id)
        now = db.fetch_one("now")["now"]  # type: ignore[index]
        row = db.fetch_one(
            "create_cron",
            cron_id=str(uuid.uuid4()),
            agent=agent,
            thread_id=thread_id,
            owner=owner,
            schedule=cron_schedule,
            timezone=timezone,
            input=Jsonb(parts.protect(clean)),  # a graph's input may be any JSON value
            metadata=Jsonb(parts.protect(_object(metadata, "metadata"))),
            on_run_completed=on_run_completed if thread_id is None else None,
            end_time=end_time,
            enabled=enabled,
            next_run_date=schedule.next_tick(cron_schedule, now, timezone),
        )
        assert row is not None
        return self._cron(row)

    def _input(self, agent: str, input: Any) -> Any:
        entry = self._catalog.entry(self._catalog.known(agent))
        return self._parts.vault.redact(entry.check_input(input))

    def get(self, cron_id: str, owner: str | None = None) -> Cron | None:
        """The cron, if ``owner`` may see it (the operator, ``None``, sees every one)."""
        row = self._parts.db.fetch_one("get_cron", cron_id=cron_id)
        if row is None or (owner is not None and row["owner"] != owner):
            return None
        return self._cron(row)

    def search(
        self,
        *,
        agent: str | None = None,
        thread_id: str | None = None,
        enabled: bool | None = None,
        metadata: dict[str, Any] | None = None,
        sort_by: str = "created_at",
        descending: bool = True,
        owner: str | None = None,
    ) -> list[Cron]:
        """``owner``'s crons (all, for the operator) matching every filter given
        (``metadata``: each key and value), sorted."""
        rows = self._parts.db.fetch_all(
            "list_crons",
            agent=agent,
            owner=owner,
            thread_id=thread_id,
            enabled=enabled,
            sort_by=sort_by,
            desc=descending,
            limit=SEARCH_LIMIT,
        )
        wanted = self._parts.vault.redact(_object(metadata, "metadata"))
        found = [self._cron(r) for r in rows]
        return [c for c in found if all(c.metadata.get(k) == v for k, v in wanted.items())]

    def update(
        self, cron_id: str, changes: dict[str, Any], owner: str | None = None
    ) -> Cron | None:
        """The cron with ``changes`` made (``schedule``, ``timezone``, ``end_time``,
        ``enabled``, ``input``, ``metadata`` merged into its own, ``on_run_completed``);
        ``None`` if there is no such cron (for ``owner``). A new schedule or zone, or a cron
        enabled again, waits for its next tick from now: a disabled cron's ticks are not
        missed."""
        current = self.get(cron_id, owner)
        if current is None:
            return None
        parts, db = self._parts, self._parts.db
        new = {f.name: getattr(current, f.name) for f in fields(Cron)}
        new.update(changes)
        schedule.check(new["schedule"], new["timezone"])
        if "input" in changes:
            new["input"] = self._input(current.agent, changes["input"])
        new["metadata"] = {**current.metadata, **_object(changes.get("metadata"), "metadata")}
        moved = {"schedule", "timezone"} & set(changes) or (new["enabled"] and not current.enabled)
        if moved:
            now = db.fetch_one("now")["now"]  # type: ignore[index]
            new["next_run_date"] = schedule.next_tick(new["schedule"], now, new["timezone"])
        new["input"] = Jsonb(parts.protect(new["input"]))
        new["metadata"] = Jsonb(parts.protect(new["metadata"]))
        row = db.fetch_one("update_cron", **{k: new[k] for k in new if k not in _FIXED})
        return self._cron(row) if row is not None else None

    def delete(self, cron_id: str, owner: str | None = None) -> bool:
        """Whether there was such a cron (for ``owner``); its past ticks and their runs
        stay."""
        if self.get(cron_id, owner) is None:
            return False
        return bool(self._parts.db.execute("delete_cron", cron_id=cron_id))

    def _cron(self, row: dict[str, Any]) -> Cron:
        opened = {f.name: row[f.name] for f in fields(Cron)}
        opened["input"] = self._parts.reveal(row["input"])
        metadata = self._parts.reveal(row["metadata"])
        opened["metadata"] = metadata if isinstance(metadata, dict) else {}
        return Cron(**opened)

    # -- ticks (a worker's) ----------------------------------------------------------------

    def seconds_to_next(self, agents: list[str]) -> float | None:
        """Seconds until the first cron of ``agents`` is due (negative: overdue), by the
        database's clock; ``None`` when none is enabled."""
        row = self._parts.db.fetch_one("next_cron", agents=agents)
        return row["due_in"] if row else None

    def tick(self, agents: list[str], owner: str) -> int:
        """Take every due cron of ``agents`` that no other ticker holds; how many."""
        taken = 0
        while self._tick_one(agents, owner):
            taken += 1
        return taken

    def _tick_one(self, agents: list[str], owner: str) -> bool:
        db = self._parts.db
        with db.transaction() as conn:
            rows = db.execute("claim_due_cron", conn, agents=agents)
            if not rows:
                return False
            row = rows[0]
            cron = self._cron(row)
            plan = schedule.due(
                cron.schedule, cron.timezone, cron.next_run_date, row["now"], cron.end_time
            )
            if plan.at is not None:
                Tick(self._parts, self._catalog, cron, plan, owner).take(conn)
            db.execute("cron_ticked", conn, cron_id=cron.cron_id, next_run_date=plan.next)
        return True


_FIXED = ("agent", "thread_id", "owner", "created_at", "updated_at")


def _object(value: Any, name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadInput(f"a cron's {name} must be a JSON object")
    return value
