"""Cron schedules, as the LangGraph server API takes them: a cron expression read by
``croniter`` (five fields, or six with seconds last), in UTC or an IANA time zone. Pure
decisions, no I/O: whether a schedule is valid, its next tick, and which tick a ticker
runs when it comes late (the missed-tick policy)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from waystone.errors import BadInput

if TYPE_CHECKING:
    from croniter import croniter

MISSED_COUNTED = 1000  # missed ticks counted one by one; past that, "at least" this many


def check(schedule: object, timezone: object = None) -> str:
    """``schedule`` when croniter reads it (and ``timezone`` names a zone); BadInput
    saying what is wrong otherwise."""
    if timezone is not None:
        zone(timezone)
    if not isinstance(schedule, str) or not schedule.strip():
        raise BadInput("a cron needs a schedule: a cron expression such as '*/5 * * * *'")
    from croniter import croniter  # on first use: a command that reads runs needs none

    if not croniter.is_valid(schedule):
        raise BadInput(
            f"schedule {schedule!r} is not a cron expression: give five fields (minute hour "
            "day-of-month month day-of-week, e.g. '*/5 * * * *' for every 5 minutes) or six "
            "with seconds last (e.g. '* * * * * */10' for every 10 seconds)"
        )
    return schedule


def zone(timezone: object) -> ZoneInfo:
    if not isinstance(timezone, str) or not timezone:
        raise BadInput(
            f"timezone must be an IANA zone name such as 'Europe/Paris', not {timezone!r}"
        )
    try:
        return ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise BadInput(
            f"timezone {timezone!r} is not an IANA zone name (e.g. 'America/New_York')"
        ) from None


def _iter(schedule: str, base: datetime, timezone: str | None) -> croniter:
    from croniter import croniter

    local = base.astimezone(zone(timezone)) if timezone else base.astimezone(UTC)
    return croniter(schedule, local)


def next_tick(schedule: str, after: datetime, timezone: str | None = None) -> datetime:
    """The schedule's first tick strictly after ``after``, in UTC."""
    found: datetime = _iter(schedule, after, timezone).get_next(datetime)
    return found.astimezone(UTC)


def latest_tick(schedule: str, until: datetime, timezone: str | None = None) -> datetime:
    """The schedule's last tick at or before ``until``, in UTC."""
    it = _iter(schedule, until + timedelta(seconds=1), timezone)
    found: datetime = it.get_prev(datetime)
    while found > until:  # a tick within the second after ``until`` is not due yet
        found = it.get_prev(datetime)
    return found.astimezone(UTC).replace(fold=0)


@dataclass(frozen=True)
class Tick:
    """What a ticker does with a due cron: run the tick ``at`` (None: none is left before
    the cron's end), having passed over ``missed`` earlier ones from ``missed_from`` on,
    and wait for ``next`` (past the cron's end: it is due no more)."""

    at: datetime | None
    missed: int
    missed_from: datetime | None
    next: datetime


def due(
    schedule: str,
    timezone: str | None,
    first_due: datetime,
    now: datetime,
    end_time: datetime | None = None,
) -> Tick:
    """The missed-tick policy. ``first_due`` is the cron's first tick not yet run (at or
    before ``now``). Ticks that came while no ticker was up are not all run: the latest
    one due is run once, the earlier ones are counted as missed, and the cron waits for
    its first tick after ``now``. No tick after ``end_time`` runs."""
    until = now if end_time is None else min(now, end_time)
    upcoming = next_tick(schedule, now, timezone)
    if first_due > until:
        return Tick(at=None, missed=0, missed_from=None, next=upcoming)
    at = latest_tick(schedule, until, timezone)
    missed, it = 0, _iter(schedule, first_due - timedelta(seconds=1), timezone)
    while missed < MISSED_COUNTED and it.get_next(datetime).astimezone(UTC) < at:
        missed += 1
    return Tick(at=at, missed=missed, missed_from=first_due if missed else None, next=upcoming)
