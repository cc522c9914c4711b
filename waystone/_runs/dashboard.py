"""An operator's dashboard: what the runs are doing, read straight from Postgres.

:func:`snapshot` gathers one consistent picture (a single read-only, repeatable-read
transaction, so every view agrees on "now") as a JSON-serialisable dict:

* ``counts_by_state``: how many runs are in each of the six states;
* ``active_runs``: queued, running, waiting and needs-human runs, oldest first;
* ``retries_by_step``: where retries happen (history events, plus effect attempts);
* ``step_times``: mean and p95 wall time of each node of each graph that ran, from
  LangGraph's checkpoints;
* ``pending_approvals``: runs waiting for a person's decision, longest waiting first (an
  approved run waits for a worker: it is among the active runs, shown as approved);
* ``pending_signals`` / ``undelivered_signals``: runs waiting for a named signal, and
  signals recorded but not consumed yet;
* ``pending_interrupts``: runs of a user's graph waiting on its ``interrupt()`` calls (what
  ``waystone resume`` answers), with their values.

:func:`render` prints the same picture as rich tables.

Step times are named by the nodes of the graph that ran, ``Send`` tasks under their own
node, a subgraph's nodes under their parent node (see :mod:`waystone._runs.step_times`).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from rich.console import Console
from rich.table import Table
from rich.text import Text

from waystone import sql
from waystone._db.database import Conn
from waystone._runs import step_times as _step_times
from waystone._runs.states import STATES
from waystone._runs.status import shown_reason

if TYPE_CHECKING:
    from waystone.runtime import Runtime

ACTIVE_STATES: Final[tuple[str, ...]] = ("queued", "running", "waiting", "needs-human")
RETRY_KINDS: Final[dict[str, str]] = {
    "retry": "execute",
    "lookup-retry": "execute",
    "confirm-retry": "confirm",
    "model-timeout": "propose",
    "model-error": "propose",
    "proposal-corrected": "propose",
}


def snapshot(rt: Runtime, *, limit: int = 10) -> dict[str, Any]:
    """One consistent, JSON-serialisable picture of the runs (see the module docstring).

    ``limit`` caps each list view (active runs, retries, approvals, signals); the counts
    and the step times are always complete.
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    with rt.connection() as conn, conn.transaction():
        conn.execute(sql.query("snapshot_transaction"))
        return {
            "counts_by_state": _counts(conn),
            "active_runs": _active_runs(conn, limit),
            "retries_by_step": _retries(conn, limit),
            "step_times": _step_times.read(conn, rt.checkpoint_serde()),
            "pending_approvals": _pending_approvals(conn, limit),
            "pending_signals": _pending_signals(conn, limit),
            "pending_interrupts": _pending_interrupts(conn, limit),
            "undelivered_signals": _undelivered_signals(conn, limit),
        }


