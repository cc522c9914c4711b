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

from waystone._runtime.driver import RUN_KEY
from waystone._streams import render
from waystone.web import debug, shapes

if TYPE_CHECKING:
    from langgraph.types import PregelTask, StateSnapshot

MODES = ("values", "updates", "messages-tuple", "messages", "debug", "checkpoints", "tasks")
JOINED = ("values", "updates", "messages-tuple")  # what a join streams when it names none


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


class RunMaker:
    """A run's events, from the checkpoints of every namespace it streams, oldest first:
    a :class:`Maker` each."""

    def __init__(self, modes: tuple[str, ...], meta: dict[str, Any]) -> None:
        self.modes, self.meta = modes, meta
        self.makers: dict[str, Maker] = {}
        self.said: set[str] = set()

    def last(self) -> dict[str, StateSnapshot]:
        """The last checkpoint of each namespace made."""
        return {ns: m.previous for ns, m in self.makers.items() if m.previous is not None}

    def add(
        self, again: dict[str, StateSnapshot], new: list[StateSnapshot], *, stopped: bool
    ) -> list[Event]:
        """The events of ``new``, after the last checkpoints read ``again`` (with the writes
        of their tasks); ``stopped``: the run stopped on its interrupts."""
        for ns, snap in again.items():
            self.makers[ns].previous = snap
        out: list[Event] = []
        for snap in new:
            ns = str(snap.config["configurable"].get("checkpoint_ns", ""))
            if ns not in self.makers:
                self.makers[ns] = Maker(self.modes, self.meta, ns, self.said)
            out += self.makers[ns].add([snap])
        if stopped and "" in self.makers:
            out += self.makers[""].stopped()
        return sorted(out, key=order)


class Maker:
    """The events of one checkpoint namespace of a run (``ns``: ``""`` for the graph, a
    subgraph's otherwise, whose events are named ``event|ns``), made checkpoint by
    checkpoint as they commit: each :meth:`add` gives the events of the checkpoints after
    those it was given before. ``said``: the ids of the messages streamed so far, shared
    by a run's makers (a message is streamed once, where it first appears)."""

    def __init__(
        self,
        modes: tuple[str, ...],
        meta: dict[str, Any],
        ns: str = "",
        said: set[str] | None = None,
    ) -> None:
        self.modes, self.meta, self.ns = modes, meta, ns
        self.said = said if said is not None else set()
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
        last = self.previous
        if last is not None and last.interrupts:
            self._interrupted(_id(last), last, out)
            for k, task in enumerate(last.tasks):
                if task.interrupts and debug.shown(task) and self._wants("debug", "tasks"):
                    result = debug.task_result(last, task, last)
                    self._task(out, _id(last), f"4x{k:06d}", result)
        return out

    def _wants(self, *modes: str) -> bool:
        return any(mode in self.modes for mode in modes)

    def _add(
        self,
        out: list[Event],
        checkpoint: str,
        tag: str,
        mode: str,
        data: Any,
        name: str | None = None,
    ) -> None:
        """An event of ``mode`` if the stream asked for it, named ``mode`` (``messages`` for
        ``messages-tuple``) with the namespace, or ``name``."""
        if mode in self.modes:
            if name is None:
                name = "messages" if mode == "messages-tuple" else mode
                name = f"{name}|{self.ns}" if self.ns else name
            out.append(Event(f"{checkpoint}.{tag}", name, data))

    def _task(self, out: list[Event], checkpoint: str, tag: str, shown: dict[str, Any]) -> None:
        """A task or its result: as ``debug`` shows it, and its payload as ``tasks``."""
        self._add(out, checkpoint, tag, "debug", shown)
        self._add(out, checkpoint, f"{tag}t", "tasks", shown["payload"])

    def _step(self, snap: StateSnapshot, out: list[Event]) -> None:
        """The events of the step that led to ``snap`` (its parent's tasks), then its
        values, then (``debug``) the tasks it starts."""
        here, previous = _id(snap), self.previous
        if previous is not None and _source(previous) != "input" and _source(snap) != "input":
            there = _id(previous)
            if previous.interrupts:  # it stopped there, and was answered
                self._interrupted(there, previous, out)
                self._add(out, there, "5r", "values", shapes.jsonable(previous.values))
                self._checkpoint(previous, "5", out)  # the step runs again
            self._results(previous, snap, out)
        if _source(snap) != "input":
            self._add(out, here, "2v", "values", shapes.jsonable(snap.values))
        self._checkpoint(snap, "2", out)

    def _checkpoint(self, snap: StateSnapshot, at: str, out: list[Event]) -> None:
        """The checkpoint (``checkpoints``, ``debug``), then the tasks it starts (``debug``,
        ``tasks``)."""
        here = _id(snap)
        if "checkpoints" in self.modes:
            self._add(out, here, f"{at}vc", "checkpoints", debug.plain_checkpoint(snap))
        if "debug" in self.modes:
            self._add(out, here, f"{at}w", "debug", debug.checkpoint(snap))
        if not self._wants("debug", "tasks"):
            return
        for k, task in enumerate(snap.tasks):
            if debug.shown(task):
                self._task(out, here, f"{at}x{k:06d}", debug.task(snap, task, self.meta))

    def _results(self, previous: StateSnapshot, snap: StateSnapshot, out: list[Event]) -> None:
        """What ``previous``'s tasks wrote, as ``snap`` follows them: their new messages,
        their results (``debug``), their updates."""
        here, n = _id(snap), 0
        known = {m["id"] for m in _messages(previous.values)[1] if m.get("id")}
        fresh = [m for m in _messages(snap.values)[1] if m.get("id") not in known]
        written = [_messages(task.result, fresh) for task in previous.tasks]
        for task, (_, messages) in zip(previous.tasks, written, strict=True):
            for message in messages:
                said = message.get("id")
                if said and (said in known or said in self.said):
                    continue  # the node's input, or streamed already (by a subgraph)
                if said:
                    self.said.add(said)
                if self._wants("messages-tuple", "messages"):
                    meta = self._written_by(task, snap)
                    self._message(out, here, f"0m{n:06d}", message, meta)
                n += 1
        for k, (task, (result, _)) in enumerate(zip(previous.tasks, written, strict=True)):
            ran = task.result is not None or task.error is not None
            if debug.shown(task) and ran and self._wants("debug", "tasks"):
                shown = debug.task_result(previous, task, snap, result=result)
                self._task(out, here, f"1x{k:06d}", shown)
        for k, (task, (result, _)) in enumerate(zip(previous.tasks, written, strict=True)):
            if task.result is not None:
                self._add(out, here, f"1u{k:06d}", "updates", {task.name: result})

    def _written_by(self, task: PregelTask, snap: StateSnapshot) -> dict[str, Any]:
        """The metadata of a message ``task`` wrote (its step's checkpoint ``snap``), as
        the reference has it for a message a node returns: the node's own."""
        own = f"{task.name}:{task.id}"
        meta = {
            **self.meta,
            "ls_integration": "langgraph",
            "langgraph_step": int((snap.metadata or {}).get("step", 0)),
            "langgraph_node": task.name,
            "langgraph_triggers": debug.triggers(task),
            "langgraph_path": shapes.jsonable(task.path),
            "langgraph_checkpoint_ns": f"{self.ns}|{own}" if self.ns else own,
        }
        if self.ns:  # the graph the node runs in, a subgraph's alone
            meta["checkpoint_ns"] = self.ns
        return meta

    def _message(
        self,
        out: list[Event],
        checkpoint: str,
        tag: str,
        message: dict[str, Any],
        meta: dict[str, Any],
    ) -> None:
        """A committed message: ``[message, metadata]`` (``messages-tuple``), or else its
        metadata then the message whole (``messages``: the reference sends a message it did
        not stream token by token so, named without a namespace)."""
        if "messages-tuple" in self.modes:
            self._add(out, checkpoint, tag, "messages-tuple", [message, meta])
            return
        for k, (name, data) in enumerate(render.complete(message, meta)):
            self._add(out, checkpoint, f"{tag}{k}", "messages", data, name=name)

    def _interrupted(self, checkpoint: str, snap: StateSnapshot, out: list[Event]) -> None:
        interrupts = [_interrupt(i) for i in snap.interrupts]
        self._add(out, checkpoint, "3i0", "updates", {"__interrupt__": interrupts})
        values = shapes.jsonable(snap.values)
        if isinstance(values, dict):  # as the reference's values at an interrupt
            values = {**values, "__interrupt__": interrupts}
        self._add(out, checkpoint, "4i1", "values", values)


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


