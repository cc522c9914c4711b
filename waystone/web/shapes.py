"""Waystone's runs, threads and graph states in the shapes of the LangGraph server API
(``langgraph_sdk.schema``): what its clients read."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from waystone._runs.api_shapes import RUN_STATUS, THREAD_STATUS
from waystone._runs.api_shapes import assistant_id as assistant_id  # the web edge's, too
from waystone._runs.api_shapes import jsonable as jsonable

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

    from waystone._runtime.threads import Thread
    from waystone.runtime import RunStatus

SETTLED = ("done", "failed", "needs-human")


def run(
    status: RunStatus, assistant: str, metadata: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The thread's current run, with the ``metadata`` it was created with."""
    assistant = _assistant(assistant, metadata)
    shown = _run(status.run_id, status.thread_id, assistant, status.state, status.updated_at)
    if _cancelled(status.state, status.reason):
        shown["status"] = "interrupted"
    return {**shown, "metadata": metadata or {}}


def past_run(
    thread_id: str, past: dict[str, Any], assistant: str, metadata: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A run of the thread's history (``Runtime.history``'s ``runs``)."""
    assistant = _assistant(assistant, metadata)
    shown = _run(past["run_id"], thread_id, assistant, past["state"], past["created_at"])
    if past.get("stopped_as") in ("interrupt", "supersede"):  # a later run stopped it
        shown["status"] = "interrupted"
    if _cancelled(past["state"], past.get("reason")):
        shown["status"] = "interrupted"
    updated = past["ended_at"] or past["created_at"]
    return {**shown, "updated_at": updated, "metadata": metadata or {}}


def _cancelled(state: str, reason: str | None) -> bool:
    """A run cancelled (``Runtime.cancel``): ``interrupted``, as the reference shows a run
    its cancel (``action=interrupt``) stopped."""
    return state == "failed" and (reason or "").startswith("cancelled by ")


def _assistant(graph_assistant: str, metadata: dict[str, Any] | None) -> str:
    """A run's assistant: the one its metadata names (a user's assistant's runs are made
    with its id there), or its graph's own."""
    return str((metadata or {}).get("assistant_id") or graph_assistant)


def _run(run_id: str | None, thread_id: str, assistant: str, state: str, at: str) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "thread_id": thread_id,
        "assistant_id": assistant,
        "created_at": at,
        "updated_at": at,
        "status": RUN_STATUS[state],
        "metadata": {},
        "kwargs": {},
        "multitask_strategy": "reject",
    }


def thread(found: Thread, snapshot: StateSnapshot | None) -> dict[str, Any]:
    interrupts: dict[str, list[dict[str, Any]]] = {}
    if snapshot is not None:
        for task in snapshot.tasks:
            if task.interrupts:
                interrupts[task.id] = [_interrupt(i) for i in task.interrupts]
    shown = {
        "thread_id": found.thread_id,
        "created_at": found.created_at.isoformat(),
        "updated_at": found.updated_at.isoformat(),
        "state_updated_at": found.updated_at.isoformat(),
        "metadata": found.metadata,
        "status": THREAD_STATUS.get(found.state, "idle"),
        "values": jsonable(snapshot.values) if snapshot is not None else {},
        "config": {},
    }
    if interrupts:  # as the reference server: the key only when some are pending
        shown["interrupts"] = interrupts
    return shown


def state(thread_id: str, snapshot: StateSnapshot | None) -> dict[str, Any]:
    """A thread's state at a checkpoint (``ThreadState``); an empty one before any."""
    if snapshot is None or not snapshot.config:
        return {
            "values": {},
            "next": [],
            "tasks": [],
            "metadata": {},
            "created_at": None,
            "checkpoint": _checkpoint(thread_id, None),
            "checkpoint_id": None,
            "parent_checkpoint": None,
            "parent_checkpoint_id": None,
            "interrupts": [],
        }
    parent = snapshot.parent_config
    checkpoint = _checkpoint(thread_id, snapshot.config)
    parent_checkpoint = _checkpoint(thread_id, parent) if parent else None
    return {
        "values": jsonable(snapshot.values),
        "next": list(snapshot.next),
        "tasks": [
            {
                "id": task.id,
                "name": task.name,
                "error": None if task.error is None else repr(task.error),
                "interrupts": [_interrupt(i) for i in task.interrupts],
                "checkpoint": None,
                "state": None,
                "result": jsonable(task.result) if task.result is not None else None,
            }
            for task in snapshot.tasks
        ],
        "metadata": jsonable(dict(snapshot.metadata or {})),
        "created_at": snapshot.created_at,
        "checkpoint": checkpoint,
        "checkpoint_id": checkpoint["checkpoint_id"],
        "parent_checkpoint": parent_checkpoint,
        "parent_checkpoint_id": parent_checkpoint["checkpoint_id"] if parent_checkpoint else None,
        "interrupts": [_interrupt(i) for i in snapshot.interrupts],
    }


def output(snapshot: StateSnapshot | None) -> dict[str, Any]:
    """What a run's wait returns: the thread's values, with the interrupts it stopped on
    under ``__interrupt__`` (as the values stream's last event has them)."""
    if snapshot is None:
        return {}
    values = jsonable(snapshot.values)
    values = values if isinstance(values, dict) else {"values": values}
    if snapshot.interrupts:
        values["__interrupt__"] = [_interrupt(i) for i in snapshot.interrupts]
    return values


def checkpoint(thread_id: str, config: Any) -> dict[str, Any]:
    """The checkpoint a LangGraph config names, as the API shows it."""
    return _checkpoint(thread_id, config)


def _checkpoint(thread_id: str, config: Any) -> dict[str, Any]:
    configurable = (config or {}).get("configurable", {})
    return {
        "thread_id": thread_id,
        "checkpoint_ns": configurable.get("checkpoint_ns", ""),
        "checkpoint_id": configurable.get("checkpoint_id"),
        "checkpoint_map": configurable.get("checkpoint_map"),
    }


def _interrupt(item: Any) -> dict[str, Any]:
    return {"value": jsonable(item.value), "id": item.id}
