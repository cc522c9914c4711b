"""The LangGraph server API's crons: create (on a thread, or a new thread each tick),
get, search, count, update, delete. Workers tick them (:mod:`waystone.worker.ticker`), not the
API's servers: a cron's run needs a worker to drive it anyway, and a tick that no worker
was up for falls under the missed-tick policy instead of queuing runs nobody drives."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from waystone.web import shapes
from waystone.web.api import ApiError, _body, _page

if TYPE_CHECKING:
    from waystone._runs.crons import Cron
    from waystone.web.api import Api

# What a cron request may carry that Waystone does not do yet: refused, never ignored.
UNSUPPORTED = (
    "config",
    "context",
    "checkpoint_during",
    "interrupt_before",
    "interrupt_after",
    "webhook",
    "stream_mode",
    "stream_subgraphs",
    "stream_resumable",
    "durability",
)
SORTS = ["cron_id", "assistant_id", "thread_id", "next_run_date", "end_time", "created_at"]
SORTS.append("updated_at")
FIELDS: tuple[str, ...] = ("cron_id", "assistant_id", "thread_id", "end_time", "schedule")
FIELDS += ("timezone", "created_at", "updated_at", "user_id", "payload", "next_run_date")
FIELDS += ("metadata", "on_run_completed", "enabled")


def routes(api: Api) -> list[Route]:
    crons, r, w = CronRoutes(api), api._reads, api._changes
    return [
        Route("/runs/crons", w(crons.create), methods=["POST"]),
        Route("/runs/crons/search", r(crons.search), methods=["POST"]),
        Route("/runs/crons/count", r(crons.count), methods=["POST"]),
        Route("/threads/{thread_id}/runs/crons", w(crons.create_for_thread), methods=["POST"]),
        Route("/runs/crons/{cron_id}", r(crons.get), methods=["GET"]),
        Route("/runs/crons/{cron_id}", w(crons.update), methods=["PATCH"]),
        Route("/runs/crons/{cron_id}", w(crons.delete), methods=["DELETE"]),
    ]


def shape(cron: Cron) -> dict[str, Any]:
    """A cron as the reference server shows it (``langgraph_sdk.schema.Cron``)."""
    assistant = shapes.assistant_id(cron.agent)
    return {
        "cron_id": cron.cron_id,
        "assistant_id": assistant,
        "thread_id": cron.thread_id,
        "on_run_completed": cron.on_run_completed,
        "end_time": cron.end_time.isoformat() if cron.end_time else None,
        "schedule": cron.schedule,
        "timezone": cron.timezone,
        "created_at": cron.created_at.isoformat(),
        "updated_at": cron.updated_at.isoformat(),
        "payload": {"assistant_id": assistant, "input": cron.input, "metadata": cron.metadata},
        "user_id": None,
        "next_run_date": cron.next_run_date.isoformat(),
        "metadata": cron.metadata,
        "enabled": cron.enabled,
    }


class CronRoutes:
    def __init__(self, api: Api) -> None:
        self.api, self.rt = api, api.rt

    async def create(self, request: Request) -> Response:
        return await self._create(None, await _body(request), request.state.owner)

    async def create_for_thread(self, request: Request) -> Response:
        thread_id, owner = request.path_params["thread_id"], request.state.owner
        return await self._create(thread_id, await _body(request), owner)

    async def _create(
        self, thread_id: str | None, body: dict[str, Any], owner: str | None
    ) -> Response:
        _refuse_unsupported(body)
        if "assistant_id" not in body:
            raise ApiError(400, "a cron needs an assistant_id (a graph's name or its id)")
        graph_id = self.api._graph_id(str(body["assistant_id"]))
        kept = _on_run_completed(body.get("on_run_completed"), default="keep")
        settings: dict[str, Any] = {
            "thread_id": thread_id,
            "metadata": body.get("metadata"),
            "timezone": body.get("timezone"),
            "end_time": _time(body.get("end_time")),
            "enabled": _flag(body.get("enabled", True), "enabled"),
            "on_run_completed": kept,
            "owner": owner,
        }
        made = await run_in_threadpool(
            lambda: self.rt.crons.create(
                graph_id, body.get("schedule"), body.get("input"), **settings
            )
        )
        return JSONResponse(shape(made))

    async def get(self, request: Request) -> Response:
        cron_id, owner = request.path_params["cron_id"], request.state.owner
        found = await run_in_threadpool(self.rt.crons.get, cron_id, owner)
        if found is None:
            raise ApiError(404, f"cron {cron_id!r} not found")
        return JSONResponse(shape(found))

    async def update(self, request: Request) -> Response:
        cron_id, body = request.path_params["cron_id"], await _body(request)
        _refuse_unsupported(body)
        if not body:
            raise ApiError(400, "nothing to change: give the fields to update")
        changes: dict[str, Any] = {
            k: body[k] for k in ("schedule", "timezone", "input", "metadata") if k in body
        }
        if "end_time" in body:  # null clears it
            changes["end_time"] = _time(body["end_time"])
        if body.get("enabled") is not None:
            changes["enabled"] = _flag(body["enabled"], "enabled")
        if body.get("on_run_completed") is not None:
            changes["on_run_completed"] = _on_run_completed(body["on_run_completed"], "keep")
        owner = request.state.owner
        found = await run_in_threadpool(self.rt.crons.update, cron_id, changes, owner)
        if found is None:
            raise ApiError(404, f"cron {cron_id!r} not found")
        return JSONResponse(shape(found))

    async def delete(self, request: Request) -> Response:
        cron_id = request.path_params["cron_id"]
        if not await run_in_threadpool(self.rt.crons.delete, cron_id, request.state.owner):
            raise ApiError(404, f"cron {cron_id!r} not found")
        return Response(status_code=204)

    async def search(self, request: Request) -> Response:
        body = await _body(request)
        found = await self._found(body, request.state.owner)
        limit, offset = _page(body)
        select = body.get("select") or list(FIELDS)
        if not isinstance(select, list) or set(select) - set(FIELDS):
            raise ApiError(400, f"select names fields of a cron: {', '.join(FIELDS)}")
        shown = [shape(c) for c in found[offset : offset + limit]]
        return JSONResponse([{k: v for k, v in s.items() if k in select} for s in shown])

    async def count(self, request: Request) -> Response:
        found = await self._found(await _body(request), request.state.owner)
        return JSONResponse(len(found))

    async def _found(self, body: dict[str, Any], owner: str | None) -> list[Cron]:
        sort_by = body.get("sort_by") or "created_at"
        if sort_by not in SORTS:
            raise ApiError(400, f"sort_by must be one of {', '.join(SORTS)}, not {sort_by!r}")
        order = str(body.get("sort_order") or "desc").lower()
        if order not in ("asc", "desc"):
            raise ApiError(400, f"sort_order must be asc or desc, not {order!r}")
        assistant = body.get("assistant_id")
        graphs = [n for n in self.rt.names() if assistant in (n, shapes.assistant_id(n))]
        if assistant is not None and not graphs:
            return []  # as the reference: no cron of an assistant that does not exist
        filters: dict[str, Any] = {
            "agent": graphs[0] if graphs else None,
            "thread_id": body.get("thread_id"),
            "enabled": None if body.get("enabled") is None else _flag(body["enabled"], "enabled"),
            "metadata": body.get("metadata"),
            "sort_by": sort_by,
            "descending": order == "desc",
            "owner": owner,
        }
        return await run_in_threadpool(lambda: self.rt.crons.search(**filters))


def _refuse_unsupported(body: dict[str, Any]) -> None:
    given = [k for k in UNSUPPORTED if body.get(k) not in (None, {}, [], False)]
    if given:
        raise ApiError(
            422, f"Waystone does not support {', '.join(given)} on a cron yet; leave it out"
        )
    strategy = body.get("multitask_strategy")
    if strategy not in (None, "reject"):
        raise ApiError(
            422,
            f"multitask_strategy {strategy!r} is not supported on a cron: a tick that finds "
            "its thread's run still going is skipped (and recorded), as 'reject'",
        )


def _on_run_completed(value: Any, default: str) -> str:
    """Waystone keeps every thread a cron's runs ran on: history is evidence."""
    if value is None or value == "keep":
        return default
    if value == "delete":
        raise ApiError(
            422,
            "on_run_completed 'delete' is not supported: Waystone keeps every run's thread "
            "(its history is evidence); use 'keep'",
        )
    raise ApiError(400, f"on_run_completed must be 'keep' or 'delete', not {value!r}")


def _time(value: Any) -> datetime | None:
    if value is None:
        return None
    try:
        found = datetime.fromisoformat(str(value))
    except ValueError:
        raise ApiError(400, f"end_time must be an ISO 8601 time, not {value!r}") from None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise ApiError(400, f"{name} must be true or false, not {value!r}")
    return value
