"""What the runtime shows of a run: its status, its history, the list of runs."""

from __future__ import annotations

import dataclasses
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from waystone._checkpointing.position import next_nodes
from waystone._runs import driver
from waystone._runs.multitask import stopped_as
from waystone._runs.registry import Run, run_id_of
from waystone._runs.run_config import graph_config
from waystone._runs.signals import APPROVAL
from waystone._runs.status import RunStatus, status_of

if TYPE_CHECKING:
    from waystone._runs.catalog import Catalog
    from waystone._runs.parts import Parts


class Views:
    def __init__(self, parts: Parts, catalog: Catalog) -> None:
        self._parts = parts
        self._catalog = catalog

    def status(self, thread_id: str) -> RunStatus:
        """A run's state, the node it resumes at and the approval it waits for, from its row
        and its latest checkpoint's: the graph is loaded only when they cannot tell."""
        run = self._parts.registry.get(thread_id)
        nodes = next_nodes(
            self._parts.db.fetch_one("graph_position", thread_id=thread_id, checkpoint_id=None)
        )
        if nodes is None:
            return self._status_from_graph(run)
        pending = None
        if run.state == "waiting" and run.waiting_for == APPROVAL:
            pending = run.evidence.get("pending_approval")  # what the run's wait recorded
        return status_of(run, nodes[0] if nodes else None, pending, self._lease(run))

    def after(self, claimed: Run, settled: Run | None) -> RunStatus:
        """A driven run's status once it waits or ends (``settled``: as its drive left it)."""
        if settled is not None and settled.state == "done":
            # the graph ended on its goal: no next step, nothing to approve, and the
            # approvals it left were consumed as stale
            return status_of(
                dataclasses.replace(settled, run_number=claimed.run_number), None, None
            )
        return self.status(claimed.thread_id)

    def revealed(self, status: RunStatus) -> RunStatus:
        """``status`` with its pending approval's arguments and its pending interrupts'
        values holding the real values (display only: never stored or logged)."""
        vault = self._parts.vault
        if status.interrupts:
            status = dataclasses.replace(
                status,
                interrupts=[
                    {**i, "value": vault.reveal_shown(i["value"])} for i in status.interrupts
                ],
            )
        pending = status.pending_approval
        if not pending or "args" not in pending:
            return status
        shown = {**pending, "args": vault.reveal_shown(pending["args"])}
        return dataclasses.replace(status, pending_approval=shown)

    def _status_from_graph(self, run: Run) -> RunStatus:
        pending, step = None, None
        if self._catalog.drives(run.agent):
            graph = self._catalog.entry(run.agent).graph
            snapshot = graph.get_state(graph_config(run.thread_id))
            step = snapshot.next[0] if snapshot.next else None
            if run.state == "waiting":
                waiting_on = driver.waiting_interrupt(snapshot)
                if waiting_on is not None and driver.kind_of(waiting_on) == APPROVAL:
                    pending = waiting_on.value
        return status_of(run, step, pending, self._lease(run))

    def _lease(self, run: Run) -> dict[str, Any] | None:
        """A running run's lease: its owner and its expiry, by Postgres' clock."""
        return self._parts.registry.lease(run.thread_id) if run.state == "running" else None

    def list(self, state: str | None, limit: int) -> list[RunStatus]:
        return [status_of(r, None, None) for r in self._parts.registry.list_runs(state, limit)]

    def history(self, thread_id: str) -> dict[str, Any]:
        """A thread's runs, events (each with the number of the run it belongs to), node
        checkpoints and effects, in order."""
        registry = self._parts.registry
        run = registry.get(thread_id)
        checkpoints: list[dict[str, Any]] = []
        if self._catalog.drives(run.agent):
            graph = self._catalog.entry(run.agent).graph
            snaps = list(graph.get_state_history(graph_config(thread_id)))
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
        past = registry.past_runs(thread_id)
        current = len(past) + 1
        events = [
            {
                **{k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in e.items()},
                "run": next((p.number for p in past if e["id"] <= p.last_event), current),
            }
            for e in registry.events(thread_id)
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
                "stopped_as": stopped_as(p.evidence),
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
                "stopped_as": stopped_as(run.evidence),
            }
        )
        effects = [
            {
                **asdict(e),
                "created_at": e.created_at.isoformat(),
                "updated_at": e.updated_at.isoformat(),
            }
            for e in self._parts.ledger.for_thread(thread_id)
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
