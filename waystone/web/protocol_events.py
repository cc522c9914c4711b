"""The events of the thread-centric protocol (``@langchain/protocol``, what
``@langchain/react``'s ``useStream`` reads), made from a run's stream as
:mod:`waystone.web.follow` sends it: pure functions of the events, no I/O.

A run's ``values``, ``updates``, ``custom``, ``checkpoints`` and ``tasks`` events keep their
data; its AI messages become the protocol's message lifecycle (``message-start``, a
content block's start, deltas and finish, ``message-finish``), token by token when the
stream has them as chunks; its interrupts become ``input.requested``; the run's moves
become ``lifecycle`` events. Each event's ``event_id`` derives from the run stream's own
id, so the same event has the same id on every connection (a client drops repeats by it).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

CHANNELS = frozenset(
    {
        "values",
        "updates",
        "checkpoints",
        "messages",
        "tools",
        "custom",
        "lifecycle",
        "input",
        "tasks",
    }
)
# the run stream's modes a protocol channel is made from
PASSED = ("values", "updates", "custom", "checkpoints", "tasks")


def bad_channels(channels: Any) -> list[str]:
    """The entries of ``channels`` that name no channel (all of it, if it is no list)."""
    if not isinstance(channels, list) or not channels:
        return ["(none)"]
    return [repr(c) for c in channels if not _is_channel(c)]


def _is_channel(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    return value in CHANNELS or (value.startswith("custom:") and len(value) > len("custom:"))


@dataclass(frozen=True)
class Filter:
    """What one subscription receives: its channels, and the namespaces (prefixes, at
    most ``depth`` deeper) it is limited to."""

    channels: frozenset[str]
    namespaces: tuple[tuple[str, ...], ...] | None = None
    depth: int | None = None

    @classmethod
    def of(cls, params: dict[str, Any]) -> Filter:
        """From a request's ``channels``, ``namespaces`` and ``depth`` (checked already)."""
        raw = params.get("namespaces")
        namespaces = None
        if isinstance(raw, list):
            kept = tuple(
                tuple(ns)
                for ns in raw
                if isinstance(ns, list) and all(isinstance(s, str) for s in ns)
            )
            namespaces = kept or None
        depth = params.get("depth")
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 0:
            depth = None
        return cls(frozenset(params["channels"]), namespaces, depth)

    def matches(self, event: dict[str, Any]) -> bool:
        method = event["method"]
        channel = "input" if method == "input.requested" else method
        params = event["params"]
        if channel == "custom":
            data = params.get("data")
            name = data.get("name") if isinstance(data, dict) else None
            if "custom" not in self.channels and f"custom:{name}" not in self.channels:
                return False
        elif channel not in self.channels:
            return False
        if not self.namespaces:
            return True
        ns = params["namespace"]
        return any(
            _prefix(ns, prefix) and (self.depth is None or len(ns) - len(prefix) <= self.depth)
            for prefix in self.namespaces
        )


def _prefix(namespace: list[str], prefix: tuple[str, ...]) -> bool:
    """Whether ``namespace`` starts with ``prefix``; a segment of ``prefix`` without a
    task id (``child``) matches any task of that node (``child:1f2…``)."""
    if len(prefix) > len(namespace):
        return False
    for want, have in zip(prefix, namespace, strict=False):
        if want != have and (":" in want or have.split(":")[0] != want):
            return False
    return True


def event(event_id: str, method: str, namespace: list[str], data: Any) -> dict[str, Any]:
    """One protocol event (its ``seq`` is the connection's, added when it is sent)."""
    stamp = int(time.time() * 1000)
    return {
        "type": "event",
        "event_id": event_id,
        "method": method,
        "params": {"namespace": namespace, "timestamp": stamp, "data": data},
    }


def lifecycle(
    run_id: str, phase: str, status: str, graph: str, error: str | None = None
) -> dict[str, Any]:
    """The run (its ``phase``: its start, or a resume) moved to ``status``."""
    data: dict[str, Any] = {"event": status, "graph_name": graph}
    if error is not None:
        data["error"] = error
    return event(f"{run_id}:lc:{phase}:{status}", "lifecycle", [], data)


def input_requested(run_id: str, interrupt: dict[str, Any]) -> dict[str, Any]:
    data = {"interrupt_id": interrupt["id"], "payload": interrupt.get("value")}
    return event(f"{run_id}:input:{interrupt['id']}", "input.requested", [], data)


@dataclass
class _Open:
    """An AI message being streamed: its text so far, its block started or not."""

    text: str = ""
    started: bool = False


