"""The thread-centric protocol ``@langchain/react``'s ``useStream`` speaks, as the
reference server serves it: ``POST /threads/{t}/commands`` (one command, one answer),
``POST /threads/{t}/stream/events`` (the thread's events over SSE, filtered by the body)
and a WebSocket on the same path (commands and ``subscription.subscribe`` in, answers and
events out).

Nothing here is new machinery: ``run.start`` creates a run as ``POST /threads/{t}/runs``
does (or answers the interrupt the thread waits on), ``input.respond`` answers interrupts
by id as a resume does, and the events are the thread's runs' streams
(:func:`waystone.web.follow.events`, so what Postgres holds, from any server) told as
the protocol's events (:mod:`waystone.web.protocol_events`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from waystone._json_input import parse_json_input
from waystone._runs.signals import RESUME
from waystone.errors import BadInput, UnknownThread
from waystone.web import follow, protocol_events, shapes, stream
from waystone.web.bodies import RunCreate
from waystone.web.protocol_events import Filter, Messages
from waystone.web.replies import HttpError, answer

if TYPE_CHECKING:
    from waystone.runtime import RunStatus
    from waystone.web.api import Api

logger = logging.getLogger(__name__)

HEARTBEAT_S = 15.0  # an idle SSE stream says it is alive, as the reference's does
# what a run's protocol stream is made from, of the modes the run stream has
WANTED = ("values", "updates", "messages-tuple", "custom", "checkpoints", "tasks")
ERRORS = {401: "permission_denied", 403: "permission_denied", 404: "no_such_run"}


class ProtocolError(Exception):
    """A command refused: the protocol's error code and what to do."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


