"""Where a run's graph stands, read from its latest checkpoint's row without LangGraph.

``status`` shows the node a run resumes at. LangGraph works it out by loading the graph
(most of a CLI command's start-up); for Waystone's graphs the checkpoint row says it too.
A node runs next when its trigger channel (``branch:to:NODE``, written by the node that
routed to it) holds a value at a version the node has not seen. Whatever this cannot
read with certainty is left to the graph (``None``): a ``Send`` (the tasks channel holds
one only after the step that wrote it), the input checkpoint, a checkpoint format it does
not know.
"""

from __future__ import annotations

from typing import Any

KNOWN_FORMATS = frozenset({4})  # LangGraph's checkpoint format ("v") this reads
TRIGGER = "branch:to:"
TASKS = "__pregel_tasks"  # where a Send waits for the next step


def next_nodes(row: dict[str, Any] | None) -> tuple[str, ...] | None:
    """The nodes that run next, from the ``graph_position`` query's row (``None``: no
    checkpoint yet, nothing runs next); ``None`` when only the graph can tell."""
    if row is None:
        return ()
    updated = row["updated"]
    if row["v"] not in KNOWN_FORMATS or row["source"] == "input" or not isinstance(updated, list):
        return None
    if TASKS in updated:
        return None
    versions: dict[str, Any] = row["versions"] or {}
    seen: dict[str, dict[str, Any]] = row["seen"] or {}
    found = []
    for channel in row["inline"]:  # an empty trigger holds nothing, so it is not inline
        if not channel.startswith(TRIGGER):
            continue
        node = channel.removeprefix(TRIGGER)
        version, before = versions.get(channel), seen.get(node, {}).get(channel)
        if not isinstance(version, str) or not isinstance(before, str | None):
            return None  # versions of another saver's kind: not compared here
        if before is None or version > before:
            found.append(node)
    return tuple(found) if len(found) <= 1 else None  # several: the graph knows their order
