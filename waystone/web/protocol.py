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

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket

from waystone._json_input import parse_json_input
from waystone._runs.signals import RESUME
from waystone.errors import BadInput
from waystone.web import protocol_events, shapes
from waystone.web.bodies import RunCreate
from waystone.web.protocol_events import Filter
from waystone.web.protocol_socket import Session
from waystone.web.replies import HttpError, answer
from waystone.web.thread_events import ThreadEvents, shown, sse

if TYPE_CHECKING:
    from waystone.runtime import RunStatus
    from waystone.web.api import Api


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
        self.events = ThreadEvents(api.rt, api.follower)
        # run.start makes the thread it names, for the caller's owner, as a run's creation
        api._creating = (*api._creating, self.command)

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
            "multitask_strategy": _strategy(params.get("multitaskStrategy")),
        }
        config, fork = _fork(params.get("config"))
        if fork is not None:  # a fork (regenerate, edit): the run starts at that checkpoint
            fields["checkpoint"] = {"checkpoint_id": fork}
        if config:
            fields["config"] = config
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
        node = {"namespace": [], "status": shown(status)[0], "graph_name": status.agent}
        return {"tree": node}

    def _status(self, thread_id: str) -> RunStatus | None:
        return self.events.status(thread_id)

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
        events = self.events(request.path_params["thread_id"])
        return StreamingResponse(sse(events, wanted, since), media_type="text/event-stream")

    # -- the WebSocket ---------------------------------------------------------------------

    async def socket(self, websocket: WebSocket) -> None:
        """Commands in, their answers and the subscribed events out, until it closes."""
        thread_id = websocket.path_params["thread_id"]
        try:
            owner = self.api._caller(_Headers(websocket), change=True)  # type: ignore[arg-type]
            # an owner's socket names a thread of theirs that exists: the events it would
            # follow are those of whoever makes the thread
            await self.api._check_owner(_Headers(websocket, owner), self.socket)  # type: ignore[arg-type]
        except Exception as exc:
            status, message, _ = answer(exc)
            await websocket.close(
                code=1008 if status in (401, 403, 404) else 1011, reason=message[:120]
            )
            return
        await websocket.accept()
        await Session(websocket, thread_id, owner, self.handle).serve(self.events)


class _Headers:
    """A WebSocket seen as the request the API's checks read (headers, path, owner)."""

    def __init__(self, websocket: WebSocket, owner: str | None = None) -> None:
        self.headers, self.path_params = websocket.headers, websocket.path_params
        self.state = type("State", (), {"owner": owner})()


def _fork(config: Any) -> tuple[dict[str, Any] | None, Any]:
    """A run's ``config`` without what the command's thread says (the SDK sends its
    ``thread_id`` in ``configurable``) and without the checkpoint it forks from, and that
    checkpoint's id (the SDK puts ``forkFrom`` in ``configurable.checkpoint_id``)."""
    if not isinstance(config, dict):
        return None, None
    configurable = config.get("configurable")
    if not isinstance(configurable, dict):
        return config, None
    rest = {k: v for k, v in configurable.items() if k not in ("checkpoint_id", "thread_id")}
    kept = {k: v for k, v in config.items() if k != "configurable"}
    return {**kept, **({"configurable": rest} if rest else {})}, configurable.get("checkpoint_id")


def _strategy(given: Any) -> str:
    """The SDK's ``multitaskStrategy``; anything else is the reference's default."""
    return given if given in ("reject", "enqueue", "interrupt", "rollback") else "enqueue"


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
