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


class Stop(GraphBubbleUp):
    """Carries an error that must end the drive through ``ToolNode``."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


@contextmanager
def routed() -> Iterator[None]:
    """Inside: a tool call of a routed ``ToolNode``, whose errors that end the drive go out
    as a :class:`Stop`."""
    token = _ROUTED.set(True)
    try:
        yield
    except STOPS as exc:
        raise Stop(exc) from exc
    finally:
        _ROUTED.reset(token)


def stop_if_routed(error: Exception) -> Exception:
    """``error``, as a :class:`Stop` inside a routed tool call when it ends the drive."""
    if _ROUTED.get() and isinstance(error, STOPS):
        return Stop(error)
    return error
