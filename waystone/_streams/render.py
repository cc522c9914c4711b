"""LangGraph's native stream chunks as the LangGraph server API's stream events, named and
shaped as the reference server (``langgraph_api/stream.py``) sends them: ``mode`` or, for a
subgraph's chunk when the stream asks for subgraphs, ``mode|ns``. Pure and cheap: it runs
for every token a model emits.

A run's live events come from driving its graph with ``graph.stream(...,
stream_mode=native_modes(api_modes), subgraphs=<the run's stream_subgraphs>)`` and rendering
each ``(ns, mode, chunk)`` it yields; the ``events`` mode asks for LangChain's callback
events instead (``astream_events(version="v2")``), whose each event :func:`from_event` turns
into a chunk. The legacy ``messages`` mode (a message growing token by token) needs the
chunks of a message so far: :class:`LegacyMessages` keeps them, one per run attempt.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from langgraph.types import Send
from pydantic import BaseModel

from waystone._runs.api_shapes import jsonable

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

# The API modes whose events come from the worker while a node runs; the others (values,
# updates, debug, checkpoints, tasks) are made from the run's committed checkpoints.
LIVE_MODES = frozenset({"messages-tuple", "messages", "custom", "events", "tools"})

# Not a mode of graph.stream: the graph is driven by astream_events(version="v2") instead,
# as the reference does when a client asks for ``events`` (see from_event).
EVENTS = "events"

_NATIVE = {
    "messages-tuple": "messages",
    "messages": "messages",
    "custom": "custom",
    "tools": "tools",
    "events": EVENTS,
}

LEGACY = ("messages/metadata", "messages/partial", "messages/complete")


def native_modes(api_modes: Iterable[str]) -> list[str]:
    """The native stream modes that make the live events of ``api_modes`` (sorted, each
    once; none for a mode made from checkpoints)."""
    return sorted({_NATIVE[m] for m in api_modes if m in _NATIVE})


def render(ns: tuple[str, ...], mode: str, chunk: Any, *, subgraphs: bool) -> list[tuple[str, Any]]:
    """One native chunk as the reference's ``(event name, JSON data)`` pairs. A ``messages``
    chunk is rendered as ``messages-tuple`` (``[message, metadata]``); the legacy shape is
    :class:`LegacyMessages`'s. ``subgraphs``: whether the stream asked for its subgraphs'
    events (without, a graph streamed with ``subgraphs=False`` yields none from them)."""
    if ns and not subgraphs and mode != EVENTS:
        return []
    if mode == EVENTS:  # one name whatever the namespace, as the reference's
        return [("events", _json(chunk))]
    name = f"{mode}|{'|'.join(ns)}" if ns else mode
    if mode == "messages":
        message, metadata = chunk
        return [(name, [_json(message), _json(metadata)])]
    if mode == "debug" and isinstance(chunk, dict) and chunk.get("type") == "checkpoint":
        return [(name, {**_json(chunk), "payload": debug_checkpoint(chunk["payload"])})]
    return [(name, _json(chunk))]


def from_event(
    event: Mapping[str, Any], run_id: str, *, subgraphs: bool
) -> tuple[tuple[str, ...], str, Any] | None:
    """What an ``astream_events(version="v2")`` event of the run ``run_id`` (the graph's
    config's ``run_id``) carries, as a native chunk for :func:`render`: the graph's own
    stream chunk for its ``on_chain_stream``, the event itself (mode ``events``) for any
    other; ``None`` for an event hidden from streams (``langsmith:hidden``)."""
    if "langsmith:hidden" in (event.get("tags") or ()):
        return None
    if event.get("event") == "on_chain_stream" and str(event.get("run_id")) == run_id:
        carried = event["data"]["chunk"]
        if subgraphs:
            ns, mode, chunk = carried
            return tuple(ns), mode, chunk
        mode, chunk = carried
        return (), mode, chunk
    return (), EVENTS, event


def debug_checkpoint(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A ``checkpoints`` payload as the ``debug`` mode shows it: with ``checkpoint`` and
    ``parent_checkpoint`` (the configs' references) and, for a task that runs a subgraph,
    its ``checkpoint`` in place of its ``state``."""
    shown = _json(payload)
    tasks = []
    for task in shown.get("tasks", []):
        state = task.get("state")
        if isinstance(state, dict) and state.get("configurable"):
            task = {k: v for k, v in task.items() if k != "state"}
            task["checkpoint"] = state["configurable"]
        tasks.append(task)
    return {
        **shown,
        "checkpoint": _reference(shown.get("config")),
        "parent_checkpoint": _reference(shown.get("parent_config")),
        "tasks": tasks,
    }


def complete(message: Mapping[str, Any], metadata: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """A whole message in the legacy ``messages`` mode (one not streamed token by token):
    its metadata, then the message."""
    return [
        ("messages/metadata", {message.get("id"): {"metadata": _json(metadata)}}),
        ("messages/complete", [_json(message)]),
    ]


class LegacyMessages:
    """The legacy ``messages`` mode of one run attempt: a message's metadata when its first
    chunk comes, then the message so far (``messages/partial``, the chunks added up) at each
    chunk, or whole (``messages/complete``) for a message that came whole."""

    def __init__(self) -> None:
        self._sofar: dict[Any, BaseMessage] = {}

    def add(self, chunk: tuple[Any, Mapping[str, Any]]) -> list[tuple[str, Any]]:
        """The events of one native ``messages`` chunk (``(message, metadata)``)."""
        from langchain_core.messages import BaseMessageChunk, message_chunk_to_message

        message, as_given = _message(chunk[0])
        out: list[tuple[str, Any]] = []
        known = self._sofar.get(message.id)
        if known is None:
            out.append(("messages/metadata", {message.id: {"metadata": _json(chunk[1])}}))
        is_chunk = isinstance(message, BaseMessageChunk)
        # a whole message seen again replaces what was kept (the reference adds it up too)
        if known is not None and is_chunk and isinstance(known, BaseMessageChunk):
            self._sofar[message.id] = known + message
        else:
            self._sofar[message.id] = message
        sofar = self._sofar[message.id]
        name = "messages/partial" if is_chunk else "messages/complete"
        shown = sofar if as_given else message_chunk_to_message(sofar)
        return [*out, (name, [_json(shown)])]


def _message(given: Any) -> tuple[BaseMessage, bool]:
    """A chunk's message, and whether it was a chunk's dict (the reference sends those as
    they add up, not made whole)."""
    from langchain_core.messages import (
        AIMessageChunk,
        BaseMessageChunk,
        ToolMessageChunk,
        convert_to_messages,
    )

    if not isinstance(given, dict):
        return given, False
    kind, role = str(given.get("type", "")).lower(), str(given.get("role", "")).lower()
    if "chunk" not in kind and "chunk" not in role:
        return convert_to_messages([given])[0], False
    if "ai" in role:
        return AIMessageChunk(**given), True
    if "tool" in role:
        return ToolMessageChunk(**given), True
    return BaseMessageChunk(**given), True


def _reference(config: Any) -> dict[str, Any] | None:
    """The checkpoint a config names (``runnable_config_to_checkpoint``'s shape)."""
    configurable = (config or {}).get("configurable") or {}
    if not configurable.get("thread_id") or not configurable.get("checkpoint_id"):
        return None
    found = {
        "checkpoint_id": configurable["checkpoint_id"],
        "thread_id": configurable["thread_id"],
    }
    if "checkpoint_ns" in configurable:
        found["checkpoint_ns"] = configurable["checkpoint_ns"] or ""
    if "checkpoint_map" in configurable:
        found["checkpoint_map"] = configurable["checkpoint_map"]
    return found


def _json(value: Any) -> Any:
    """``value`` as the reference's JSON has it: a message or any pydantic model as its
    fields, a ``Send`` as its node and argument, an error as its type and message; anything
    else as :func:`jsonable` makes it. Plain values first: this runs for every token."""
    if value is None or isinstance(value, str | int | float):
        return value
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Send):
        return {"node": value.node, "args": _json(value.arg)}
    if isinstance(value, BaseException):
        return {"error": type(value).__name__, "message": str(value)}
    return jsonable(value)