class Protocol:
    """The protocol's routes, on the API's runtime, auth and run creation."""

    def __init__(self, api: Api) -> None:
        self.api, self.rt = api, api.rt

    def routes(self) -> list[BaseRoute]:
        events = "/threads/{thread_id}/stream/events"
        return [
            Route(
                "/threads/{thread_id}/commands", self.api.changes(self.command), methods=["POST"]
            ),
            Route(events, self.api.reads(self.sse), methods=["POST"]),
            WebSocketRoute(events, self.socket),
        ]

    # -- commands --------------------------------------------------------------------------

    async def command(self, request: Request) -> Response:
        payload = _json(await request.body())
        if not _well_formed(payload):
            return JSONResponse(_malformed(payload), status_code=400)
        thread_id = request.path_params["thread_id"]
        return JSONResponse(await self.handle(thread_id, payload, request.state.owner))

    async def handle(
        self, thread_id: str, payload: dict[str, Any], owner: str | None
    ) -> dict[str, Any]:
        """The answer to one command (``payload`` well formed): a success or an error."""
        method, params = payload["method"], payload.get("params")
        params = params if isinstance(params, dict) else {}
        handlers = {
            "run.start": self._run_start,
            "input.respond": self._input_respond,
            "state.get": self._state_get,
            "agent.getTree": self._tree,
        }
        try:
            if method not in handlers:
                if method.startswith("subscription."):
                    raise ProtocolError(
                        "not_supported",
                        f"{method} is the WebSocket's; over HTTP each POST "
                        f"/threads/{thread_id}/stream/events is one subscription",
                    )
                raise ProtocolError("unknown_command", f"Unknown protocol command: {method}")
            result = await handlers[method](thread_id, params, owner)
        except ProtocolError as exc:
            return _error(payload["id"], exc.code, exc.message)
        except Exception as exc:  # the API's own refusals, as the protocol's codes
            status, message, _ = answer(exc)
            if status >= 500:
                raise
            code = ERRORS.get(status, "invalid_argument")
            if status == 422 and "support" in message:
                code = "not_supported"
            return _error(payload["id"], code, message)
        return {"type": "success", "id": payload["id"], "result": result, "meta": {}}

    async def _run_start(
        self, thread_id: str, params: dict[str, Any], owner: str | None
    ) -> dict[str, Any]:
        assistant = params.get("assistant_id")
        if not isinstance(assistant, str) or not assistant:
            raise ProtocolError("invalid_argument", "run.start requires an assistant_id.")
        run_input = params.get("input")
        fields: dict[str, Any] = {
            "assistant_id": assistant,
            "if_not_exists": "create",
            "multitask_strategy": params.get("multitask_strategy") or "enqueue",
        }
        config = params.get("config")
        configurable = config.get("configurable") if isinstance(config, dict) else None
        fork = configurable.get("checkpoint_id") if isinstance(configurable, dict) else None
        if fork is not None:  # a fork (regenerate, edit): the run starts at that checkpoint
            fields["checkpoint"] = {"checkpoint_id": fork}
        if params.get("metadata") is not None:
            fields["metadata"] = params["metadata"]
        if run_input is not None and await run_in_threadpool(self._waiting, thread_id):
            fields["command"] = {"resume": run_input}  # the thread waits: the input answers
        else:
            fields["input"] = run_input
        status, _ = await self.api._create(thread_id, _body(fields), owner)
        return {"run_id": status.run_id}

    async def _input_respond(
        self, thread_id: str, params: dict[str, Any], owner: str | None
    ) -> dict[str, Any]:
        answers = _answers(params)
        status = await run_in_threadpool(self._status, thread_id)
        pending = {i["id"] for i in status.interrupts} if status is not None else set()
        if status is None or status.state != "waiting" or status.waiting_for != RESUME:
            raise ProtocolError("no_such_run", "No interrupted run is bound to this thread.")
        unknown = [i for i in answers if i not in pending]
        if unknown:
            raise ProtocolError(
                "no_such_interrupt", f"Unknown or already-consumed interrupt: {unknown[0]}"
            )
        body = _body({"assistant_id": status.agent, "command": {"resume": answers}})
        await self.api._create(thread_id, body, owner)
        return {}

    async def _state_get(
        self, thread_id: str, params: dict[str, Any], owner: str | None
    ) -> dict[str, Any]:
        del params, owner

        def read() -> dict[str, Any]:
            found = self.rt.thread(thread_id)
            snapshot = self.api._snapshot(thread_id, found.agent)
            if snapshot is None or not snapshot.config:
                return {"values": {}}
            checkpoint = snapshot.config["configurable"]
            ref = {"id": checkpoint["checkpoint_id"], "ns": checkpoint.get("checkpoint_ns", "")}
            return {"values": shapes.jsonable(snapshot.values), "checkpoint": ref}

        return await run_in_threadpool(read)

    async def _tree(
        self, thread_id: str, params: dict[str, Any], owner: str | None
    ) -> dict[str, Any]:
        del params, owner
        status = await run_in_threadpool(self._status, thread_id)
        if status is None:
            raise ProtocolError("no_such_run", f"thread {thread_id} has no run")
        node = {"namespace": [], "status": _shown(status)[0], "graph_name": status.agent}
        return {"tree": node}

    def _status(self, thread_id: str) -> RunStatus | None:
        try:
            return self.rt.status(thread_id)
        except UnknownThread:
            return None

    def _waiting(self, thread_id: str) -> bool:
        status = self._status(thread_id)
        return status is not None and status.state == "waiting" and status.waiting_for == RESUME

    # -- events ----------------------------------------------------------------------------

    async def sse(self, request: Request) -> Response:
        body = _json(await request.body())
        if not isinstance(body, dict):
            raise HttpError(400, "the body must be a JSON object with channels")
        bad = protocol_events.bad_channels(body.get("channels"))
        if bad:
            raise HttpError(
                400,
                f"channels must be a non-empty array of channels; not channels: "
                f"{', '.join(bad[:5])} (channels: {', '.join(sorted(protocol_events.CHANNELS))}, "
                "or custom:<name>)",
            )
        since = body.get("since")
        since = since if isinstance(since, int) and not isinstance(since, bool) else None
        wanted = Filter.of(body)
        events = self.thread_events(request.path_params["thread_id"])
        return StreamingResponse(_sse(events, wanted, since), media_type="text/event-stream")

    async def thread_events(self, thread_id: str) -> AsyncIterator[dict[str, Any]]:
        """The thread's events, numbered (``seq``) from 1: its current run's from its start,
        then each run's and each resume's as they come, for as long as it is read."""
        seq = 0
        run_id: str | None = None  # the run streamed last
        last: str | None = None  # the id of the last event of it streamed
        waited: frozenset[str] | None = None  # the interrupts it stopped on, if it did
        async with self.api.follower.follow(thread_id) as changed:
            while True:
                await changed.wait()
                changed.clear()
                status = await run_in_threadpool(self._status, thread_id)
                phase = _phase(status, run_id, last, waited)
                if status is None or phase is None:
                    continue
                run_id, answered = status.run_id, waited if phase != "start" else None
                start = None if phase == "start" else last
                async for made, reached in self._run_events(status, phase, start, answered):
                    seq += 1
                    last = reached
                    yield {**made, "seq": seq}
                ended = await run_in_threadpool(self._status, thread_id)
                waited = None
                if (
                    ended is not None
                    and ended.run_id == run_id
                    and _shown(ended)[0] == "interrupted"
                ):
                    waited = frozenset(i["id"] for i in ended.interrupts)

    async def _run_events(
        self, status: RunStatus, phase: str, after: str | None, answered: frozenset[str] | None
    ) -> AsyncIterator[tuple[dict[str, Any], str | None]]:
        """One phase of a run (its start, or a resume of the interrupts ``answered``) as
        protocol events, each with the id of the last run stream event it comes from
        (where the next phase starts)."""
        run_id, graph = status.run_id or "", status.agent
        yield protocol_events.lifecycle(run_id, phase, "running", graph), after
        modes = tuple(m for m in WANTED if m in stream.MODES)
        messages = Messages()
        made = follow.events(
            self.rt, self.api.follower, status, modes, after, set(answered or ()), True
        )
        async for line in made:
            name, data, event_id = _parsed(line)
            if name == "error" or event_id is None:
                continue  # the run's end says it; the metadata is the request's
            for out in protocol_events.translated(messages, event_id, name, data):
                yield out, event_id
            after = event_id
        for out in messages.close(after or run_id):
            yield out, after
        ended = await run_in_threadpool(self._status, status.thread_id)
        shown, error = ("completed", None)
        if ended is not None and ended.run_id == run_id:
            shown, error = _shown(ended)
        if shown == "interrupted" and ended is not None:
            for interrupt in ended.interrupts:
                yield protocol_events.input_requested(run_id, interrupt), after
        yield protocol_events.lifecycle(run_id, phase, shown, graph, error), after

    # -- the WebSocket ---------------------------------------------------------------------

    async def socket(self, websocket: WebSocket) -> None:
        """Commands in, their answers and the subscribed events out, until it closes."""
        thread_id = websocket.path_params["thread_id"]
        try:
            owner = self.api._caller(_Headers(websocket), change=True)  # type: ignore[arg-type]
            await self.api._check_owner(_Headers(websocket, owner), self.api.stream_run)  # type: ignore[arg-type]
        except Exception as exc:
            status, message, _ = answer(exc)
            await websocket.close(
                code=1008 if status in (401, 403, 404) else 1011, reason=message[:120]
            )
            return
        await websocket.accept()
        subscriptions: dict[str, Filter] = {}
        pump = asyncio.create_task(self._pump(websocket, thread_id, subscriptions))
        try:
            while True:
                payload = _json((await websocket.receive_text()).encode())
                if not _well_formed(payload):
                    await websocket.send_json(_malformed(payload))
                    continue
                await websocket.send_json(
                    await self._socket_command(thread_id, payload, owner, subscriptions)
                )
        except WebSocketDisconnect:
            pass
        finally:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pump

    async def _socket_command(
        self,
        thread_id: str,
        payload: dict[str, Any],
        owner: str | None,
        subscriptions: dict[str, Filter],
    ) -> dict[str, Any]:
        method, params = payload["method"], payload.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "subscription.subscribe":
            bad = protocol_events.bad_channels(params.get("channels"))
            if bad:
                return _error(
                    payload["id"],
                    "invalid_argument",
                    "subscription.subscribe received an unsupported channel.",
                )
            sub_id = f"sub-{len(subscriptions) + 1}-{id(params)}"
            subscriptions[sub_id] = Filter.of(params)
            return {
                "type": "success",
                "id": payload["id"],
                "result": {"subscription_id": sub_id, "replayed_events": 0},
                "meta": {},
            }
        if method == "subscription.unsubscribe":
            if subscriptions.pop(str(params.get("subscription_id")), None) is None:
                return _error(
                    payload["id"],
                    "no_such_subscription",
                    f"Unknown subscription: {params.get('subscription_id')}",
                )
            return {"type": "success", "id": payload["id"], "result": {}, "meta": {}}
        return await self.handle(thread_id, payload, owner)

    async def _pump(
        self, websocket: WebSocket, thread_id: str, subscriptions: dict[str, Filter]
    ) -> None:
        """Sends each event of the thread once to the socket, if a subscription wants it."""
        async for made in self.thread_events(thread_id):
            if any(f.matches(made) for f in list(subscriptions.values())):
                await websocket.send_text(json.dumps(made, default=str))


