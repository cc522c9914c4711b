"""A run's stream, made from its committed checkpoints: each step's ``updates`` (the writes
its tasks committed), the messages they hold (``messages-tuple``) and the ``values`` after
it, in the order the reference server sends them. Nothing is streamed that is not in
Postgres, so a client that reconnects (``Last-Event-ID``), or joins later, gets every
event once and in order, whichever worker produced it: a step a killed worker did not
commit produced no event, and the worker that runs it again produces them.

Each event's id names the checkpoint it comes from and its place there, so the sequence
is the same each time it is made, and ids sort in the order events are sent (checkpoint
ids sort by time). A step's events are sent once its checkpoint commits:
tokens of a model's answer are not streamed as they come.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from waystone._runs.driver import RUN_KEY
from waystone.web import shapes

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

MODES = ("values", "updates", "messages-tuple")


@dataclass(frozen=True)
class Event:
    id: str
    event: str
    data: Any


def run_checkpoints(history: Iterator[StateSnapshot], run_id: str | None) -> list[StateSnapshot]:
    """The run's checkpoints, oldest first, from the thread's history (newest first):
    those its run wrote (all of them for a thread of one run, ``run_id`` ``None``)."""
    found: list[StateSnapshot] = []
    for snap in history:
        if run_id is not None and (snap.metadata or {}).get(RUN_KEY) != run_id:
            break  # an earlier run's: the run began after it
        found.append(snap)
    found.reverse()
    return found


def events(
    checkpoints: list[StateSnapshot],
    modes: tuple[str, ...],
    *,
    waiting: bool,
    meta: dict[str, Any],
) -> list[Event]:
    """The run's events so far. ``waiting``: the run stopped on the interrupts of its last
    checkpoint (they are sent, then its values again, as the reference does)."""
    out: list[Event] = []

    def add(checkpoint: str, tag: str, event: str, data: Any) -> None:
        if event == "messages" and "messages-tuple" in modes or event in modes:
            out.append(Event(f"{checkpoint}.{tag}", event, data))

    previous: StateSnapshot | None = None
    for snap in checkpoints:
        here = _id(snap)
        if (snap.metadata or {}).get("source") == "input":
            previous = snap
            continue
        if previous is not None and (previous.metadata or {}).get("source") != "input":
            there = _id(previous)
            if previous.interrupts:  # it stopped there, and was answered
                _interrupted(add, there, previous)
                add(there, "5r", "values", shapes.jsonable(previous.values))
            n = 0
            for task in previous.tasks:
                for message in _messages(task.result):
                    data = [message, {**meta, "langgraph_node": task.name}]
                    add(here, f"0m{n:06d}", "messages", data)
                    n += 1
            for k, task in enumerate(previous.tasks):
                if task.result is not None:
                    update = {task.name: shapes.jsonable(task.result)}
                    add(here, f"1u{k:06d}", "updates", update)
        add(here, "2v", "values", shapes.jsonable(snap.values))
        previous = snap
    if waiting and previous is not None and previous.interrupts:
        _interrupted(add, _id(previous), previous)
    return out


def resumed_from(checkpoint: StateSnapshot) -> str:
    """The id of the last event a run had sent when it stopped at ``checkpoint``: a stream
    of its answer starts after it."""
    return f"{_id(checkpoint)}.4i1"


def after(found: list[Event], last_id: str | None) -> list[Event]:
    """The events sent after the one ``last_id`` names (made yet or not)."""
    if last_id is None:
        return found
    last = _key(last_id)
    return [event for event in found if _key(event.id) > last]


def _key(event_id: str) -> tuple[str, str]:
    checkpoint, _, tag = event_id.partition(".")
    return checkpoint, tag


def _interrupted(add: Any, checkpoint: str, snap: StateSnapshot) -> None:
    interrupts = [{"value": shapes.jsonable(i.value), "id": i.id} for i in snap.interrupts]
    add(checkpoint, "3i0", "updates", {"__interrupt__": interrupts})
    add(checkpoint, "4i1", "values", shapes.jsonable(snap.values))


def _id(snap: StateSnapshot) -> str:
    return str(snap.config["configurable"]["checkpoint_id"])


def _messages(result: Any) -> list[Any]:
    """The messages a task's writes hold (as LangGraph's messages stream finds them in a
    node's output)."""
    from langchain_core.messages import BaseMessage

    if not isinstance(result, dict):
        return []
    found: list[Any] = []
    for value in result.values():
        items = value if isinstance(value, list) else [value]
        found += [shapes.jsonable(m) for m in items if isinstance(m, BaseMessage)]
    return found
