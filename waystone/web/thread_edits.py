"""The API's changes to a thread as a whole: update its metadata (``PATCH``), delete it,
copy it, update its state, and read its state at a checkpoint. Each is the runtime's own
(:meth:`Runtime.update_thread`, ``delete_thread``, ``copy_thread``, ``update_state``), for
the caller's owner; the reference's paths, payloads and status codes."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from waystone.web import shapes

if TYPE_CHECKING:
    from waystone.web.api import Api, Handler

Guard = Callable[["Handler"], "Handler"]


def routes(api: Api, changes: Guard, reads: Guard) -> list[Route]:
    edits = ThreadEdits(api)
    return [
        Route("/threads/{thread_id}", changes(edits.patch), methods=["PATCH"]),
        Route("/threads/{thread_id}", changes(edits.delete), methods=["DELETE"]),
        Route("/threads/{thread_id}/copy", changes(edits.copy), methods=["POST"]),
        Route("/threads/{thread_id}/state", changes(edits.update_state), methods=["POST"]),
        Route(
            "/threads/{thread_id}/state/checkpoint", reads(edits.state_at_post), methods=["POST"]
        ),
        Route("/threads/{thread_id}/state/{checkpoint_id}", reads(edits.state_at), methods=["GET"]),
    ]


class ThreadEdits:
    def __init__(self, api: Api) -> None:
        self.api, self.rt = api, api.rt

    async def patch(self, request: Request) -> Response:
        from waystone.web.api import ApiError, _body

        body, owner = await _body(request), request.state.owner
        metadata = body.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise ApiError(400, "metadata must be a JSON object")
        if body.get("ttl") is not None:
            raise ApiError(422, "Waystone keeps threads until deleted: leave ttl out")
        thread_id = request.path_params["thread_id"]

        def patch() -> dict[str, Any]:
            self.rt.update_thread(thread_id, metadata, owner=owner)
            return self.api._thread(thread_id)

        shown = await run_in_threadpool(patch)
        if request.headers.get("prefer") == "return=minimal":
            return Response(status_code=204)
        return JSONResponse(shown)

    async def delete(self, request: Request) -> Response:
        thread_id, owner = request.path_params["thread_id"], request.state.owner
        await run_in_threadpool(
            lambda: self.rt.delete_thread(thread_id, by=owner or "api", owner=owner)
        )
        return Response(status_code=204)

    async def copy(self, request: Request) -> Response:
        thread_id, owner = request.path_params["thread_id"], request.state.owner

        def copy() -> dict[str, Any]:
            made = self.rt.copy_thread(thread_id, by=owner or "api", owner=owner)
            return self.api._thread(made.thread_id)

        return JSONResponse(await run_in_threadpool(copy))

    async def update_state(self, request: Request) -> Response:
        from waystone.web.api import ApiError, _body

        body, owner = await _body(request), request.state.owner
        thread_id = request.path_params["thread_id"]
        checkpoint = body.get("checkpoint") or {}
        if not isinstance(checkpoint, dict):
            raise ApiError(400, "checkpoint must be a JSON object")
        checkpoint_id = body.get("checkpoint_id") or checkpoint.get("checkpoint_id")
        as_node = body.get("as_node")
        if as_node is not None and not isinstance(as_node, str):
            raise ApiError(400, "as_node must be a node's name")
        config = await run_in_threadpool(
            lambda: self.rt.update_state(
                thread_id,
                body.get("values"),
                as_node=as_node,
                checkpoint_id=checkpoint_id,
                owner=owner,
            )
        )
        made = shapes.checkpoint(thread_id, config)
        made.pop("checkpoint_map", None)  # as the reference answers an update
        return JSONResponse(
            {"checkpoint": made, "configurable": made, "checkpoint_id": made["checkpoint_id"]}
        )

    async def state_at(self, request: Request) -> Response:
        p = request.path_params
        return JSONResponse(await self._state_at(p["thread_id"], p["checkpoint_id"]))

    async def state_at_post(self, request: Request) -> Response:
        from waystone.web.api import ApiError, _body

        checkpoint = (await _body(request)).get("checkpoint")
        if not isinstance(checkpoint, dict) or not checkpoint.get("checkpoint_id"):
            raise ApiError(400, "the body needs a checkpoint with its checkpoint_id")
        thread_id = request.path_params["thread_id"]
        return JSONResponse(await self._state_at(thread_id, str(checkpoint["checkpoint_id"])))

    async def _state_at(self, thread_id: str, checkpoint_id: str) -> dict[str, Any]:
        def read() -> dict[str, Any]:
            found = self.rt.thread(thread_id)
            if found.agent is None or found.agent not in self.rt.names():
                return shapes.state(thread_id, None)
            config = self.rt.config(thread_id)
            config["configurable"]["checkpoint_id"] = checkpoint_id
            return shapes.state(thread_id, self.rt.graph(found.agent).get_state(config))

        return await run_in_threadpool(read)