def _fetch(conn: Conn, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return conn.execute(sql.query(name), params or {}).fetchall()


def _seconds(value: float | None) -> float:
    return round(float(value or 0.0), 3)


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _counts(conn: Conn) -> dict[str, int]:
    counts = dict.fromkeys(STATES, 0)
    for row in _fetch(conn, "dashboard_counts"):
        counts[row["state"]] = int(row["n"])
    return counts


def _active_runs(conn: Conn, limit: int) -> list[dict[str, Any]]:
    rows = _fetch(conn, "dashboard_active_runs", {"states": list(ACTIVE_STATES), "limit": limit})
    return [
        {
            "thread_id": r["thread_id"],
            "agent": r["agent"],
            "state": r["state"],
            "age_s": _seconds(r["age_s"]),
            "reason": shown_reason(r["thread_id"], r["reason"], r["approved_by"]),
            "lease_owner": r["lease_owner"],
        }
        for r in rows
    ]


def _retries(conn: Conn, limit: int) -> list[dict[str, Any]]:
    params = {"kinds": list(RETRY_KINDS), "steps": list(RETRY_KINDS.values()), "limit": limit}
    return [
        {"step": r["step"], "retries": int(r["retries"])}
        for r in _fetch(conn, "dashboard_retries", params)
    ]


def step_times(rt: Runtime, thread_id: str | None = None) -> list[dict[str, Any]]:
    """The step times of every run, or of one thread's runs (its page: read by the
    thread's keys). Outside a snapshot, a Send step saved between its two statements is
    counted unnamed once, which a page read again shows named."""
    with rt.connection() as conn:
        return _step_times.read(conn, rt.checkpoint_serde(), thread_id)


def _pending_approvals(conn: Conn, limit: int) -> list[dict[str, Any]]:
    return [
        {
            "thread_id": r["thread_id"],
            "agent": r["agent"],
            "waiting_s": _seconds(r["waiting_s"]),
            "tool": r["tool"],
            "reason": r["reason"],
        }
        for r in _fetch(conn, "dashboard_pending_approvals", {"limit": limit})
    ]


def _pending_signals(conn: Conn, limit: int) -> list[dict[str, Any]]:
    return [
        {
            "thread_id": r["thread_id"],
            "agent": r["agent"],
            "waiting_for": r["waiting_for"],
            "waiting_s": _seconds(r["waiting_s"]),
            "wake_at": _iso(r["wake_at"]),
        }
        for r in _fetch(conn, "dashboard_pending_signals", {"limit": limit})
    ]


def _pending_interrupts(conn: Conn, limit: int) -> list[dict[str, Any]]:
    return [
        {
            "thread_id": r["thread_id"],
            "agent": r["agent"],
            "waiting_s": _seconds(r["waiting_s"]),
            "interrupts": r["interrupts"],  # each {"id", "value"}; None when sealed
        }
        for r in _fetch(conn, "dashboard_pending_interrupts", {"limit": limit})
    ]


def _undelivered_signals(conn: Conn, limit: int) -> list[dict[str, Any]]:
    return [
        {"thread_id": r["thread_id"], "name": r["name"], "age_s": _seconds(r["age_s"])}
        for r in _fetch(conn, "dashboard_undelivered_signals", {"limit": limit})
    ]


# -- Rendering ---------------------------------------------------------------------------


def shown_interrupts(row: dict[str, Any]) -> str:
    """A run's pending interrupts in a line: each value, as JSON (sealed: not shown)."""
    if row["interrupts"] is None:
        return "(sealed)"
    return "; ".join(json.dumps(i.get("value"), default=str) for i in row["interrupts"])


def shown_node(row: dict[str, Any]) -> str:
    """A step time's node, under its parent node when it ran in a subgraph."""
    return f"{row['parent']} › {row['node']}" if row.get("parent") else str(row["node"])


def render(data: dict[str, Any], console: Console) -> None:
    """Print a :func:`snapshot` as rich tables, one per view."""
    counts = _table("Runs by state", "state", "runs")
    for state, n in data["counts_by_state"].items():
        counts.add_row(_cell(state), _cell(n))

    active = _table("Active runs", "thread", "agent", "state", "age", "owner", "reason")
    for r in data["active_runs"]:
        active.add_row(
            *_cells(
                r["thread_id"],
                r["agent"],
                r["state"],
                duration(r["age_s"]),
                r["lease_owner"],
                r["reason"],
            )
        )

    retries = _table("Retries by step", "step", "retries")
    for r in data["retries_by_step"]:
        retries.add_row(*_cells(r["step"], r["retries"]))

    times = _table("Step times (ms)", "graph", "node", "n", "mean", "p95")
    for r in data["step_times"]:
        node = shown_node(r)
        times.add_row(
            *_cells(r["graph"], node, r["n"], _number(r["mean_ms"]), _number(r["p95_ms"]))
        )

    approvals = _table("Pending approvals", "thread", "agent", "waiting", "tool", "reason")
    for r in data["pending_approvals"]:
        approvals.add_row(
            *_cells(r["thread_id"], r["agent"], duration(r["waiting_s"]), r["tool"], r["reason"])
        )

    signals = _table(
        "Runs waiting for a signal", "thread", "agent", "signal", "waiting", "wakes at"
    )
    for r in data["pending_signals"]:
        signals.add_row(
            *_cells(
                r["thread_id"],
                r["agent"],
                r["waiting_for"],
                duration(r["waiting_s"]),
                r["wake_at"],
            )
        )

    interrupts = _table("Runs waiting on interrupts", "thread", "graph", "waiting", "values")
    for r in data.get("pending_interrupts", []):
        interrupts.add_row(
            *_cells(r["thread_id"], r["agent"], duration(r["waiting_s"]), shown_interrupts(r))
        )

    undelivered = _table("Undelivered signals", "thread", "signal", "age")
    for r in data["undelivered_signals"]:
        undelivered.add_row(*_cells(r["thread_id"], r["name"], duration(r["age_s"])))

    views = (counts, active, retries, times, approvals, signals, interrupts, undelivered)
    for table in views:
        if not table.row_count:
            table.caption = "none"
        console.print(table)


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, justify="right" if column in _NUMERIC else "left")
    return table


_NUMERIC: Final = frozenset({"runs", "retries", "n", "mean", "p95", "age", "waiting"})


def _cell(value: object) -> Text:
    """Plain text: run reasons and signal names may hold ``[...]``, which is not markup."""
    return Text("-" if value is None else str(value))


def _cells(*values: object) -> list[Text]:
    return [_cell(v) for v in values]


def _number(value: float | None) -> str | None:
    return None if value is None else f"{value:.1f}"


def duration(seconds: float) -> str:
    """``4.2s``, ``3m 05s``, ``2h 07m``, ``3d 04h``."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    minutes, secs = divmod(whole, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d {hours:02d}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {secs:02d}s"
