"""Stream events compared by what a client can rely on: ids, times and what the server
adds to a run's config and metadata are taken out (``shape``), so the reference server's
events (``scripts/modes_diff.py`` records them) and Waystone's compare one to one. And the
events :mod:`waystone._streams.render` makes of :mod:`tests.support.mode_graphs`' graph run
in this process, as a worker would make them."""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import Any

from waystone._streams import render

# Every mode of the reference's stream endpoints (``tools`` is refused there).
MODES = (
    "values",
    "updates",
    "messages-tuple",
    "messages",
    "custom",
    "events",
    "debug",
    "checkpoints",
    "tasks",
)
INPUT = {"messages": [{"role": "user", "content": "what?"}]}

_ID = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|lc_run--\S+|\d{4}-\d\d-\d\dT[\d:.]+(\+00:00|Z)?"
)
# What the reference server puts in a run's configurable and metadata (its run, thread,
# assistant, versions, host and auth), and what Waystone puts in a checkpoint's metadata
# (its run, lease and key namespace): each server's own, not the stream's shape.
SERVER_KEYS = frozenset(
    {
        "waystone_run",
        "lease_token",
        "key_namespace",
        "created_by",
        "graph_id",
        "assistant_id",
        "run_attempt",
        "langgraph_version",
        "langgraph_api_version",
        "langgraph_plan",
        "langgraph_host",
        "langgraph_api_url",
        "run_id",
        "thread_id",
        "user_id",
        "langgraph_auth_user",
        "langgraph_auth_user_id",
        "langgraph_auth_permissions",
        "langgraph_request_id",
        "__request_start_time_ms__",
        "__after_seconds__",
    }
)


def shape(value: Any) -> Any:
    """``value`` without ids, times and the server's keys; a ``metadata`` left empty is
    left out (the reference's tasks carry one only when it holds something). A message's
    id the graph's reducer gives it after the event is ``<id>`` too (the reference
    serializes an event later, when it has one)."""
    if isinstance(value, dict):
        shown = {
            _ID.sub("<id>", str(k)): shape(v) for k, v in value.items() if k not in SERVER_KEYS
        }
        if shown.get("metadata") == {}:
            del shown["metadata"]
        if "type" in shown and "id" in shown and shown["id"] is None:
            shown["id"] = "<id>"
        return shown
    if isinstance(value, list | tuple):
        return [shape(v) for v in value]
    if isinstance(value, str):
        return _ID.sub("<id>", value)
    return value


def shapes(events: list[tuple[str, Any]] | list[list[Any]]) -> list[list[Any]]:
    """Events as ``[name, data]`` pairs, shaped."""
    return [[_ID.sub("<id>", name), shape(data)] for name, data in events]


def rendered(mode: str, subgraphs: bool) -> list[tuple[str, Any]]:
    """The events of ``mode`` for a run of the modes graph, as a worker renders the native
    chunks (an in-memory checkpointer stands for Waystone's)."""
    from langgraph.checkpoint.memory import InMemorySaver

    from tests.support import mode_graphs

    graph = mode_graphs.builder.compile(checkpointer=InMemorySaver())
    config: dict[str, Any] = {"configurable": {"thread_id": str(uuid.uuid4())}}
    if mode == "events":
        return asyncio.run(_events(graph, config, subgraphs))
    natives = render.native_modes([mode]) or [mode]
    legacy = render.LegacyMessages()
    out: list[tuple[str, Any]] = []
    for item in graph.stream(INPUT, config, stream_mode=natives, subgraphs=subgraphs):
        ns, native, chunk = item if subgraphs else ((), *item)
        if mode == "messages":
            out += legacy.add(chunk)
        else:
            out += render.render(ns, native, chunk, subgraphs=subgraphs)
    return out


async def _events(graph: Any, config: dict[str, Any], subgraphs: bool) -> list[tuple[str, Any]]:
    run_id = uuid.uuid4()
    out: list[tuple[str, Any]] = []
    # the root graph is named as the reference's server names it: by its graph id
    given = {**config, "run_id": run_id, "run_name": "modes"}
    async for event in graph.astream_events(
        INPUT, given, version="v2", stream_mode=["debug"], subgraphs=subgraphs
    ):
        chunk = render.from_event(event, str(run_id), subgraphs=subgraphs)
        if chunk is not None and chunk[1] == render.EVENTS:
            out += render.render(*chunk, subgraphs=subgraphs)
    return out
