"""Each assistant as a tool over MCP's streamable HTTP transport (``/mcp``), through the
official ``mcp`` SDK, as the reference server serves them.

A tool call is an ordinary Waystone run on a thread of its own, created as
``POST /runs/wait`` creates one (fenced, its effects once, in ``history``): the answer is
the run's output once it waits or ends. The transport is stateless (each request stands
alone), so any API server answers any call; the caller needs the token a run needs.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from waystone.web import shapes
from waystone.web.bodies import RunCreate
from waystone.web.replies import HttpError

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp_types import (
        CallToolRequestParams,
        CallToolResult,
        ListToolsResult,
        PaginatedRequestParams,
    )
    from starlette.types import Receive, Scope, Send

    from waystone.web.api import Api

PATH = "/mcp"
# As the reference marks each assistant: a run may change the world, once per call.
HINTS = {
    "readOnlyHint": False,
    "destructiveHint": False,
    "idempotentHint": False,
    "openWorldHint": True,
}


class Mcp:
    """The ``/mcp`` endpoint on the API's runtime: an ASGI app, and the lifespan its
    session manager needs (entered with the server's)."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self._manager: StreamableHTTPSessionManager | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The session manager's life, inside the server's; nothing when the ``mcp``
        package is not installed (``/mcp`` then says how to add it)."""
        try:
            from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        except ImportError:
            yield
            return
        self._manager = StreamableHTTPSessionManager(
            app=self._server(), json_response=True, stateless=True
        )
        async with self._manager.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            if self._manager is None:
                raise HttpError(501, "MCP needs the mcp package: pip install 'waystone[web]'")
            await self.api.admit(request)  # the caller's, as for any run it could create
        except HttpError as exc:
            refused = JSONResponse({"detail": exc.message}, exc.status, exc.headers)
            await refused(scope, receive, send)
            return
        await self._manager.handle_request(scope, receive, send)

    def _server(self) -> Server[Any]:
        from mcp.server.lowlevel import Server

        return Server("waystone", on_list_tools=self._list_tools, on_call_tool=self._call_tool)

    async def _list_tools(self, ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        from mcp_types import ListToolsResult

        tools = []
        for name in self.api.rt.names():
            graph = await run_in_threadpool(self.api.rt.graph, name)
            tools.append(
                {
                    "name": name,
                    "title": name,
                    "description": f"Run the {name} graph as a Waystone run; answers its output",
                    "inputSchema": _input_schema(graph),
                    "annotations": HINTS,
                }
            )
        return ListToolsResult.model_validate({"tools": tools})

    async def _call_tool(self, ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        if params.name not in self.api.rt.names():
            known = ", ".join(self.api.rt.names())
            return _result(f"no tool {params.name!r} (tools: {known})", error=True)
        body = RunCreate(
            assistant_id=params.name, input=dict(params.arguments or {}), if_not_exists="create"
        )
        try:
            status, output = await self.api.run_stateless(ctx.request, body)
        except HttpError as exc:
            return _result(exc.message, error=True)
        ended = await run_in_threadpool(self.api.rt.status, status.thread_id)
        meta = {"waystone/thread_id": status.thread_id, "waystone/run_id": status.run_id}
        if ended.state in ("failed", "needs-human"):
            return _result(f"the run ended {ended.state}: {ended.reason}", error=True, meta=meta)
        return _result(json.dumps(output, default=str), structured=output, meta=meta)


def _result(
    text: str, *, error: bool = False, structured: Any = None, meta: dict[str, Any] | None = None
) -> CallToolResult:
    from mcp_types import CallToolResult

    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": error}
    if isinstance(structured, dict):
        result["structuredContent"] = structured
    if meta is not None:
        result["_meta"] = meta
    return CallToolResult.model_validate(result)


def _input_schema(graph: Any) -> dict[str, Any]:
    """The graph's input schema: MCP wants an object's, which a state graph's is. A state
    pydantic cannot describe (a ``typing.TypedDict`` before Python 3.12) takes any object."""
    try:
        schema = shapes.jsonable(graph.get_input_jsonschema())
    except Exception:
        return {"type": "object"}
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return {"type": "object"}
    return schema