@dataclass
class Messages:
    """The AI messages of a connection's stream, made into the protocol's message
    lifecycle: a whole message at once, or chunk by chunk (``AIMessageChunk``) until its
    last chunk, or until :meth:`close` (the step that made it committed)."""

    open: dict[str, _Open] = field(default_factory=dict)
    finished: set[str] = field(default_factory=set)

    def add(self, base: str, namespace: list[str], message: dict[str, Any]) -> list[dict[str, Any]]:
        kind, msg_id = str(message.get("type", "")), message.get("id")
        if not kind.lower().startswith("ai") or not isinstance(msg_id, str):
            return []  # the reference streams the model's messages only
        if msg_id in self.finished:
            return []  # streamed already, as chunks
        out: list[dict[str, Any]] = []
        say = _Sayer(base, namespace, out)
        if kind != "AIMessageChunk":
            known = self.open.pop(msg_id, None)
            text = _text(message.get("content"))
            if known is None:
                say("message-start", {"role": "ai", "id": msg_id})
                known = _Open()
            if text[len(known.text) :] or (text and not known.started):
                _grow(say, known, text[len(known.text) :] if text.startswith(known.text) else text)
            if known.started:
                say("content-block-finish", {"index": 0, "content": {"type": "text", "text": text}})
            _tool_calls(say, message.get("tool_calls") or [], 1 if known.started else 0)
            say("message-finish", {})
            self.finished.add(msg_id)
            return out
        known = self.open.get(msg_id)
        if known is None:
            known = self.open[msg_id] = _Open()
            say("message-start", {"role": "ai", "id": msg_id})
        piece = _text(message.get("content"))
        if piece:
            _grow(say, known, piece)
        if message.get("chunk_position") == "last":
            out += self._finish(base, namespace, msg_id)
        return out

    def close(self, base: str) -> list[dict[str, Any]]:
        """Finish every message still open (its step ended)."""
        out: list[dict[str, Any]] = []
        for msg_id in list(self.open):
            out += self._finish(base, [], msg_id)
        return out

    def _finish(self, base: str, namespace: list[str], msg_id: str) -> list[dict[str, Any]]:
        known = self.open.pop(msg_id)
        out: list[dict[str, Any]] = []
        say = _Sayer(f"{base}:{msg_id}", namespace, out)
        if known.started:
            say(
                "content-block-finish",
                {"index": 0, "content": {"type": "text", "text": known.text}},
            )
        say("message-finish", {})
        self.finished.add(msg_id)
        return out


class _Sayer:
    """Appends the message events of one run-stream event, numbered after its id."""

    def __init__(self, base: str, namespace: list[str], out: list[dict[str, Any]]) -> None:
        self.base, self.namespace, self.out = base, namespace, out

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        shown = {"event": kind, **data}
        self.out.append(event(f"{self.base}#{len(self.out)}", "messages", self.namespace, shown))


def _grow(say: _Sayer, known: _Open, piece: str) -> None:
    if not known.started:
        say("content-block-start", {"index": 0, "content": {"type": "text", "text": ""}})
        known.started = True
    say("content-block-delta", {"index": 0, "delta": {"type": "text-delta", "text": piece}})
    known.text += piece


def _tool_calls(say: _Sayer, calls: list[dict[str, Any]], first: int) -> None:
    for n, call in enumerate(calls, start=first):
        start = {
            "type": "tool_call_chunk",
            "id": call.get("id"),
            "name": call.get("name"),
            "args": "",
        }
        say("content-block-start", {"index": n, "content": start})
        args = json.dumps(call.get("args") or {})
        say("content-block-delta", {"index": n, "delta": {"type": "tool-call-delta", "args": args}})
        done = {
            "type": "tool_call",
            "id": call.get("id"),
            "name": call.get("name"),
            "args": call.get("args") or {},
        }
        say("content-block-finish", {"index": n, "content": done})


def _text(content: Any) -> str:
    """A message's text: its content string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def namespace_of(name: str) -> tuple[str, list[str]]:
    """A run stream event's mode and namespace (``values|child:1f…`` names a subgraph's)."""
    mode, *ns = name.split("|")
    return mode, ns


def translated(messages: Messages, event_id: str, name: str, data: Any) -> list[dict[str, Any]]:
    """The protocol events of one event of a run's stream (``event_id`` its id)."""
    mode, ns = namespace_of(name)
    if mode == "messages":
        if not isinstance(data, list) or not data or not isinstance(data[0], dict):
            return []
        return messages.add(event_id, ns, data[0])
    if mode == "updates" and isinstance(data, dict):
        return [
            event(f"{event_id}#{n}", "updates", ns, {"node": node, "values": values})
            for n, (node, values) in enumerate(data.items())
            if node != "__interrupt__"  # told as input.requested
        ]
    if mode in PASSED:
        out = messages.close(event_id) if mode == "values" else []
        if mode == "values" and isinstance(data, dict):
            data = {k: v for k, v in data.items() if k != "__interrupt__"}  # input.requested
        return [*out, event(f"{event_id}#v", mode, ns, data)]
    return []
