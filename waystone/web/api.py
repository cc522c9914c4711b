"""The LangGraph server API (the one ``langgraph dev`` serves and ``langgraph-sdk``
speaks) over a Waystone runtime: assistants, threads and runs that workers drive.

Each registered graph or agent is one assistant, found by its name or by the id the
reference server gives it. A run created here is a Waystone run: queued for a worker,
fenced, its effects exactly once; a run that stops on an ``interrupt()`` is
``interrupted`` and a run created with ``command={"resume": ...}`` answers it: the
same Waystone run goes on (its run id stays the same). A run's stream is made from its
committed checkpoints (:mod:`waystone.web.stream`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from waystone._identifiers import check_identifier
from waystone._runs import breakpoints
from waystone._runs.signals import RESUME
from waystone._runtime import assistant_rules
from waystone._runtime.options import RunOptions
from waystone._runtime.rollback import branches
from waystone._runtime.threads import SEARCH_LIMIT
from waystone._webhooks.policy import Policy
from waystone.errors import UnknownRun, UnknownThread
from waystone.web import assistants, follow, run_options, shapes, stream, thread_stream
from waystone.web.auth import CustomAuth, authorize, passes
from waystone.web.auth_filters import assistant_action, thread_action
from waystone.web.bodies import (
    History,
    RunCreate,
    RunsCancel,
    ThreadCreate,
    ThreadSearch,
)
from waystone.web.follower import Follower
from waystone.web.inputs import Paged, read, validated
from waystone.web.live import LIVE_MODES
from waystone.web.owners import Tokens
from waystone.web.replies import HttpError, route_path

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

    from waystone._runtime.threads import Thread
    from waystone.runtime import RunStatus, Runtime

Handler = Callable[[Request], Awaitable[Response]]
# How long `/ok?check_db=1` waits for Postgres: a health check answers soon, and a down
# database must not hold a threadpool slot for the pool's whole wait.
HEALTH_WAIT_S = 2.0
# What a run request may carry that Waystone does not do yet: refused, never ignored.
UNSUPPORTED = (
    "after_seconds",
    "feedback_keys",
    "stream_subgraphs",
)

# Modes whose events a run does not commit: a stream is made of what Postgres holds (so it
# resumes by Last-Event-ID and joins from any server), and these would be lost on the way.
NOT_COMMITTED = {
    "events": "LangChain's callback events are not saved with a step, and Waystone streams "
    "only what is committed; use updates, values, messages-tuple or debug",
}


class Api:
    """The routes, on one runtime. ``tokens``: what a request must carry (``x-api-key``,
    or ``Authorization: Bearer``), the operator's or an owner's (a bare string: the
    operator's); without any, the API only reads. An owner's request finds that owner's
    threads only (:meth:`Runtime.thread`'s rule): any other is 404, as if it did not
    exist. ``auth``: a custom auth (:mod:`waystone.web.auth`), which then alone says who
    a request is and what it sees, in place of the tokens."""

    def __init__(
        self, rt: Runtime, tokens: Tokens | str | None, auth: CustomAuth | None = None
    ) -> None:
        self.rt = rt
        self.tokens = tokens if isinstance(tokens, Tokens) else Tokens(operator=tokens)
        self.auth = auth
        self.since = datetime.now(UTC)
        self._creating: tuple[Handler, ...] = (self.create_run, self.wait_run, self.stream_run)
        self.webhooks = Policy.of(rt.settings)  # which webhook URLs a run may name
        self.follower = Follower(rt)

    def routes(self) -> list[Route]:
        """Its own routes; the assistants', crons' and thread edits' are in their modules."""
        r, w = self.reads, self.changes
        return [
            Route("/ok", self.ok, methods=["GET"]),  # a health check carries no token
            Route("/info", r(self.info), methods=["GET"]),
            Route("/threads", w(self.create_thread), methods=["POST"]),
            Route("/threads/search", r(self.search_threads), methods=["POST"]),
            Route("/threads/{thread_id}", r(self.get_thread), methods=["GET"]),
            Route("/threads/{thread_id}/state", r(self.thread_state), methods=["GET"]),
            Route("/threads/{thread_id}/history", r(self.thread_history), methods=["GET", "POST"]),
            Route("/threads/{thread_id}/runs", w(self.create_run), methods=["POST"]),
            Route("/threads/{thread_id}/runs", r(self.list_runs), methods=["GET"]),
            Route("/threads/{thread_id}/runs/wait", w(self.wait_run), methods=["POST"]),
            Route("/threads/{thread_id}/runs/stream", w(self.stream_run), methods=["POST"]),
            Route(
                "/threads/{thread_id}/runs/{run_id}/stream", r(self.join_stream), methods=["GET"]
            ),
            Route("/threads/{thread_id}/runs/{run_id}", r(self.get_run), methods=["GET"]),
            Route("/threads/{thread_id}/runs/{run_id}/join", r(self.join_run), methods=["GET"]),
            Route(
                "/threads/{thread_id}/runs/{run_id}/cancel", w(self.cancel_run), methods=["POST"]
            ),
            Route("/runs/wait", w(self.wait_stateless), methods=["POST"]),
            Route("/runs/stream", w(self.stream_stateless), methods=["POST"]),
            Route("/threads/{thread_id}/stream", r(self.thread_stream), methods=["GET"]),
            Route("/runs/cancel", w(self.cancel_runs), methods=["POST"]),
        ]

    # -- auth ------------------------------------------------------------------------------

    def reads(self, handler: Handler) -> Handler:
        """``handler`` for any reader (what it raises: :mod:`waystone.web.replies`)."""
        return self._guarded(handler, change=False)

    def changes(self, handler: Handler) -> Handler:
        """``handler`` for a caller that may change things."""
        return self._guarded(handler, change=True)

    def _guarded(self, handler: Handler, *, change: bool) -> Handler:
        async def guarded(request: Request) -> Response:
            if self.auth is not None:
                if handler != self.info:  # the reference's meta route: anyone's
                    await self._admit(request, self.auth)
                return await handler(request)
            request.state.owner = self._caller(request, change)
            _check_path(request)
            await self._check_owner(request, handler)
            return await handler(request)

        return guarded

    def _caller(self, request: Request, change: bool) -> str | None:
        """The owner the request's token stands for (``None``: the operator, or anyone
        reading a server with no token); 401 when it needs a token and has none of them."""
        if not self.tokens.any:
            if change:
                raise HttpError(401, "the server has no WAYSTONE_API_TOKEN: it only reads")
            return None
        given = request.headers.get("x-api-key") or ""
        scheme, _, bearer = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            given = given or bearer.strip()
        found, owner = self.tokens.caller(given)
        if not found:
            raise HttpError(401, "this needs an API token (x-api-key or Authorization: Bearer)")
        return owner

    async def _admit(self, request: Request, auth: CustomAuth) -> None:
        """The custom auth's caller, and its answer on the thread or assistant the path
        names: 404 for one whose metadata its filter does not pass."""
        request.state.caller = await auth.authenticate(request)
        request.state.auth, request.state.owner = auth, None
        _check_path(request)
        p, path = request.path_params, route_path(request.scope)
        assistant = p.get("assistant_id")
        if assistant is not None:
            action = assistant_action(request.method, path.removeprefix(f"/assistants/{assistant}"))
            filters = await authorize(request, "assistants", action, {"assistant_id": assistant})
            metadata = await run_in_threadpool(self.assistant_metadata, assistant)
            if metadata is not None and not passes(metadata, filters):
                raise HttpError(404, f"assistant {assistant!r} not found")
        thread_id = p.get("thread_id")
        if thread_id is None:
            return
        asked = thread_action(request.method, path.removeprefix(f"/threads/{thread_id}"))
        if asked is not None:
            value = {"thread_id": thread_id, **({"run_id": p["run_id"]} if "run_id" in p else {})}
            await self.check_thread(thread_id, await authorize(request, "threads", asked, value))

    async def check_thread(self, thread_id: str, filters: dict[str, Any] | None) -> None:
        """404 when the thread exists and its metadata does not pass ``filters`` (one
        that does not exist is its route's to answer)."""
        if not filters:
            return
        wanted = await run_in_threadpool(self.rt.redacted, filters)
        try:
            found = await run_in_threadpool(self.rt.thread, thread_id)
        except UnknownThread:
            return
        if not passes(found.metadata, wanted):
            raise UnknownThread(thread_id)

    def assistant_metadata(self, assistant: str) -> dict[str, Any] | None:
        """The metadata of the assistant an id (or a graph's name) names, which an auth
        filter is held to; ``None`` when there is none (its route answers 404)."""
        try:
            found = assistants.find(self, assistant, None)
        except HttpError:
            return None
        return dict(found.metadata)

    async def _check_owner(self, request: Request, handler: Handler) -> None:
        """404 for a thread the caller's owner may not see, before anything is read or
        changed; a run may still create a thread that does not exist at all."""
        thread_id = request.path_params.get("thread_id")
        owner = request.state.owner
        if thread_id is None or owner is None:
            return
        try:
            await run_in_threadpool(self.rt.check_owner, thread_id, owner)
        except UnknownThread:
            if handler not in self._creating or await run_in_threadpool(self._exists, thread_id):
                raise

    # -- assistants ------------------------------------------------------------------------

    async def ok(self, request: Request) -> Response:
        """``{"ok": true}`` while the server answers, as the reference's: no token needed,
        nothing told. With ``?check_db=1``, only once Postgres answers too (503 if not)."""
        check_db = request.query_params.get("check_db", "0")
        if check_db not in ("0", "1"):
            raise HttpError(400, "check_db must be 0 or 1")
        if check_db == "1" and not await run_in_threadpool(self.rt.database_ok, HEALTH_WAIT_S):
            raise HttpError(503, "the database is unreachable")
        return JSONResponse({"ok": True})

    async def info(self, request: Request) -> Response:
        from importlib.metadata import version

        return JSONResponse({"version": version("waystone"), "flags": {"assistants": True}})

    # -- threads ---------------------------------------------------------------------------

    async def create_thread(self, request: Request) -> Response:
        body = await read(request, ThreadCreate)
        if_exists = body.if_exists or "raise"
        asked: dict[str, Any] = {
            "thread_id": body.thread_id,
            "metadata": body.metadata or {},
            "if_exists": if_exists,
        }
        filters = await authorize(request, "threads", "create", asked)
        made = await run_in_threadpool(
            lambda: self.rt.create_thread(
                body.thread_id,
                metadata=asked.get("metadata") or body.metadata,
                if_exists=if_exists,
                owner=request.state.owner,
            )
        )
        if not passes(made.metadata, await run_in_threadpool(self.rt.redacted, filters)):
            raise HttpError(409, f"thread {made.thread_id} already exists")  # another's
        return JSONResponse(await run_in_threadpool(self.shown_thread, made.thread_id))

    async def get_thread(self, request: Request) -> Response:
        thread_id = request.path_params["thread_id"]
        return JSONResponse(await run_in_threadpool(self.shown_thread, thread_id))

    async def search_threads(self, request: Request) -> Response:
        body = await read(request, ThreadSearch)
        limit, offset, metadata = max(body.limit, 1), body.offset, body.metadata
        owner = request.state.owner
        asked = {"metadata": metadata or {}, "values": {}, "status": body.status}
        filters = await authorize(request, "threads", "search", {**asked, "limit": limit})
        wanted = await run_in_threadpool(self.rt.redacted, filters)

        def search() -> list[dict[str, Any]]:
            if filters:  # the filter is on each thread's metadata: read on every one, paged
                found = self.rt.search_threads(metadata=metadata, limit=SEARCH_LIMIT, owner=owner)
                passed = [t for t in found if passes(t.metadata, wanted)]
                shown = [self.shown_thread(t.thread_id) for t in passed]
                return [t for t in shown if body.status in (None, t["status"])][body.window]
            if body.status is None:
                found = self.rt.search_threads(
                    metadata=metadata, limit=limit, offset=offset, owner=owner
                )
                return [self.shown_thread(t.thread_id) for t in found]
            # the status is each thread's run's: read on every thread, then paged
            found = self.rt.search_threads(metadata=metadata, limit=SEARCH_LIMIT, owner=owner)
            shown = [self.shown_thread(t.thread_id) for t in found]
            return [t for t in shown if t["status"] == body.status][body.window]

        return JSONResponse(await run_in_threadpool(search))

    def shown_thread(self, thread_id: str) -> dict[str, Any]:
        """The thread as the reference shows it (``langgraph_sdk.schema.Thread``)."""
        found = self.rt.thread(thread_id)
        snapshot = self._snapshot(thread_id, found.agent)
        return shapes.thread(found, snapshot)

    def _snapshot(self, thread_id: str, agent: str | None) -> StateSnapshot | None:
        if agent is None or agent not in self.rt.names():
            return None
        return self.rt.graph(agent).get_state(self.rt.config(thread_id))

    async def thread_state(self, request: Request) -> Response:
        thread_id = request.path_params["thread_id"]

        def read() -> dict[str, Any]:
            found = self.rt.thread(thread_id)
            return shapes.state(thread_id, self._snapshot(thread_id, found.agent))

        return JSONResponse(await run_in_threadpool(read))

    async def thread_history(self, request: Request) -> Response:
        thread_id = request.path_params["thread_id"]
        query = validated(Paged, dict(request.query_params), "the query", strict=False)
        body = await read(request, History) if request.method == "POST" else History()
        limit = query.limit if body.limit is None else body.limit

        def states() -> list[dict[str, Any]]:
            found = self.rt.thread(thread_id)
            if found.agent is None or found.agent not in self.rt.names():
                return []
            graph = self.rt.graph(found.agent)
            runs = self.rt.history(thread_id)["runs"]
            gone = {r["run_id"] for r in runs if r.get("stopped_as") == "rollback"}
            history = branches(graph.get_state_history(self.rt.config(thread_id)), gone)
            return [shapes.state(thread_id, snap) for snap in history[:limit]]

        return JSONResponse(await run_in_threadpool(states))

    # -- runs ------------------------------------------------------------------------------

    async def create_run(self, request: Request) -> Response:
        thread_id = request.path_params["thread_id"]
        body, user = await self._authorize_run(request, thread_id, await read(request, RunCreate))
        status, assistant = await self._create(thread_id, body, request.state.owner, user)
        metadata = None
        if body.command is None:
            metadata = assistant_rules.run_metadata(body.metadata, assistant, status.agent)
        return JSONResponse(shapes.run(status, assistant, metadata))

    async def wait_run(self, request: Request) -> Response:
        thread_id = request.path_params["thread_id"]
        body, user = await self._authorize_run(request, thread_id, await read(request, RunCreate))
        status, _ = await self._create(thread_id, body, request.state.owner, user)
        return JSONResponse(await self._settled(status))

    async def wait_stateless(self, request: Request) -> Response:
        body = (await read(request, RunCreate)).model_copy(update={"if_not_exists": "create"})
        body, user = await self._authorize_run(request, None, body)
        # the thread is made by the run's creation, once the request is found good
        status, _ = await self._create(str(uuid.uuid4()), body, request.state.owner, user)
        return JSONResponse(await self._settled(status))

    async def _authorize_run(
        self, request: Request, thread_id: str | None, body: RunCreate
    ) -> tuple[RunCreate, dict[str, Any] | None]:
        """The custom auth's answer to a run's creation on ``thread_id`` (``None``: a
        thread of its own): the body with the metadata its handler gave the run, and the
        caller as the run's graph gets it; 404 for a thread its filter hides."""
        if self.auth is None:
            return body, None
        asked: dict[str, Any] = {
            "thread_id": thread_id,
            "assistant_id": body.assistant_id,
            "metadata": dict(body.metadata or {}),
            "multitask_strategy": body.multitask_strategy,
            "if_not_exists": body.if_not_exists,
            "after_seconds": body.after_seconds,
            "kwargs": {"input": body.input, "command": body.command, "config": body.config},
        }
        filters = await authorize(request, "threads", "create_run", asked)
        if thread_id is not None:
            await self.check_thread(thread_id, filters)
        if body.command is not None:
            return body, None  # an answer goes on with its run's options, and its caller
        metadata = asked.get("metadata") or body.metadata
        return body.model_copy(update={"metadata": metadata}), request.state.caller.configurable()

    async def _create(
        self,
        thread_id: str,
        body: RunCreate,
        owner: str | None = None,
        user: dict[str, Any] | None = None,
        live: bool = False,
    ) -> tuple[RunStatus, str]:
        """A new run on the thread (made for ``owner`` if it does not exist and the body
        says to), or an answer to the interrupt its run waits on. ``user``: the custom
        auth's caller, as the run's configurable gives it to the graph; ``live``: a stream
        asks for its live events, which are then logged (as for ``stream_resumable``)."""
        given = [k for k in UNSUPPORTED if getattr(body, k) not in (None, {}, [], False)]
        if given:
            raise HttpError(
                422, f"Waystone does not support {', '.join(given)} on a run yet; leave it out"
            )
        body = await self._resumed_at_head(thread_id, body)
        strategy = body.multitask_strategy or "enqueue"  # the reference's default
        assistant = await run_in_threadpool(assistants.find, self, body.assistant_id, owner)
        graph_id = assistant.graph_id
        if_not_exists = body.if_not_exists or "reject"
        command, run_input = body.command, body.input
        options = self._options(body)
        forks = options is not None and options.checkpoint_id is not None
        if forks and not self.rt.is_graph(graph_id):
            raise HttpError(422, f"{graph_id} is an agent of the preset: its runs cannot fork")
        if command is None:
            options = assistant_rules.run_options(assistant, options)
        if user:
            base = options or RunOptions()
            options = replace(base, configurable={**base.configurable, **user})
        webhook = body.webhook
        # a run made to be joined (useStream's create-then-join) logs what its stream asks
        asked = [body.stream_mode] if isinstance(body.stream_mode, str) else body.stream_mode
        logged = live or body.stream_resumable is True or bool(set(asked or ()) & set(LIVE_MODES))
        # the thread's metadata names its graph, as the reference's (threads.search finds it)
        tags = {"graph_id": graph_id, "assistant_id": assistant.assistant_id}

        def create() -> RunStatus:
            url = None if webhook is None else self.webhooks.check(webhook)
            hooked = options if url is None else replace(options or RunOptions(), webhook=url)
            if logged:  # kept as it is created: its worker logs its first events too
                hooked = replace(hooked or RunOptions(), stream_log=True)
            found = self._found(thread_id)
            if found is None:
                if if_not_exists != "create" or forks:
                    raise HttpError(404, f"thread {thread_id!r} not found")
                if command is not None:
                    raise HttpError(
                        409, f"thread {thread_id} has no run, so no interrupt to resume"
                    )
                self.rt.check_run(graph_id, run_input, hooked)  # before any row
                tagged = {**tags, **(body.metadata or {})}
                self.rt.create_thread(
                    thread_id, metadata=tagged, if_exists="do_nothing", owner=owner
                )
            if command is not None:
                made = self._resume(thread_id, command, url, logged)
            elif run_input is None and not forks and self._at_breakpoint(thread_id):
                made = self._resume(thread_id, {"resume": None}, url, logged)  # as the reference
            else:
                made = self.rt.start_on_thread(
                    graph_id,
                    run_input,
                    thread_id=thread_id,
                    multitask_strategy=strategy,
                    options=hooked,
                )
            if found is not None and any(found.metadata.get(k) != v for k, v in tags.items()):
                self.rt.update_thread(thread_id, tags)
            return made

        status = await run_in_threadpool(create)
        return status, assistant.assistant_id

    @staticmethod
    def _options(body: RunCreate) -> RunOptions | None:
        try:
            options = run_options.from_body(body)
        except run_options.Unsupported as exc:
            raise HttpError(422, str(exc)) from None
        if options is not None and body.command is not None:
            raise HttpError(
                422,
                f"a resume goes on with its run's options: leave "
                f"{', '.join(run_options.given(body))} out",
            )
        return options

    def _at_breakpoint(self, thread_id: str) -> bool:
        """Whether the thread's run waits at a breakpoint it was created with."""
        if self.rt.thread(thread_id).state != "waiting":
            return False
        status = self.rt.status(thread_id)
        stopped = status.state == "waiting" and status.waiting_for == RESUME
        return stopped and breakpoints.only_breakpoints(status.interrupts)

    def _exists(self, thread_id: str) -> bool:
        return self._found(thread_id) is not None

    def _found(self, thread_id: str) -> Thread | None:
        try:
            return self.rt.thread(thread_id)
        except UnknownThread:
            return None

    def _resume(
        self, thread_id: str, command: dict[str, Any], webhook: str | None, logged: bool = False
    ) -> RunStatus:
        if set(command) - {"resume"} or "resume" not in command:
            raise HttpError(422, 'Waystone answers a command of {"resume": value} only, for now')
        if self.rt.thread(thread_id).state is None:
            raise HttpError(409, f"thread {thread_id} has no run, so no interrupt to resume")
        current = self.rt.status(thread_id)
        if current.state != "waiting" or current.waiting_for != RESUME:
            raise HttpError(409, f"thread {thread_id}'s run waits on no interrupt to resume")
        hook = None
        if logged and current.run_number is not None:  # before the answer wakes a worker
            self.rt.log_stream(thread_id, current.run_number)
        if webhook is not None:  # for the run's next stop
            assert current.run_number is not None  # a waiting run has its number
            hook = self.rt.webhooks.arm(thread_id, current.run_number, webhook, resuming=True)
        try:
            self._answer(thread_id, command["resume"], [i["id"] for i in current.interrupts])
        except BaseException:
            if hook is not None:
                self.rt.webhooks.disarm(hook)
            raise
        return self.rt.status(thread_id)

    def _answer(self, thread_id: str, value: Any, pending: list[str]) -> None:
        if isinstance(value, dict) and value and set(value) <= set(pending):
            for interrupt_id, answer in value.items():  # one value per interrupt, by id
                self.rt.resume(thread_id, answer, interrupt_id=interrupt_id, by="api")
        else:
            self.rt.resume(thread_id, value, by="api")

    async def _settled(self, started: RunStatus) -> dict[str, Any]:
        """The thread's values once the run has waited or ended (see :mod:`follow`)."""
        status = await follow.until_settled(self.rt, self.follower, started)
        snapshot = await run_in_threadpool(self._snapshot, started.thread_id, status.agent)
        return shapes.output(snapshot)

    # -- streams ---------------------------------------------------------------------------

    async def stream_run(self, request: Request) -> Response:
        thread_id, owner = request.path_params["thread_id"], request.state.owner
        body, user = await self._authorize_run(request, thread_id, await read(request, RunCreate))
        return await self._stream_new(thread_id, body, owner, user)

    async def stream_stateless(self, request: Request) -> Response:
        body = (await read(request, RunCreate)).model_copy(update={"if_not_exists": "create"})
        body, user = await self._authorize_run(request, None, body)
        return await self._stream_new(str(uuid.uuid4()), body, request.state.owner, user)

    async def _stream_new(
        self,
        thread_id: str,
        body: RunCreate,
        owner: str | None = None,
        user: dict[str, Any] | None = None,
    ) -> Response:
        modes = _modes(body.stream_mode)
        subgraphs = body.stream_subgraphs is True  # a stream's own: not refused as a run's
        body = body.model_copy(update={"stream_subgraphs": None})
        body = await self._resumed_at_head(thread_id, body)
        options = self._options(body)  # refused here before anything is read
        forks = options is not None and options.checkpoint_id is not None
        resuming = (body.command is not None or body.input is None) and not forks
        # a resume streams from where the run stopped: what it sent up to there is old
        start = await run_in_threadpool(self._latest, thread_id) if resuming else None
        live = bool(set(modes) & set(LIVE_MODES))
        status, _ = await self._create(thread_id, body, owner, user, live=live)
        after = stream.resumed_from(start) if start is not None else None
        answered = {i["id"] for i in status.interrupts}
        cancel = body.on_disconnect == "cancel"
        return self._sse(status, modes, after, answered, subgraphs, cancel=cancel)

    async def join_stream(self, request: Request) -> Response:
        p = request.path_params
        status, _ = await run_in_threadpool(self._run, p["thread_id"], p["run_id"])
        if status is None:
            raise HttpError(409, f"run {p['run_id']} ended before the thread's current one")
        asked = _queried_modes(request.query_params.getlist("stream_mode"))
        modes = _modes(asked or list(stream.JOINED))
        last = request.headers.get("last-event-id") or None
        if set(modes) & set(LIVE_MODES) and status.run_number is not None:
            # from its next drive, if a worker drives it now (see waystone._streams)
            await run_in_threadpool(self.rt.log_stream, status.thread_id, status.run_number)
        cancel = (request.query_params.get("cancel_on_disconnect") or "").lower() in ("true", "1")
        return self._sse(status, modes, last, set(), cancel=cancel)

    async def _resumed_at_head(self, thread_id: str, body: RunCreate) -> RunCreate:
        if body.command is None or not (body.checkpoint or body.checkpoint_id):
            return body
        return await run_in_threadpool(self._at_head, thread_id, body)

    def _at_head(self, thread_id: str, body: RunCreate) -> RunCreate:
        """``body`` without its checkpoint when it answers an interrupt and names the
        thread's newest checkpoint, where its run waits (useStream sends the thread's head
        with a resume); any other checkpoint is left for the run's options to refuse."""
        head = self._latest(thread_id)
        named = run_options.checkpoint_of(body)
        if body.command is None or head is None:
            return body
        if named != head.config["configurable"].get("checkpoint_id"):
            return body
        return body.model_copy(update={"checkpoint": None, "checkpoint_id": None})

    def _latest(self, thread_id: str) -> StateSnapshot | None:
        try:
            found = self.rt.thread(thread_id)
        except UnknownThread:
            return None  # the run's creation makes the thread, or refuses the request
        snapshot = self._snapshot(thread_id, found.agent)
        return snapshot if snapshot is not None and snapshot.config else None

    def _sse(
        self,
        status: RunStatus,
        modes: tuple[str, ...],
        after: str | None,
        answered: set[str],
        subgraphs: bool = False,
        *,
        cancel: bool = False,
    ) -> Response:
        """``cancel``: the run is cancelled when the client goes away before its end
        (``on_disconnect: "cancel"``)."""
        thread_id, run_id = status.thread_id, status.run_id
        assert run_id is not None
        path = f"/threads/{thread_id}/runs/{run_id}"
        events = follow.events(self.rt, self.follower, status, modes, after, answered, subgraphs)
        if cancel:
            events = follow.cancelled_on_disconnect(self.rt, status, events)
        return StreamingResponse(
            events,
            media_type="text/event-stream",
            headers={"Location": f"{path}/stream", "Content-Location": path},
        )

    async def thread_stream(self, request: Request) -> Response:
        """The thread's stream across its runs (:mod:`waystone.web.thread_stream`)."""
        thread_id = request.path_params["thread_id"]
        modes = thread_stream.modes_of(request.query_params.get("stream_modes"))
        last = request.headers.get("last-event-id") or None
        await run_in_threadpool(self.rt.thread, thread_id)  # 404 before the stream begins
        latest = await run_in_threadpool(self._latest, thread_id)
        lines = thread_stream.events(self.rt, self.follower, thread_id, modes, last, latest)
        return StreamingResponse(lines, media_type="text/event-stream")

    async def list_runs(self, request: Request) -> Response:
        thread_id = request.path_params["thread_id"]
        page = validated(Paged, dict(request.query_params), "the query", strict=False)

        def runs() -> list[dict[str, Any]]:
            history = self.rt.history(thread_id)
            assistant = shapes.assistant_id(self.rt.thread(thread_id).agent or "")
            metadata = self.rt.run_metadata(thread_id)
            listed = [
                shapes.past_run(thread_id, r, assistant, metadata.get(r["run_id"]))
                for r in history["runs"]
                if r.get("stopped_as") != "rollback"  # the reference deletes them
            ]
            listed += [
                shapes.run(q, assistant, metadata.get(q.run_id or ""))
                for q in self.rt.pending_runs(thread_id)
            ]
            listed.reverse()  # the latest first, as the reference lists them
            return listed[page.window]

        return JSONResponse(await run_in_threadpool(runs))

    def _run(self, thread_id: str, run_id: str) -> tuple[RunStatus | None, dict[str, Any]]:
        """The thread's run ``run_id``: its status when it is the current run, and its
        shape; 404 when the thread has no such run."""
        listed = f"GET /threads/{thread_id}/runs lists its runs"
        try:
            status = self.rt.status(thread_id)
        except UnknownThread:
            self.rt.thread(thread_id)  # a thread that does not exist is 404 as such
            raise UnknownRun(thread_id, run_id, listed) from None
        assistant = shapes.assistant_id(status.agent)
        metadata = self.rt.run_metadata(thread_id).get(run_id)
        if status.run_id == run_id and not self._rolled_back(status):
            return status, shapes.run(status, assistant, metadata)
        for queued in self.rt.pending_runs(thread_id):
            if queued.run_id == run_id:
                return queued, shapes.run(queued, assistant, metadata)
        for past in self.rt.history(thread_id)["runs"]:
            if past["run_id"] == run_id and past.get("stopped_as") != "rollback":
                return None, shapes.past_run(thread_id, past, assistant, metadata)
        raise UnknownRun(thread_id, run_id, listed)

    def _rolled_back(self, status: RunStatus) -> bool:
        """Whether the thread's current run was cancelled with ``action=rollback``: gone
        from the API, as the reference deletes it."""
        if status.state != "failed":
            return False
        runs = self.rt.history(status.thread_id)["runs"]
        return any(r["run_id"] == status.run_id and r.get("stopped_as") == "rollback" for r in runs)

    async def get_run(self, request: Request) -> Response:
        p = request.path_params
        _, shown = await run_in_threadpool(self._run, p["thread_id"], p["run_id"])
        return JSONResponse(shown)

    async def join_run(self, request: Request) -> Response:
        p = request.path_params
        status, _ = await run_in_threadpool(self._run, p["thread_id"], p["run_id"])
        if status is None:  # an earlier run: it ended before the current one began
            agent = (await run_in_threadpool(self.rt.thread, p["thread_id"])).agent
            snapshot = await run_in_threadpool(self._snapshot, p["thread_id"], agent)
            return JSONResponse(shapes.output(snapshot))
        # it waits out the interrupts answered already (a resume on its way), not the others
        answered = await run_in_threadpool(self.rt.answered_interrupts, p["thread_id"])
        pending = [i for i in status.interrupts if i["id"] in answered]
        return JSONResponse(await self._settled(replace(status, interrupts=pending)))

    async def cancel_run(self, request: Request) -> Response:
        p = request.path_params
        action = _action(request)
        await run_in_threadpool(self._cancel, p["thread_id"], p["run_id"], action)
        return Response(status_code=204)

    async def cancel_runs(self, request: Request) -> Response:
        """``POST /runs/cancel``: the thread's runs ``run_ids``, each as its own cancel."""
        body = await read(request, RunsCancel)
        action = _action(request)
        if body.status is not None:
            raise HttpError(422, "cancelling runs by status is not supported yet: name them")
        if body.thread_id is None or not body.run_ids:
            raise HttpError(422, "give the thread_id and the run_ids of the runs to cancel")
        check_identifier("thread id", body.thread_id)
        owner = request.state.owner
        if owner is not None:
            await run_in_threadpool(self.rt.check_owner, body.thread_id, owner)
        for run_id in body.run_ids:
            await run_in_threadpool(self._cancel, body.thread_id, run_id, action)
        return Response(status_code=204)

    def _cancel(self, thread_id: str, run_id: str, action: str) -> None:
        status, _ = self._run(thread_id, run_id)
        if status is None or status.state in shapes.SETTLED:
            raise HttpError(409, f"run {run_id} has ended; nothing to cancel")
        if self.rt.status(thread_id).run_id != run_id:
            raise HttpError(422, "cancelling a queued run is not supported yet")
        reason = f"{action} requested through the API"
        self.rt.cancel(thread_id, by="api", reason=reason, roll_back=action == "rollback")

    # -- for what is built on the API (MCP) --------------------------------------------------

    async def admit(self, request: Request) -> None:
        """Who ``request`` is, as a route that may change things admits it: its owner, or
        the custom auth's caller (401 or 403 when refused)."""
        if self.auth is not None:
            await self._admit(request, self.auth)
        else:
            request.state.owner = self._caller(request, True)

    async def run_stateless(
        self, request: Request, body: RunCreate
    ) -> tuple[RunStatus, dict[str, Any]]:
        """A run on a thread of its own for the caller ``request`` admitted, as
        ``POST /runs/wait`` makes one: its status once it waits or ends, and its output."""
        thread_id = str(uuid.uuid4())
        body, user = await self._authorize_run(request, None, body)
        status, _ = await self._create(thread_id, body, request.state.owner, user)
        return status, await self._settled(status)


def _check_path(request: Request) -> None:
    """A thread id in the path is held to the rule of every thread id (printable, short):
    one that cannot be stored is 400 before it is looked up."""
    thread_id = request.path_params.get("thread_id")
    if thread_id is not None:
        check_identifier("thread id", thread_id)


def _action(request: Request) -> str:
    """What a cancel does (``?action=``): ``interrupt`` (the default) or ``rollback``."""
    action = request.query_params.get("action", "interrupt")
    if action not in ("interrupt", "rollback"):
        raise HttpError(422, f"action must be interrupt or rollback, not {action!r}")
    return action


def _modes(given: Any) -> tuple[str, ...]:
    """The stream modes asked for (``values`` by default, as the reference's)."""
    modes = [given] if isinstance(given, str) else list(given or ["values"])
    for mode in modes:
        if mode in NOT_COMMITTED:
            raise HttpError(422, f"stream_mode {mode} is not supported: {NOT_COMMITTED[mode]}")
    supported = (*stream.MODES, *LIVE_MODES)
    wrong = [m for m in modes if m not in supported]
    if wrong:
        raise HttpError(
            422,
            f"stream_mode {', '.join(map(str, wrong))} is not supported yet "
            f"(supported: {', '.join(dict.fromkeys(supported))})",
        )
    return tuple(modes)


def _queried_modes(given: list[str]) -> list[str]:
    """The stream modes of a query: ``stream_mode`` repeated (the Python SDK's), or one
    JSON array (the JavaScript SDK's ``joinStream``)."""
    modes: list[str] = []
    for value in given:
        if value.startswith("["):
            try:
                parsed = json.loads(value)
            except ValueError:
                raise HttpError(422, f"stream_mode {value} is not a JSON array") from None
            modes += [str(m) for m in parsed] if isinstance(parsed, list) else [value]
        elif value:
            modes.append(value)
    return modes
