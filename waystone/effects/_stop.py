"""Errors that must end a drive, carried through LangGraph's ``ToolNode`` unchanged.

``ToolNode`` turns a tool's error into a message for the model when its
``handle_tool_errors`` says so, and passes LangGraph's control flow on. A ``needs-human``
told to the model as "error" could make it call the tool again under a new call id, so
inside a ``ToolNode`` Waystone routes (:mod:`waystone.effects._tool_node`) such an error
goes out as a :class:`Stop`, and the routed node raises the error itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from langgraph.errors import GraphBubbleUp

from waystone.errors import DatabaseUnavailable, LeaseLost, NeedsHuman, NotDurable

STOPS = (NeedsHuman, LeaseLost, NotDurable, DatabaseUnavailable)  # end the drive, not a call

_ROUTED: ContextVar[bool] = ContextVar("waystone_routed_tool_call", default=False)
# the stops raised under a routed node's run: a user's catch-all wrapper may swallow one
_STOPPED: ContextVar[list[Stop] | None] = ContextVar("waystone_tool_node_stops", default=None)


class Stop(GraphBubbleUp):
    """Carries an error that must end the drive through ``ToolNode``."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def _stop(error: Exception) -> Stop:
    stop = Stop(error)
    kept = _STOPPED.get()
    if kept is not None:
        kept.append(stop)
    return stop


@contextmanager
def stops_kept() -> Iterator[list[Stop]]:
    """Inside: every :class:`Stop` raised is kept in the list given, even one that a
    wrapper turns into a message; the tool calls the node starts share the list."""
    kept: list[Stop] = []
    token = _STOPPED.set(kept)
    try:
        yield kept
    finally:
        _STOPPED.reset(token)


@contextmanager
def routed() -> Iterator[None]:
    """Inside: a tool call of a routed ``ToolNode``, whose errors that end the drive go out
    as a :class:`Stop`."""
    token = _ROUTED.set(True)
    try:
        yield
    except STOPS as exc:
        raise _stop(exc) from exc
    finally:
        _ROUTED.reset(token)


def stop_if_routed(error: Exception) -> Exception:
    """``error``, as a :class:`Stop` inside a routed tool call when it ends the drive."""
    if _ROUTED.get() and isinstance(error, STOPS):
        return _stop(error)
    return error
