"""Retention: delete the checkpoints of runs that ended long ago, keep their evidence.

A pruned run keeps its row, its events, its effect ledger and a compact summary (its
outcome, the actions it confirmed, how many checkpoints it had); only LangGraph's
checkpoints, blobs and pending writes go. Runs that have not ended are never touched.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from waystone import sql
from waystone.errors import BadInput

if TYPE_CHECKING:
    from waystone._runs.catalog import Catalog
    from waystone._runs.parts import Parts

ENDED = ("done", "failed")
_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_age(text: str) -> timedelta:
    """``"30d"``, ``"12h"``, ``"45m"``, ``"90s"``, ``"2w"`` -> a timedelta."""
    match = _AGE.match(text)
    if not match:
        raise BadInput(f"{text!r} is not an age such as 30d, 12h, 45m or 2w")
    return timedelta(seconds=float(match.group(1)) * _UNIT[match.group(2)])


def prune(
    parts: Parts,
    catalog: Catalog,
    older_than: timedelta,
    *,
    dry_run: bool = False,
    limit: int = 1000,
) -> dict[str, Any]:
    """Prune runs that ended more than ``older_than`` ago (at most ``limit`` per call)."""
    with parts.db.connection() as conn:
        rows = conn.execute(
            sql.query("prune_candidates"), {"ended": list(ENDED), "age": older_than, "limit": limit}
        ).fetchall()
    pruned = []
    for row in rows:
        entry = {
            "thread_id": row["thread_id"],
            "state": row["state"],
            "checkpoints": row["checkpoints"],
            "ended_at": row["updated_at"].isoformat(),
        }
        pruned.append(entry)
        if dry_run:
            continue
        summary = _summary(catalog, row["thread_id"], row["agent"], row["checkpoints"])
        with parts.db.transaction() as conn:
            marked = conn.execute(
                sql.query("mark_pruned"),
                {
                    "summary": _jsonb(parts.registry.redact(summary)),
                    "thread_id": row["thread_id"],
                    "ended": list(ENDED),
                },
            ).fetchone()
        if marked is None:  # requeued meanwhile: it is active again, leave it alone
            pruned.pop()
            continue
        parts.saver.prune([row["thread_id"]], strategy="delete")
    return {
        "dry_run": dry_run,
        "older_than_s": older_than.total_seconds(),
        "runs": pruned,
        "checkpoints": sum(p["checkpoints"] for p in pruned),
    }


def _summary(catalog: Catalog, thread_id: str, agent: str, checkpoints: int) -> dict[str, Any]:
    from waystone._runs.run_config import graph_config

    values: dict[str, Any] = {}
    if catalog.drives(agent):
        state = catalog.entry(agent).graph.get_state(graph_config(thread_id)).values
        values = state if isinstance(state, dict) else {}
    completed = [
        {"ordinal": c.get("ordinal"), "tool": c.get("tool"), "key": c.get("key")}
        for c in values.get("completed", [])
    ]
    return {
        "outcome": values.get("outcome"),
        "completed": completed,
        "steps": values.get("steps", 0),
        "checkpoints": checkpoints,
    }


def _jsonb(value: dict[str, Any]) -> Any:
    from psycopg.types.json import Jsonb

    return Jsonb(value)
