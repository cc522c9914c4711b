"""The LangGraph server API's assistants: each graph's own (``metadata.created_by:
"system"``, everyone's, found by the graph's name too) and those users make of a graph with
its config, context and metadata (create, get, update as a new version, versions, set the
version in force, search, count, delete), kept in Postgres (:mod:`waystone._runtime.assistants`).
A graph's own assistant is the graph as it is served: it is not changed or deleted.

A run on an assistant starts from its config and context, the run's own merged over them
as the reference merges them (:func:`waystone._runtime.assistant_rules.run_options`)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from waystone._runtime.assistant_rules import Assistant, Changes, contains, of_graph
from waystone._runtime.threads import SEARCH_LIMIT
from waystone.errors import TransitionNotAllowed
from waystone.web import graph_schemas, shapes
from waystone.web.auth import authorize, passes
from waystone.web.bodies import (
    AssistantCount,
    AssistantCreate,
    AssistantLatest,
    AssistantPatch,
    AssistantSearch,
    AssistantVersions,
)
from waystone.web.inputs import read
from waystone.web.replies import HttpError
from waystone.web.run_options import CONFIG_KEYS

if TYPE_CHECKING:
    from waystone.web.api import Api

FIXED = (
    "a graph's own assistant is the graph as it is served, and stays so: create an "
    "assistant of the graph (POST /assistants) to give it a config, context or metadata"
)


def routes(api: Api) -> list[Route]:
    a, r, w = AssistantRoutes(api), api.reads, api.changes
    one = "/assistants/{assistant_id}"
    return [
        Route("/assistants", w(a.create), methods=["POST"]),
        Route("/assistants/search", r(a.search), methods=["POST"]),
        Route("/assistants/count", r(a.count), methods=["POST"]),
        Route(one, r(a.get), methods=["GET"]),
        Route(one, w(a.update), methods=["PATCH"]),
        Route(one, w(a.delete), methods=["DELETE"]),
        Route(f"{one}/versions", r(a.versions), methods=["POST"]),
        Route(f"{one}/latest", w(a.set_latest), methods=["POST"]),
        Route(f"{one}/graph", r(a.graph), methods=["GET"]),
        Route(f"{one}/schemas", r(a.schemas), methods=["GET"]),
        Route(f"{one}/subgraphs", r(a.subgraphs), methods=["GET"]),
        Route(f"{one}/subgraphs/{{namespace}}", r(a.subgraphs), methods=["GET"]),
    ]


def shape(found: Assistant, *, version: bool = False) -> dict[str, Any]:
    """An assistant as the reference shows it (``langgraph_sdk.schema.Assistant``), or one
    of its versions (``AssistantVersion``: no ``updated_at``)."""
    shown = {
        "assistant_id": found.assistant_id,
        "graph_id": found.graph_id,
        "config": found.config,
        "context": found.context,
        "created_at": (found.updated_at if version else found.created_at).isoformat(),
        "metadata": found.metadata,
        "version": found.version,
        "name": found.name,
        "description": found.description,
    }
    if not version:
        shown["updated_at"] = found.updated_at.isoformat()
    return shown


def find(api: Api, assistant_id: str, owner: str | None) -> Assistant:
    """The assistant ``assistant_id`` names for ``owner``: a graph's own (by the graph's
    name or its id), or one made by a user whose graph is served; 404 if none."""
    names = api.rt.names()
    for name in names:
        if assistant_id in (name, shapes.assistant_id(name)):
            return of_graph(name, api.since)
    found = api.rt.assistants.get(assistant_id, owner)
    if found is None or found.graph_id not in names:
        raise HttpError(404, f"assistant {assistant_id!r} not found (graphs: {', '.join(names)})")
    return found


class AssistantRoutes:
    def __init__(self, api: Api) -> None:
        self.api, self.rt = api, api.rt

    def _find(self, request: Request) -> Assistant:
        """The path's assistant; an id that is neither a UUID nor a graph's name is 422,
        as the reference answers it."""
        given = request.path_params["assistant_id"]
        if given not in self.rt.names():
            _uuid(given)
        return find(self.api, given, request.state.owner)

    def _system(self) -> list[Assistant]:
        return [of_graph(name, self.api.since) for name in self.rt.names()]

    def _graph_known(self, graph_id: str | None) -> None:
        names = self.rt.names()
        if graph_id is not None and graph_id not in names:
            raise HttpError(404, f"Graph {graph_id!r} not found. Expected one of: {names}")

    # -- made by users -------------------------------------------------------------------

    async def create(self, request: Request) -> Response:
        body = await read(request, AssistantCreate)
        _check_config(body.config)
        self._graph_known(body.graph_id)
        given = body.assistant_id
        if given is not None:
            given = _uuid(given)
            system = [a for a in self._system() if a.assistant_id == given]
            if system and body.if_exists == "do_nothing":
                return JSONResponse(shape(system[0]))
            if system:
                raise HttpError(409, f"Assistant {given} already exists")
        asked: dict[str, Any] = {
            "assistant_id": given,
            "graph_id": body.graph_id,
            "config": body.config or {},
            "context": body.context or {},
            "metadata": dict(body.metadata or {}),
            "if_exists": body.if_exists or "raise",
            "name": body.name,
            "description": body.description,
        }
        await authorize(request, "assistants", "create", asked)  # may tag its metadata
        metadata = asked.get("metadata") or body.metadata
        made = await run_in_threadpool(
            lambda: self.rt.assistants.create(
                body.graph_id,
                assistant_id=given,
                config=body.config,
                context=body.context,
                metadata=metadata,
                name=body.name,
                description=body.description,
                if_exists=body.if_exists or "raise",
                owner=request.state.owner,
            )
        )
        return JSONResponse(shape(made))

    async def get(self, request: Request) -> Response:
        return JSONResponse(shape(await run_in_threadpool(self._find, request)))

    async def update(self, request: Request) -> Response:
        body = await read(request, AssistantPatch)
        _check_config(body.config)
        self._graph_known(body.graph_id)
        found = await run_in_threadpool(self._find, request)
        if found.system:
            raise HttpError(409, FIXED)
        changes = Changes(
            graph_id=body.graph_id,
            config=body.config,
            context=body.context,
            metadata=body.metadata,
            name=body.name,
            description=body.description,
        )
        owner = request.state.owner
        made = await run_in_threadpool(
            self.rt.assistants.update, found.assistant_id, changes, owner
        )
        if made is None:  # deleted meanwhile
            raise HttpError(404, f"Assistant {found.assistant_id} not found")
        return JSONResponse(shape(made))

    async def delete(self, request: Request) -> Response:
        found = await run_in_threadpool(self._find, request)
        if found.system:
            raise HttpError(409, FIXED)
        owner = request.state.owner
        if request.query_params.get("delete_threads", "").lower() == "true":
            await run_in_threadpool(self._delete_threads, found.assistant_id, owner)
        if not await run_in_threadpool(self.rt.assistants.delete, found.assistant_id, owner):
            raise HttpError(404, f"Assistant {found.assistant_id} not found")
        return Response(status_code=204)

    def _delete_threads(self, assistant_id: str, owner: str | None) -> None:
        """The caller's threads whose metadata names the assistant, as the reference
        deletes them; one whose run has not ended is kept (cancel it first)."""
        named = {"assistant_id": assistant_id}
        for thread in self.rt.search_threads(metadata=named, limit=SEARCH_LIMIT, owner=owner):
            try:
                self.rt.delete_thread(thread.thread_id, by="api", owner=owner)
            except TransitionNotAllowed:
                continue

    async def versions(self, request: Request) -> Response:
        body = await read(request, AssistantVersions)
        found = await run_in_threadpool(self._find, request)
        owner = request.state.owner
        if found.system:
            listed = [found] if contains(found.metadata, body.metadata or {}) else []
        else:
            got = await run_in_threadpool(
                self.rt.assistants.versions, found.assistant_id, body.metadata, owner
            )
            listed = got or []
        if not listed:  # as the reference
            raise HttpError(404, f"Assistant {found.assistant_id} not found")
        return JSONResponse([shape(v, version=True) for v in listed[body.window]])

    async def set_latest(self, request: Request) -> Response:
        body = await read(request, AssistantLatest)
        found = await run_in_threadpool(self._find, request)
        aid, owner = found.assistant_id, request.state.owner
        made: Assistant | None = found if found.system and body.version == 1 else None
        if not found.system:
            made = await run_in_threadpool(self.rt.assistants.set_version, aid, body.version, owner)
        if made is None:
            raise HttpError(404, f"Version {body.version} not found for assistant {aid}")
        return JSONResponse(shape(made))

    # -- searches --------------------------------------------------------------------------

    async def search(self, request: Request) -> Response:
        body = await read(request, AssistantSearch)
        found = await self._found(request, body, body.sort_by, body.sort_order)
        page = found[body.window]
        shown = [shape(a) for a in page]
        if body.select:
            shown = [{k: v for k, v in s.items() if k in body.select} for s in shown]
        end = body.offset + max(body.limit, 1)
        more = len(found) > end
        headers = {"X-Pagination-Total": str(end + 1 if more else len(page) + body.offset)}
        if more:
            headers["X-Pagination-Next"] = str(end)
        return JSONResponse(shown, headers=headers)

    async def count(self, request: Request) -> Response:
        body = await read(request, AssistantCount)
        return JSONResponse(len(await self._found(request, body)))

    async def _found(
        self,
        request: Request,
        body: AssistantCount,
        sort_by: str | None = None,
        sort_order: str | None = None,
    ) -> list[Assistant]:
        self._graph_known(body.graph_id)
        names = set(self.rt.names())
        owner = request.state.owner
        asked = {"graph_id": body.graph_id, "metadata": dict(body.metadata or {})}
        filters = await authorize(request, "assistants", "search", asked)
        # the custom auth's filter, held to metadata as stored (redacted)
        wanted = await run_in_threadpool(self.rt.redacted, filters) if filters else None

        def search() -> list[Assistant]:
            found = self.rt.assistants.search(
                graph_id=body.graph_id,
                name=body.name,
                metadata=body.metadata,
                sort_by=sort_by or "created_at",
                descending=(sort_order or "desc") == "desc",
                owner=owner,
                among=self._system(),
            )
            shown = [a for a in found if a.graph_id in names]  # a graph no longer served: hidden
            return [a for a in shown if wanted is None or passes(a.metadata, wanted)]

        return await run_in_threadpool(search)

    # -- its graph -------------------------------------------------------------------------

    async def graph(self, request: Request) -> Response:
        found = await run_in_threadpool(self._find, request)
        xray = request.query_params.get("xray", "false").lower() in ("1", "true")
        graph = await run_in_threadpool(self.rt.graph, found.graph_id)
        drawn = await run_in_threadpool(lambda: graph.get_graph(xray=xray).to_json())
        return JSONResponse(shapes.jsonable(drawn))

    async def schemas(self, request: Request) -> Response:
        found = await run_in_threadpool(self._find, request)
        graph = await run_in_threadpool(self.rt.graph, found.graph_id)
        made = await run_in_threadpool(graph_schemas.schemas, graph)
        return JSONResponse({"graph_id": found.graph_id, **made})

    async def subgraphs(self, request: Request) -> Response:
        found = await run_in_threadpool(self._find, request)
        namespace = request.path_params.get("namespace")
        recurse = request.query_params.get("recurse", "false").lower() == "true"
        graph = await run_in_threadpool(self.rt.graph, found.graph_id)
        made = await run_in_threadpool(graph_schemas.subgraphs, graph, namespace, recurse)
        return JSONResponse(made)


def _check_config(config: dict[str, Any] | None) -> None:
    """What a run applies of a config is all an assistant's may hold (422 for the rest)."""
    other = sorted(set(config or {}) - set(CONFIG_KEYS))
    if other:
        raise HttpError(
            422,
            f"Waystone applies config's {' and '.join(CONFIG_KEYS)} only, not "
            f"{', '.join(other)}: leave it out",
        )


def _uuid(assistant_id: str) -> str:
    try:
        return str(uuid.UUID(assistant_id))
    except ValueError:
        raise HttpError(422, "Invalid assistant ID: must be a UUID") from None
