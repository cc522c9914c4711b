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


class Maker:
    """A run's events, made checkpoint by checkpoint as they commit: each call to
    :meth:`add` gives the events of the checkpoints after those it was given before."""

    def __init__(self, modes: tuple[str, ...], meta: dict[str, Any]) -> None:
        self.modes, self.meta = modes, meta
        self.previous: StateSnapshot | None = None

    def add(self, checkpoints: list[StateSnapshot]) -> list[Event]:
        out: list[Event] = []
        for snap in checkpoints:
            self._step(snap, out)
            self.previous = snap
        return out

    def stopped(self) -> list[Event]:
        """The run stopped on the interrupts of its last checkpoint: they are sent, then
        its values again, as the reference does."""
        out: list[Event] = []
        if self.previous is not None and self.previous.interrupts:
            self._interrupted(_id(self.previous), self.previous, out)
        return out

    def _add(self, out: list[Event], checkpoint: str, tag: str, event: str, data: Any) -> None:
        if event == "messages" and "messages-tuple" in self.modes or event in self.modes:
            out.append(Event(f"{checkpoint}.{tag}", event, data))

    def _step(self, snap: StateSnapshot, out: list[Event]) -> None:
        """The events of the step that led to ``snap`` (its parent's tasks), then its
        values."""
        here, previous = _id(snap), self.previous
        if (snap.metadata or {}).get("source") == "input":
            return
        if previous is not None and (previous.metadata or {}).get("source") != "input":
            there = _id(previous)
            if previous.interrupts:  # it stopped there, and was answered
                self._interrupted(there, previous, out)
                self._add(out, there, "5r", "values", shapes.jsonable(previous.values))
            n = 0
            for task in previous.tasks:
                for message in _messages(task.result):
                    data = [message, {**self.meta, "langgraph_node": task.name}]
                    self._add(out, here, f"0m{n:06d}", "messages", data)
                    n += 1
            for k, task in enumerate(previous.tasks):
                if task.result is not None:
                    update = {task.name: shapes.jsonable(task.result)}
                    self._add(out, here, f"1u{k:06d}", "updates", update)
        self._add(out, here, "2v", "values", shapes.jsonable(snap.values))

    def _interrupted(self, checkpoint: str, snap: StateSnapshot, out: list[Event]) -> None:
        interrupts = [{"value": shapes.jsonable(i.value), "id": i.id} for i in snap.interrupts]
        self._add(out, checkpoint, "3i0", "updates", {"__interrupt__": interrupts})
        self._add(out, checkpoint, "4i1", "values", shapes.jsonable(snap.values))


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
