"""The LangGraph server API's store: items put, read, deleted and searched in namespaces,
and the namespaces listed, with the reference's shapes and status codes. The runtime's
store (:attr:`waystone.runtime.Runtime.store`, the one its graphs' nodes get) answers;
an owner's token reaches that owner's namespaces only, each shown without its owner's
label (:mod:`waystone._store.owned`), and the operator's token every namespace."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from langgraph.store.base import InvalidNamespaceError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from waystone.web.bodies import StoreDelete, StoreNamespaces, StorePut, StoreSearch
from waystone.web.inputs import read
from waystone.web.replies import HttpError

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore

    from waystone.web.api import Api


def routes(api: Api) -> list[Route]:
    store, r, w = StoreRoutes(api), api.reads, api.changes
    return [
        Route("/store/items", w(store.put), methods=["PUT"]),
        Route("/store/items", r(store.get), methods=["GET"]),
        Route("/store/items", w(store.delete), methods=["DELETE"]),
        Route("/store/items/search", r(store.search), methods=["POST"]),
        Route("/store/namespaces", r(store.namespaces), methods=["POST"]),
    ]


def namespace(labels: Iterable[str]) -> tuple[str, ...]:
    """``labels`` as a namespace; 422 for a label that is empty or holds a period (the
    reference's rule: a namespace travels joined by periods)."""
    found = tuple(labels)
    for label in found:
        if not label or "." in label:
            raise HttpError(
                422, f"Namespace label {label!r} must be a non-empty string without periods"
            )
    return found


class StoreRoutes:
    def __init__(self, api: Api) -> None:
        self.rt = api.rt

    def _store(self, request: Request) -> BaseStore:
        return self.rt.store_for(request.state.owner)

    async def put(self, request: Request) -> Response:
        body = await read(request, StorePut)
        labels, store = namespace(body.namespace), self._store(request)
        await _call(lambda: store.put(labels, body.key, body.value, body.index, ttl=body.ttl))
        return Response(status_code=204)

    async def get(self, request: Request) -> Response:
        query = request.query_params
        labels = namespace(query.get("namespace", "").split("."))
        key = query.get("key")
        if not key:
            raise HttpError(400, "Key is required")
        refresh = query.get("refresh_ttl")
        refresh_ttl = None if refresh is None else refresh.lower() == "true"
        store = self._store(request)
        found = await _call(lambda: store.get(labels, key, refresh_ttl=refresh_ttl))
        return JSONResponse(None if found is None else found.dict())

    async def delete(self, request: Request) -> Response:
        body = await read(request, StoreDelete)
        labels, store = namespace(body.namespace or ()), self._store(request)
        await _call(lambda: store.delete(labels, body.key))
        return Response(status_code=204)

    async def search(self, request: Request) -> Response:
        body = await read(request, StoreSearch)
        labels, store = namespace(body.namespace_prefix or ()), self._store(request)
        found = await _call(
            lambda: store.search(
                labels,
                query=body.query,
                filter=body.filter,
                limit=body.limit or 10,  # as the reference: 0 is the default
                offset=body.offset,
                refresh_ttl=body.refresh_ttl,
            )
        )
        return JSONResponse({"items": [item.dict() for item in found]})

    async def namespaces(self, request: Request) -> Response:
        body = await read(request, StoreNamespaces)
        prefix = None if body.prefix is None else namespace(body.prefix)
        suffix = None if body.suffix is None else namespace(body.suffix)
        store = self._store(request)
        found = await _call(
            lambda: store.list_namespaces(
                prefix=prefix or None,
                suffix=suffix or None,
                max_depth=body.max_depth,
                limit=body.limit,
                offset=body.offset,
            )
        )
        return JSONResponse({"namespaces": [list(n) for n in found]})


async def _call(work: Any) -> Any:
    """``work`` on a thread; a namespace the store refuses (empty, ``("langgraph", ...)``)
    is 400, as the reference answers it."""
    try:
        return await run_in_threadpool(work)
    except InvalidNamespaceError as exc:
        raise HttpError(400, str(exc)) from None