class _Headers:
    """A WebSocket seen as the request the API's checks read (headers, path, owner)."""

    def __init__(self, websocket: WebSocket, owner: str | None = None) -> None:
        self.headers, self.path_params = websocket.headers, websocket.path_params
        self.state = type("State", (), {"owner": owner})()


def _phase(
    status: RunStatus | None,
    run_id: str | None,
    last: str | None,
    waited: frozenset[str] | None,
) -> str | None:
    """Which phase of the thread's current run to stream now: ``start``, or (a resume) the
    id of the event it goes on after; None: nothing new (no run, queued, or streamed).
    ``run_id``: the run streamed last, ``waited``: the interrupts it stopped on."""
    if status is None or status.run_id is None or status.state == "queued":
        return None
    if status.run_id != run_id:
        return "start"
    pending = frozenset(i["id"] for i in status.interrupts)
    if waited is not None and (status.state != "waiting" or pending != waited):
        return last or "resumed"  # it was answered: it goes on
    return None


def _shown(status: RunStatus) -> tuple[str, str | None]:
    """The protocol's status of a run, and its error."""
    if status.state == "waiting":
        return "interrupted", None
    if status.state == "done":
        return "completed", None
    if status.state in ("failed", "needs-human"):
        return "failed", status.reason
    return "running", None


