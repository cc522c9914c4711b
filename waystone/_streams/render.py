"""Native chunks of ``graph.stream(stream_mode=[...], subgraphs=True)`` as the reference
server's stream events: ``(name, data)``, the name with ``|ns`` for a subgraph's.

Covers the live modes the worker logs: ``messages-tuple`` (LangGraph's ``messages``: a
model's tokens as it emits them) and ``custom`` (``get_stream_writer()``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from waystone._runs.api_shapes import jsonable

# The native modes that make live events: what the worker asks for besides its own.
LIVE_MODES: tuple[str, ...] = ("messages", "custom")
# The API modes each native one serves.
_SERVES = {"messages": ("messages-tuple",), "custom": ("custom",)}


def native_modes(api_modes: Iterable[str]) -> list[str]:
    """The native modes the worker asks for, to serve ``api_modes``."""
    asked = set(api_modes)
    return [mode for mode in LIVE_MODES if asked & set(_SERVES[mode])]


def api_modes(event: str) -> tuple[str, ...]:
    """The API modes an event named ``event`` (``|ns`` or not) is sent for."""
    name = event.partition("|")[0]
    return {"messages": ("messages-tuple",), "custom": ("custom",)}.get(name, (name,))


def render(ns: tuple[str, ...], mode: str, chunk: Any, *, subgraphs: bool) -> list[tuple[str, Any]]:
    """The events of one native chunk; none for a subgraph's unless ``subgraphs``."""
    if ns and not subgraphs:
        return []
    suffix = f"|{'|'.join(ns)}" if ns else ""
    if mode == "messages":
        message, metadata = chunk
        return [(f"messages{suffix}", [jsonable(message), jsonable(metadata)])]
    if mode == "custom":
        return [(f"custom{suffix}", jsonable(chunk))]
    return []
