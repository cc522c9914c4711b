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

# -- Read-only reporting queries ---------------------------------------------------------
# None of these writes anything; snapshot() runs them in one READ ONLY transaction.

SNAPSHOT_TX_SQL: Final = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"

COUNTS_SQL: Final = """
SELECT state, count(*)::bigint AS n
FROM waystone.runs
GROUP BY state
"""

# Who approved the action a waiting run waits on, while no worker has resumed it: the
# decision recorded for its wait, not consumed yet (as queries.sql's run_as_shown).
APPROVED_BY_SQL: Final = """
(SELECT s.actor FROM waystone.signals s
 WHERE r.state = 'waiting' AND r.waiting_for = 'approval'
   AND s.thread_id = r.thread_id AND s.name = 'approval' AND s.consumed_at IS NULL
   AND (r.wait_id IS NULL OR s.dedupe_key = r.wait_id)
 ORDER BY s.id
 LIMIT 1)
"""

ACTIVE_RUNS_SQL: Final = f"""
SELECT r.thread_id, r.agent, r.state, r.reason, r.lease_owner,
       extract(epoch FROM now() - r.created_at)::float8 AS age_s,
       {APPROVED_BY_SQL} AS approved_by
FROM waystone.runs r
WHERE r.state = ANY(%(states)s)
ORDER BY r.created_at, r.thread_id
LIMIT %(limit)s
"""

# Retry events, named by the step that retried, plus every effect attempt beyond the first.
RETRIES_SQL: Final = """
WITH kinds (kind, step) AS (
    SELECT * FROM unnest(%(kinds)s::text[], %(steps)s::text[])
),
retries AS (
    SELECT k.step, count(*)::bigint AS retries
    FROM waystone.run_events e
    JOIN kinds k ON k.kind = e.kind
    GROUP BY k.step
    UNION ALL
    SELECT 'execute:' || tool AS step, sum(greatest(attempts - 1, 0))::bigint AS retries
    FROM waystone.effects
    GROUP BY tool
)
SELECT step, retries
FROM retries
WHERE retries > 0
ORDER BY retries DESC, step
LIMIT %(limit)s
"""

# Runs waiting for a decision: an approved one waits for a worker, not for a person.
PENDING_APPROVALS_SQL: Final = f"""
SELECT r.thread_id, r.agent,
       extract(epoch FROM now() - r.updated_at)::float8 AS waiting_s,
       r.evidence -> 'pending_approval' ->> 'tool' AS tool,
       r.evidence -> 'pending_approval' ->> 'reason' AS reason
FROM waystone.runs r
WHERE r.state = 'waiting' AND r.waiting_for = 'approval' AND {APPROVED_BY_SQL} IS NULL
ORDER BY r.updated_at, r.thread_id
LIMIT %(limit)s
"""

PENDING_SIGNALS_SQL: Final = """
SELECT thread_id, agent, waiting_for, wake_at,
       extract(epoch FROM now() - updated_at)::float8 AS waiting_s
FROM waystone.runs
WHERE state = 'waiting' AND waiting_for IS DISTINCT FROM 'approval'
  AND waiting_for IS DISTINCT FROM 'resume'
ORDER BY updated_at, thread_id
LIMIT %(limit)s
"""

# Runs of a user's graph waiting on its interrupt() calls: what `waystone resume` answers
# (their values are not shown when encryption seals the run's evidence).
PENDING_INTERRUPTS_SQL: Final = """
SELECT thread_id, agent,
       extract(epoch FROM now() - updated_at)::float8 AS waiting_s,
       CASE WHEN jsonb_typeof(evidence -> 'interrupts') = 'array'
            THEN evidence -> 'interrupts' END AS interrupts
FROM waystone.runs
WHERE state = 'waiting' AND waiting_for = 'resume'
ORDER BY updated_at, thread_id
LIMIT %(limit)s
"""

UNDELIVERED_SIGNALS_SQL: Final = """
SELECT thread_id, name, extract(epoch FROM now() - created_at)::float8 AS age_s
FROM waystone.signals
WHERE consumed_at IS NULL
ORDER BY created_at, id
LIMIT %(limit)s
"""


def snapshot(rt: Runtime, *, limit: int = 10) -> dict[str, Any]:
    """One consistent, JSON-serialisable picture of the runs (see the module docstring).

    ``limit`` caps each list view (active runs, retries, approvals, signals); the counts
    and the step times are always complete.
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    with rt.connection() as conn, conn.transaction():
        conn.execute(SNAPSHOT_TX_SQL)
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


def _fetch(conn: Conn, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return conn.execute(query, params or {}).fetchall()


def _seconds(value: float | None) -> float:
    return round(float(value or 0.0), 3)


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _counts(conn: Conn) -> dict[str, int]:
    counts = dict.fromkeys(STATES, 0)
    for row in _fetch(conn, COUNTS_SQL):
        counts[row["state"]] = int(row["n"])
    return counts


def _active_runs(conn: Conn, limit: int) -> list[dict[str, Any]]:
    rows = _fetch(conn, ACTIVE_RUNS_SQL, {"states": list(ACTIVE_STATES), "limit": limit})
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
        {"step": r["step"], "retries": int(r["retries"])} for r in _fetch(conn, RETRIES_SQL, params)
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
        for r in _fetch(conn, PENDING_APPROVALS_SQL, {"limit": limit})
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
        for r in _fetch(conn, PENDING_SIGNALS_SQL, {"limit": limit})
    ]


def _pending_interrupts(conn: Conn, limit: int) -> list[dict[str, Any]]:
    return [
        {
            "thread_id": r["thread_id"],
            "agent": r["agent"],
            "waiting_s": _seconds(r["waiting_s"]),
            "interrupts": r["interrupts"],  # each {"id", "value"}; None when sealed
        }
        for r in _fetch(conn, PENDING_INTERRUPTS_SQL, {"limit": limit})
    ]


def _undelivered_signals(conn: Conn, limit: int) -> list[dict[str, Any]]:
    return [
        {"thread_id": r["thread_id"], "name": r["name"], "age_s": _seconds(r["age_s"])}
        for r in _fetch(conn, UNDELIVERED_SIGNALS_SQL, {"limit": limit})
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
