"""A copy of a tool whose calls go through a function of Waystone's, for a routed
``ToolNode``: what must happen inside the tool (a retry, an error let out) happens where
``ToolNode``'s error handling cannot turn it into a message first."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool
    from langgraph.prebuilt.tool_node import ToolCallRequest


def tool_through(
    tool: BaseTool,
    sync: Callable[[Callable[[], Any], ToolCallRequest], Any],
    asyn: Callable[[Callable[[], Awaitable[Any]], ToolCallRequest], Awaitable[Any]],
    request: ToolCallRequest,
) -> BaseTool:
    """A copy of ``tool`` whose ``invoke`` and ``ainvoke`` run through ``sync``/``asyn``."""
    clone = tool.model_copy()
    invoke, ainvoke = tool.invoke, tool.ainvoke

    def run(*args: Any, **kwargs: Any) -> Any:
        return sync(lambda: invoke(*args, **kwargs), request)

    async def arun(*args: Any, **kwargs: Any) -> Any:
        return await asyn(lambda: ainvoke(*args, **kwargs), request)

    # a pydantic model refuses new attributes; the instance's own win over the class's
    object.__setattr__(clone, "invoke", run)
    object.__setattr__(clone, "ainvoke", arun)
    return clone