def _answers(params: dict[str, Any]) -> dict[str, Any]:
    """``input.respond``'s answers by interrupt id (one, or a batch of ``responses``)."""
    entries = params.get("responses")
    if entries is None:
        entries = [params]
    if not isinstance(entries, list) or not entries:
        raise ProtocolError("invalid_argument", "input.respond requires at least one response.")
    found: dict[str, Any] = {}
    for entry in entries:
        interrupt_id = entry.get("interrupt_id") if isinstance(entry, dict) else None
        if not isinstance(interrupt_id, str):
            raise ProtocolError("invalid_argument", "input.respond requires an interrupt_id.")
        found[interrupt_id] = entry.get("response")
    return found


def _body(fields: dict[str, Any]) -> RunCreate:
    try:
        return RunCreate.model_validate(fields)
    except ValidationError as exc:
        raise ProtocolError("invalid_argument", str(exc).splitlines()[0]) from None


def _json(raw: bytes) -> Any:
    try:
        return parse_json_input(raw, "the body")
    except (BadInput, ValueError):
        return None


def _well_formed(payload: Any) -> bool:
    return (
        isinstance(payload, dict)
        and isinstance(payload.get("id"), int)
        and not isinstance(payload.get("id"), bool)
        and isinstance(payload.get("method"), str)
    )


def _malformed(payload: Any) -> dict[str, Any]:
    given = payload.get("id") if isinstance(payload, dict) else None
    message = "Protocol commands must include an integer id and string method."
    return _error(given if isinstance(given, int) else None, "invalid_argument", message)


def _error(command_id: int | None, code: str, message: str) -> dict[str, Any]:
    return {"type": "error", "id": command_id, "error": code, "message": message}


def _parsed(line: str) -> tuple[str, Any, str | None]:
    """An SSE event of :func:`follow.events`: its name, data and id."""
    name, data, event_id = "", [], None
    for part in line.splitlines():
        key, _, value = part.partition(": ")
        if key == "event":
            name = value
        elif key == "data":
            data.append(value)
        elif key == "id":
            event_id = value
    return name, json.loads("\n".join(data)) if data else None, event_id


async def _sse(
    events: AsyncIterator[dict[str, Any]], wanted: Filter, since: int | None
) -> AsyncIterator[str]:
    """The events ``wanted`` after ``since`` as SSE, with a heartbeat while idle."""
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def read() -> None:
        async for made in events:
            await queue.put(made)

    reader = asyncio.create_task(read())
    try:
        while True:
            try:
                made = await asyncio.wait_for(queue.get(), HEARTBEAT_S)
            except TimeoutError:
                if reader.done():
                    reader.result()  # its error, if it failed
                    return
                yield ": heartbeat\n\n"
                continue
            if (since is not None and made["seq"] <= since) or not wanted.matches(made):
                continue
            yield follow.sse_line(made["method"], made, str(made["seq"]))
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reader