def order(event: Event) -> tuple[str, str]:
    """Where ``event`` goes among a run's events: events are sent in the order of their
    ids."""
    return _key(event.id)


def _key(event_id: str) -> tuple[str, str]:
    checkpoint, _, tag = event_id.partition(".")
    return checkpoint, tag


def _interrupt(item: Any) -> dict[str, Any]:
    """An interrupt as the reference's streams serialize it (its dataclass's fields)."""
    schema = getattr(item, "response_schema", None)
    shown = shapes.jsonable(schema) if isinstance(schema, dict) else None
    return {"value": shapes.jsonable(item.value), "id": item.id, "response_schema": shown}


def _source(snap: StateSnapshot) -> Any:
    return (snap.metadata or {}).get("source")


def _id(snap: StateSnapshot) -> str:
    return str(snap.config["configurable"]["checkpoint_id"])


def _messages(
    written: Any, fresh: list[dict[str, Any]] | None = None
) -> tuple[Any, list[dict[str, Any]]]:
    """``written`` (a task's writes, or a state's values) as JSON, and the messages it
    holds, as LangGraph's messages stream finds them in a node's output. A message written
    without an id got one in the state: it takes the id of the first message of ``fresh``
    (those new in the state) it is."""
    from langchain_core.messages import BaseMessage

    if not isinstance(written, dict):
        return shapes.jsonable(written), []
    shown: dict[str, Any] = {}
    found: list[dict[str, Any]] = []
    for key, value in written.items():
        items = value if isinstance(value, list) else [value]
        made = []
        for item in items:
            data = shapes.jsonable(item)
            if isinstance(item, BaseMessage):
                data = data if data.get("id") or fresh is None else _with_id(data, fresh)
                found.append(data)
            made.append(data)
        shown[str(key)] = made if isinstance(value, list) else made[0]
    return shown, found


def _with_id(message: dict[str, Any], fresh: list[dict[str, Any]]) -> dict[str, Any]:
    for k, candidate in enumerate(fresh):
        if {**candidate, "id": None} == {**message, "id": None}:
            del fresh[k]
            return candidate
    return message
