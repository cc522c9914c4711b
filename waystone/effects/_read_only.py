"""A read-only tool's call under a routed ``ToolNode``: called again on a transport error
(refused, timed out), with backoff; it changes nothing, so a second call is harmless.

The retry is inside the tool (:func:`retrying`): ``ToolNode`` may turn an error into a
message for the model before anything around its ``execute`` sees it."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from langgraph.errors import GraphBubbleUp

from waystone.effects._proxy import tool_through
from waystone.effects._transport import classify_transport
from waystone.effects.tools import RetryPolicy
from waystone.errors import TransientError, UnknownOutcome

if TYPE_CHECKING:
    from langgraph.prebuilt.tool_node import ToolCallRequest

logger = logging.getLogger(__name__)

READ_AGAIN = RetryPolicy()  # a read-only tool's transient failures


def _retry_after(error: Exception, attempt: int, request: ToolCallRequest) -> float | None:
    """Seconds to wait before calling a read-only tool again, ``None`` to raise ``error``."""
    kind = classify_transport(error)
    if kind not in (TransientError, UnknownOutcome) or attempt >= READ_AGAIN.max_attempts:
        return None
    logger.info(
        "read-only %s failed (%s), calling it again",
        request.tool_call["name"],
        error,
        extra={"attempt": attempt},
    )
    return READ_AGAIN.delay(attempt, random.random())


def again(call: Callable[[], Any], request: ToolCallRequest) -> Any:
    """``call()``, made again after a transport error (at most ``READ_AGAIN``'s attempts)."""
    attempt = 1
    while True:
        try:
            return call()
        except GraphBubbleUp:
            raise
        except Exception as exc:
            wait = _retry_after(exc, attempt, request)
            if wait is None:
                raise
        time.sleep(wait)
        attempt += 1


async def aagain(call: Callable[[], Awaitable[Any]], request: ToolCallRequest) -> Any:
    """:func:`again` from a coroutine."""
    attempt = 1
    while True:
        try:
            return await call()
        except GraphBubbleUp:
            raise
        except Exception as exc:
            wait = _retry_after(exc, attempt, request)
            if wait is None:
                raise
        await asyncio.sleep(wait)
        attempt += 1


def retrying(request: ToolCallRequest) -> ToolCallRequest:
    """``request`` calling a copy of its tool that calls it again after a transport error
    (the user's tool is left as it is)."""
    tool = request.tool
    assert tool is not None
    return request.override(tool=tool_through(tool, again, aagain, request))
