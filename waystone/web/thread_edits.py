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
from waystone.web.auth import authorize
from waystone.web.bodies import StateAt, StateUpdate, ThreadPatch
from waystone.web.inputs import read
from waystone.web.replies import HttpError

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
        body, owner = await read(request, ThreadPatch), request.state.owner
        metadata = body.metadata or {}
        if body.ttl is not None:
            raise HttpError(422, "Waystone keeps threads until deleted: leave ttl out")
        thread_id = request.path_params["thread_id"]
        asked: dict[str, Any] = {"thread_id": thread_id, "metadata": metadata}
        await self.api.check_thread(thread_id, await authorize(request, "threads", "update", asked))
        metadata = asked.get("metadata") or metadata

        def patch() -> dict[str, Any]:
            self.rt.update_thread(thread_id, metadata, owner=owner)
            return self.api.shown_thread(thread_id)

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
        await authorize(request, "threads", "create", {"thread_id": None})  # the copy's

        def copy() -> dict[str, Any]:
            made = self.rt.copy_thread(thread_id, by=owner or "api", owner=owner)
            return self.api.shown_thread(made.thread_id)

        return JSONResponse(await run_in_threadpool(copy))

    async def update_state(self, request: Request) -> Response:
        body, owner = await read(request, StateUpdate), request.state.owner
        thread_id = request.path_params["thread_id"]
        checkpoint_id = body.checkpoint_id
        if checkpoint_id is None and body.checkpoint is not None:
            checkpoint_id = body.checkpoint.checkpoint_id
        config = await run_in_threadpool(
            lambda: self.rt.update_state(
                thread_id,
                body.values,
                as_node=body.as_node,
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
        checkpoint_id = (await read(request, StateAt)).checkpoint.checkpoint_id
        thread_id = request.path_params["thread_id"]
        return JSONResponse(await self._state_at(thread_id, checkpoint_id))

    async def _state_at(self, thread_id: str, checkpoint_id: str) -> dict[str, Any]:
        def read() -> dict[str, Any]:
            found = self.rt.thread(thread_id)
            if found.agent is None or found.agent not in self.rt.names():
                return shapes.state(thread_id, None)
            config = self.rt.config(thread_id)
            config["configurable"]["checkpoint_id"] = checkpoint_id
            return shapes.state(thread_id, self.rt.graph(found.agent).get_state(config))

        return await run_in_threadpool(read)
