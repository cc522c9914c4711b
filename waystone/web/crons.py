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

from waystone.web import assistants, shapes
from waystone.web.auth import authorize, passes
from waystone.web.bodies import CronCreate, CronFields, CronPatch, CronSearch
from waystone.web.inputs import read
from waystone.web.replies import HttpError

if TYPE_CHECKING:
    from waystone._runtime.cron_rows import Cron
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


def routes(api: Api) -> list[Route]:
    crons, r, w = CronRoutes(api), api.reads, api.changes
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
        body = await self._authorized(request, None, await read(request, CronCreate))
        return await self._create(None, body, request.state.owner)

    async def create_for_thread(self, request: Request) -> Response:
        thread_id, owner = request.path_params["thread_id"], request.state.owner
        body = await self._authorized(request, thread_id, await read(request, CronCreate))
        return await self._create(thread_id, body, owner)

    @staticmethod
    async def _authorized(request: Request, thread_id: str | None, body: CronCreate) -> CronCreate:
        """The body with the metadata the custom auth's handler gave the cron."""
        asked: dict[str, Any] = {
            "payload": {"assistant_id": body.assistant_id, "input": body.input},
            "schedule": body.schedule,
            "cron_id": None,
            "thread_id": thread_id,
            "user_id": None,
            "end_time": body.end_time,
            "metadata": dict(body.metadata or {}),
        }
        await authorize(request, "crons", "create", asked)
        return body.model_copy(update={"metadata": asked.get("metadata") or body.metadata})

    async def _visible(self, request: Request, action: str, cron: Cron | None) -> Cron | None:
        """``cron``, if the custom auth's filter for ``action`` passes its metadata."""
        asked = {"cron_id": request.path_params["cron_id"]}
        filters = await authorize(request, "crons", action, asked)
        if cron is None or not filters:
            return cron
        wanted = await run_in_threadpool(self.rt.redacted, filters)
        return cron if passes(cron.metadata, wanted) else None

    async def _create(self, thread_id: str | None, body: CronCreate, owner: str | None) -> Response:
        _refuse_unsupported(body)
        assistant = await run_in_threadpool(assistants.find, self.api, body.assistant_id, owner)
        if not assistant.system:
            raise HttpError(
                422,
                "a cron on a user's assistant is not supported yet: give its graph's "
                f"({assistant.graph_id!r}), and the cron's input",
            )
        graph_id = assistant.graph_id
        settings: dict[str, Any] = {
            "thread_id": thread_id,
            "metadata": body.metadata,
            "timezone": body.timezone,
            "end_time": _time(body.end_time),
            "enabled": body.enabled,
            "on_run_completed": _on_run_completed(body.on_run_completed, default="keep"),
            "owner": owner,
        }
        made = await run_in_threadpool(
            lambda: self.rt.crons.create(graph_id, body.schedule, body.input, **settings)
        )
        return JSONResponse(shape(made))

    async def get(self, request: Request) -> Response:
        cron_id, owner = request.path_params["cron_id"], request.state.owner
        found = await run_in_threadpool(self.rt.crons.get, cron_id, owner)
        found = await self._visible(request, "read", found)
        if found is None:
            raise HttpError(404, f"cron {cron_id!r} not found")
        return JSONResponse(shape(found))

    async def update(self, request: Request) -> Response:
        cron_id, body = request.path_params["cron_id"], await read(request, CronPatch)
        _refuse_unsupported(body)
        if not body.model_fields_set:
            raise HttpError(400, "nothing to change: give the fields to update")
        named = ("schedule", "timezone", "input", "metadata")
        changes: dict[str, Any] = {k: getattr(body, k) for k in named if body.given(k)}
        if body.given("end_time"):  # null clears it
            changes["end_time"] = _time(body.end_time)
        if body.enabled is not None:
            changes["enabled"] = body.enabled
        if body.on_run_completed is not None:
            changes["on_run_completed"] = _on_run_completed(body.on_run_completed, "keep")
        owner = request.state.owner
        if self.api.auth is not None:
            held = await run_in_threadpool(self.rt.crons.get, cron_id, owner)
            if await self._visible(request, "update", held) is None:
                raise HttpError(404, f"cron {cron_id!r} not found")
        found = await run_in_threadpool(self.rt.crons.update, cron_id, changes, owner)
        if found is None:
            raise HttpError(404, f"cron {cron_id!r} not found")
        return JSONResponse(shape(found))

    async def delete(self, request: Request) -> Response:
        cron_id = request.path_params["cron_id"]
        if self.api.auth is not None:
            held = await run_in_threadpool(self.rt.crons.get, cron_id, request.state.owner)
            if await self._visible(request, "delete", held) is None:
                raise HttpError(404, f"cron {cron_id!r} not found")
        if not await run_in_threadpool(self.rt.crons.delete, cron_id, request.state.owner):
            raise HttpError(404, f"cron {cron_id!r} not found")
        return Response(status_code=204)

    async def search(self, request: Request) -> Response:
        body = await read(request, CronSearch)
        found = await self._found(body, request.state.owner, request)
        shown = [shape(c) for c in found[body.window]]
        if body.select:
            shown = [{k: v for k, v in s.items() if k in body.select} for s in shown]
        return JSONResponse(shown)

    async def count(self, request: Request) -> Response:
        found = await self._found(await read(request, CronSearch), request.state.owner, request)
        return JSONResponse(len(found))

    async def _found(self, body: CronSearch, owner: str | None, request: Request) -> list[Cron]:
        order = (body.sort_order or "desc").lower()
        if order not in ("asc", "desc"):
            raise HttpError(422, f"sort_order must be asc or desc, not {order!r}")
        assistant = body.assistant_id
        graphs = [n for n in self.rt.names() if assistant in (n, shapes.assistant_id(n))]
        if assistant is not None and not graphs:
            return []  # as the reference: no cron of an assistant that does not exist
        filters: dict[str, Any] = {
            "agent": graphs[0] if graphs else None,
            "thread_id": body.thread_id,
            "enabled": body.enabled,
            "metadata": body.metadata,
            "sort_by": body.sort_by or "created_at",
            "descending": order == "desc",
            "owner": owner,
        }
        asked = {"assistant_id": assistant, "thread_id": body.thread_id}
        wanted = await authorize(request, "crons", "search", asked)
        found = await run_in_threadpool(lambda: self.rt.crons.search(**filters))
        if not wanted:
            return found
        wanted = await run_in_threadpool(self.rt.redacted, wanted)
        return [c for c in found if passes(c.metadata, wanted)]


def _refuse_unsupported(body: CronFields) -> None:
    given = [k for k in UNSUPPORTED if getattr(body, k) not in (None, {}, [], False)]
    if given:
        raise HttpError(
            422, f"Waystone does not support {', '.join(given)} on a cron yet; leave it out"
        )
    strategy = body.multitask_strategy
    if strategy not in (None, "reject"):
        raise HttpError(
            422,
            f"multitask_strategy {strategy!r} is not supported on a cron: a tick that finds "
            "its thread's run still going is skipped (and recorded), as 'reject'",
        )


def _on_run_completed(value: str | None, default: str) -> str:
    """Waystone keeps every thread a cron's runs ran on: history is evidence."""
    if value is None or value == "keep":
        return default
    if value == "delete":
        raise HttpError(
            422,
            "on_run_completed 'delete' is not supported: Waystone keeps every run's thread "
            "(its history is evidence); use 'keep'",
        )
    raise HttpError(422, f"on_run_completed must be 'keep' or 'delete', not {value!r}")


def _time(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        found = datetime.fromisoformat(value)
    except ValueError:
        raise HttpError(400, f"end_time must be an ISO 8601 time, not {value!r}") from None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)
