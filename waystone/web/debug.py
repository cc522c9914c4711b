"""The ``debug``, ``checkpoints`` and ``tasks`` stream modes' payloads, made from committed
checkpoints as LangGraph's ``map_debug_checkpoint``, ``map_debug_tasks`` and
``map_debug_task_results`` make them live. What a checkpoint does not record is derived:
a node's trigger is its ``branch:to:`` channel (``__pregel_push`` for a ``Send``), its
input the state it read (none for a ``Send``, whose argument the snapshot does not keep),
and each event's timestamp is its checkpoint's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from waystone._streams import render
from waystone.web import shapes

if TYPE_CHECKING:
    from langgraph.types import PregelTask, StateSnapshot


def shown(task: PregelTask) -> bool:
    """Whether the reference streams the task (LangGraph hides its own, ``__start__``)."""
    return not task.name.startswith("__")


def checkpoint(snap: StateSnapshot) -> dict[str, Any]:
    """A checkpoint as it was when it committed, its tasks not yet run: the ``debug``
    event."""
    payload = render.debug_checkpoint(plain_checkpoint(snap))
    return _event(snap, "checkpoint", payload, step=_step(snap))


def plain_checkpoint(snap: StateSnapshot) -> dict[str, Any]:
    """The checkpoint as the ``checkpoints`` mode shows it (a subgraph's task with the
    config it saves under as its ``state``)."""
    return {
        "config": _config(snap.config),
        "parent_config": _config(snap.parent_config),
        "values": shapes.jsonable(snap.values),
        "metadata": shapes.jsonable(dict(snap.metadata or {})),
        "next": list(snap.next),
        "tasks": [
            {"id": t.id, "name": t.name, "interrupts": [], "state": shapes.jsonable(t.state)}
            for t in snap.tasks
        ],
    }


def task(snap: StateSnapshot, task: PregelTask, meta: dict[str, Any]) -> dict[str, Any]:
    payload = {
        "id": task.id,
        "name": task.name,
        "input": None if pushed(task) else shapes.jsonable(snap.values),
        "triggers": triggers(task),
        "metadata": meta,
    }
    return _event(snap, "task", payload, step=_step(snap) + 1)


def pushed(task: PregelTask) -> bool:
    """Whether a ``Send`` started the task."""
    return bool(task.path) and task.path[0] == "__pregel_push"


def triggers(task: PregelTask) -> list[str]:
    return ["__pregel_push"] if pushed(task) else [f"branch:to:{task.name}"]


def task_result(
    snap: StateSnapshot, task: PregelTask, at: StateSnapshot, *, result: Any = None
) -> dict[str, Any]:
    """The result of ``snap``'s ``task``, as the checkpoint ``at`` (its successor, or
    ``snap`` itself for a task that stopped on an interrupt) records it. ``result``: what
    it wrote, when it ran to its end (its interrupts, if any, were answered)."""
    ended = result is not None
    payload = {
        "id": task.id,
        "name": task.name,
        "error": None if task.error is None else repr(task.error),
        "result": result if result is not None else {},
        "interrupts": [
            {"value": shapes.jsonable(i.value), "id": i.id, "response_schema": None}
            for i in ([] if ended else task.interrupts)
        ],
    }
    return _event(at, "task_result", payload, step=_step(snap) + 1)


def _event(snap: StateSnapshot, kind: str, payload: dict[str, Any], step: int) -> dict[str, Any]:
    return {"step": step, "timestamp": snap.created_at, "type": kind, "payload": payload}


def _step(snap: StateSnapshot) -> int:
    return int((snap.metadata or {}).get("step", -1))


def _config(config: Any) -> dict[str, Any] | None:
    if not config:
        return None
    configurable = {k: v for k, v in config.get("configurable", {}).items() if k[0] != "_"}
    return {"configurable": shapes.jsonable(configurable)}
