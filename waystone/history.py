"""A run's history: its events, its node checkpoints and its effects, in order."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from waystone.runtime import Runtime


def history(rt: Runtime, thread_id: str) -> dict[str, Any]:
    """Events, node checkpoints and effects of a run, in order."""
    run = rt.registry.get(thread_id)
    checkpoints: list[dict[str, Any]] = []
    if run.agent in rt.agents:
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
    events = [
        {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in e.items()}
        for e in rt.registry.events(thread_id)
    ]
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
        "events": events,
        "checkpoints": checkpoints,
        "effects": effects,
    }
