"""A run's history: its events, its node checkpoints and its effects, in order."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from waystone.runs.registry import run_id_of

if TYPE_CHECKING:
    from waystone.runtime import Runtime


def history(rt: Runtime, thread_id: str) -> dict[str, Any]:
    """A thread's runs, events (each with the number of the run it belongs to), node
    checkpoints and effects, in order."""
    run = rt.registry.get(thread_id)
    checkpoints: list[dict[str, Any]] = []
    if run.agent in rt.agents or run.agent in rt.graph_sources:
        graph = rt.graph(run.agent)
        snaps = list(graph.get_state_history(rt.config(thread_id)))
        snaps.reverse()
        previous_next: list[str] = []
        for snap in snaps:
            meta = snap.metadata or {}
            checkpoints.append(
                {
                    "checkpoint_id": snap.config["configurable"]["checkpoint_id"],
                    "step": meta.get("step"),
                    "source": meta.get("source"),
                    "after": previous_next,
                    "next": list(snap.next),
                    "created_at": snap.created_at,
                }
            )
            previous_next = list(snap.next)
    past = rt.registry.past_runs(thread_id)
    current = len(past) + 1
    events = [
        {
            **{k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in e.items()},
            "run": next((p.number for p in past if e["id"] <= p.last_event), current),
        }
        for e in rt.registry.events(thread_id)
    ]
    runs = [
        {
            "run": p.number,
            "run_id": p.run_id,
            "state": p.state,
            "reason": p.reason,
            "input": p.input,
            "created_at": p.created_at.isoformat(),
            "ended_at": p.ended_at.isoformat(),
        }
        for p in past
    ]
    runs.append(
        {
            "run": current,
            "run_id": run_id_of(thread_id, current),
            "state": run.state,
            "reason": run.reason,
            "input": run.input,
            "created_at": run.created_at.isoformat(),
            "ended_at": run.updated_at.isoformat() if run.state in ("done", "failed") else None,
        }
    )
    effects = [
        {
            **asdict(e),
            "created_at": e.created_at.isoformat(),
            "updated_at": e.updated_at.isoformat(),
        }
        for e in rt.ledger.for_thread(thread_id)
    ]
    return {
        "thread_id": thread_id,
        "state": run.state,
        "reason": run.reason,
        "summary": run.summary,
        "pruned_at": run.pruned_at.isoformat() if run.pruned_at else None,
        "runs": runs,
        "events": events,
        "checkpoints": checkpoints,
        "effects": effects,
    }
