"""The LangGraph server API's store: items put, read, deleted and searched in namespaces,
and the namespaces listed, with the reference's shapes and status codes. The runtime's
store (:attr:`waystone.runtime.Runtime.store`, the one its graphs' nodes get) answers;
an owner's token reaches that owner's namespaces only, each shown without its owner's
label (:mod:`waystone._store.owned`), and the operator's token every namespace. With a
custom auth (:mod:`waystone.web.auth`), its store handlers decide, as the reference's."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from langgraph.store.base import InvalidNamespaceError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from waystone.web.auth import authorize
from waystone.web.auth_filters import Filters
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
    """Each route asks a custom auth's store handler first, with the reference's value
    for its action: the handler may change the namespace, refuse, or (on a search) return
    a filter on the items' values."""

    def __init__(self, api: Api) -> None:
        self.rt = api.rt

    def _store(self, request: Request) -> BaseStore:
        return self.rt.store_for(request.state.owner)

    async def put(self, request: Request) -> Response:
        body = await read(request, StorePut)
        asked: dict[str, Any] = {"namespace": namespace(body.namespace), "key": body.key}
        asked |= {"value": body.value, "index": body.index, "ttl": body.ttl}
        await authorize(request, "store", "put", asked)
        labels, store = namespace(asked["namespace"]), self._store(request)
        await _call(
            lambda: store.put(
                labels, asked["key"], asked["value"], asked["index"], ttl=asked["ttl"]
            )
        )
        return Response(status_code=204)

    async def get(self, request: Request) -> Response:
        query = request.query_params
        labels = namespace(query.get("namespace", "").split("."))
        key = query.get("key")
        if not key:
            raise HttpError(400, "Key is required")
        refresh = query.get("refresh_ttl")
        asked: dict[str, Any] = {"namespace": labels, "key": key}
        asked["refresh_ttl"] = None if refresh is None else refresh.lower() == "true"
        await authorize(request, "store", "get", asked)
        labels, store = namespace(asked["namespace"]), self._store(request)
        found = await _call(
            lambda: store.get(labels, asked["key"], refresh_ttl=asked["refresh_ttl"])
        )
        return JSONResponse(None if found is None else found.dict())

    async def delete(self, request: Request) -> Response:
        body = await read(request, StoreDelete)
        asked: dict[str, Any] = {"namespace": namespace(body.namespace or ()), "key": body.key}
        await authorize(request, "store", "delete", asked)
        labels, store = namespace(asked["namespace"]), self._store(request)
        await _call(lambda: store.delete(labels, asked["key"]))
        return Response(status_code=204)

    async def search(self, request: Request) -> Response:
        body = await read(request, StoreSearch)
        asked: dict[str, Any] = {"namespace": namespace(body.namespace_prefix or ())}
        asked |= {"filter": body.filter, "limit": body.limit or 10, "offset": body.offset}
        asked |= {"query": body.query, "refresh_ttl": body.refresh_ttl}
        filters = with_auth(asked["filter"], await authorize(request, "store", "search", asked))
        if filters is None:
            return JSONResponse({"items": []})  # the caller's filter and the handler's clash
        labels, store = namespace(asked["namespace"]), self._store(request)
        found = await _call(
            lambda: store.search(
                labels,
                query=asked["query"],
                filter=filters or None,
                limit=asked["limit"],  # as the reference: 0 is the default of 10
                offset=asked["offset"],
                refresh_ttl=asked["refresh_ttl"],
            )
        )
        return JSONResponse({"items": [item.dict() for item in found]})

    async def namespaces(self, request: Request) -> Response:
        body = await read(request, StoreNamespaces)
        asked: dict[str, Any] = {
            "namespace": None if body.prefix is None else namespace(body.prefix),
            "suffix": None if body.suffix is None else namespace(body.suffix),
            "max_depth": body.max_depth,
            "limit": body.limit,
            "offset": body.offset,
        }
        await authorize(request, "store", "list_namespaces", asked)
        prefix, suffix = (
            None if asked[k] is None else namespace(asked[k]) for k in ("namespace", "suffix")
        )
        store = self._store(request)
        found = await _call(
            lambda: store.list_namespaces(
                prefix=prefix or None,
                suffix=suffix or None,
                max_depth=asked["max_depth"],
                limit=asked["limit"],
                offset=asked["offset"],
            )
        )
        return JSONResponse({"namespaces": [list(n) for n in found]})


def with_auth(given: dict[str, Any] | None, handler: Filters | None) -> dict[str, Any] | None:
    """A search's filter with a store handler's added (both must hold); ``None`` when they
    ask different values of one key, so that no item can pass. The store filters on each
    key of an item's value: a handler's ``$or`` / ``$and`` cannot be run (500)."""
    merged = dict(given or {})
    for key, wanted in (handler or {}).items():
        if key in ("$or", "$and"):
            raise HttpError(500, f"a store handler's filter cannot use {key}: return key: value")
        if key in merged and merged[key] != wanted:
            return None
        merged[key] = wanted
    return merged


async def _call(work: Any) -> Any:
    """``work`` on a thread; a namespace the store refuses (empty, ``("langgraph", ...)``)
    is 400, as the reference answers it."""
    try:
        return await run_in_threadpool(work)
    except InvalidNamespaceError as exc:
        raise HttpError(400, str(exc)) from None
