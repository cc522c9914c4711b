"""A read-only tool's call under a routed ``ToolNode``: called again on a transport error
(refused, timed out), with backoff; it changes nothing, so a second call is harmless.

The retry is inside the tool (:func:`retrying`): ``ToolNode`` may turn an error into a
message for the model before anything around its ``execute`` sees it."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from langgraph.errors import GraphBubbleUp

from waystone._retry import aretry, retry
from waystone.effects._proxy import tool_through
from waystone.effects._transport import classify_transport
from waystone.effects.tools import RetryPolicy
from waystone.errors import TransientError, UnknownOutcome

if TYPE_CHECKING:
    from langgraph.prebuilt.tool_node import ToolCallRequest

logger = logging.getLogger(__name__)

READ_AGAIN = RetryPolicy()  # a read-only tool's transient failures


def _transport(error: Exception) -> bool:
    """Whether a read-only tool is called again after ``error``: a transport error."""
    if isinstance(error, GraphBubbleUp):
        return False
    return classify_transport(error) in (TransientError, UnknownOutcome)


def _logged(request: ToolCallRequest) -> Callable[[Exception, int, float | None], None]:
    def log(error: Exception, attempt: int, wait: float | None) -> None:
        if wait is not None:
            name = request.tool_call["name"]
            msg = "read-only %s failed (%s), calling it again"
            logger.info(msg, name, error, extra={"attempt": attempt})

    return log


def again(call: Callable[[], Any], request: ToolCallRequest) -> Any:
    """``call()``, made again after a transport error (at most ``READ_AGAIN``'s attempts)."""
    return retry(call, READ_AGAIN, retry_on=_transport, on_failure=_logged(request))


async def aagain(call: Callable[[], Awaitable[Any]], request: ToolCallRequest) -> Any:
    """:func:`again` from a coroutine."""
    return await aretry(call, READ_AGAIN, retry_on=_transport, on_failure=_logged(request))


def retrying(request: ToolCallRequest) -> ToolCallRequest:
    """``request`` calling a copy of its tool that calls it again after a transport error
    (the user's tool is left as it is)."""
    tool = request.tool
    assert tool is not None
    return request.override(tool=tool_through(tool, again, aagain, request))
