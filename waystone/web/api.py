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
from waystone._runtime.options import RunOptions
from waystone._runtime.rollback import branches
from waystone._runtime.threads import SEARCH_LIMIT
from waystone._webhooks.policy import Policy
from waystone.errors import UnknownRun, UnknownThread
from waystone.web import follow, run_options, shapes, stream, thread_stream
from waystone.web.bodies import (
    AssistantSearch,
    History,
    RunCreate,
    RunsCancel,
    ThreadCreate,
    ThreadSearch,
)
from waystone.web.follower import Follower
from waystone.web.inputs import Paged, read, validated
from waystone.web.owners import Tokens
from waystone.web.replies import HttpError

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
    "custom": "what a node writes with get_stream_writer() is not saved with its step, and "
    "Waystone streams only what is committed; put what the client needs in the graph's state "
    "(it streams as values and updates)",
    "events": "LangChain's callback events are not saved with a step, and Waystone streams "
    "only what is committed; use updates, values, messages-tuple or debug",
    "messages": "a model's tokens are not saved as they come, and Waystone streams only what "
    "is committed; use messages-tuple (each message once its step commits)",
}


class Api:
    """The routes, on one runtime. ``tokens``: what a request must carry (``x-api-key``,
    or ``Authorization: Bearer``), the operator's or an owner's (a bare string: the
    operator's); without any, the API only reads. An owner's request finds that owner's
    threads only (:meth:`Runtime.thread`'s rule): any other is 404, as if it did not
    exist."""

    def __init__(self, rt: Runtime, tokens: Tokens | str | None) -> None:
        self.rt = rt
        self.tokens = tokens if isinstance(tokens, Tokens) else Tokens(operator=tokens)
        self.since = datetime.now(UTC)
        self._creating = (self.create_run, self.wait_run, self.stream_run)
        self.webhooks = Policy.of(rt.settings)  # which webhook URLs a run may name
        self.follower = Follower(rt)

    def routes(self) -> list[Route]:
        """Its own routes; the crons' and the thread edits' are in their modules."""
        r, w = self.reads, self.changes
        return [
            Route("/ok", self.ok, methods=["GET"]),  # a health check carries no token
            Route("/info", r(self.info), methods=["GET"]),
            Route("/assistants/search", r(self.search_assistants), methods=["POST"]),
            Route("/assistants/{assistant_id}", r(self.get_assistant), methods=["GET"]),
            Route("/assistants/{assistant_id}/graph", r(self.assistant_graph), methods=["GET"]),
            Route("/assistants/{assistant_id}/schemas", r(self.assistant_schemas), methods=["GET"]),
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

    def graph_id(self, assistant: str) -> str:
        """The graph an assistant id (or a graph's name) names; 404 if none."""
        names = self.rt.names()
        if assistant in names:
            return assistant
        for name in names:
            if shapes.assistant_id(name) == assistant:
                return name
        raise HttpError(404, f"assistant {assistant!r} not found (graphs: {', '.join(names)})")

    async def search_assistants(self, request: Request) -> Response:
        body = await read(request, AssistantSearch)
        found = [
            shapes.assistant(n, self.since)
            for n in self.rt.names()
            if body.graph_id in (None, n) and body.name in (None, n)
        ]
        return JSONResponse(found[body.window])

    async def get_assistant(self, request: Request) -> Response:
        graph_id = self.graph_id(request.path_params["assistant_id"])
        return JSONResponse(shapes.assistant(graph_id, self.since))

    async def assistant_graph(self, request: Request) -> Response:
        graph_id = self.graph_id(request.path_params["assistant_id"])
        xray = request.query_params.get("xray", "false").lower() in ("1", "true")
        graph = await run_in_threadpool(self.rt.graph, graph_id)
        drawn = await run_in_threadpool(lambda: graph.get_graph(xray=xray).to_json())
        return JSONResponse(shapes.jsonable(drawn))

    async def assistant_schemas(self, request: Request) -> Response:
        graph_id = self.graph_id(request.path_params["assistant_id"])
        graph = await run_in_threadpool(self.rt.graph, graph_id)
        return JSONResponse(
            {
                "graph_id": graph_id,
                "input_schema": graph.get_input_jsonschema(),
                "output_schema": graph.get_output_jsonschema(),
                "state_schema": graph.get_output_jsonschema(),
                "config_schema": graph.get_config_jsonschema(),
                "context_schema": graph.get_context_jsonschema(),
            }
        )

    # -- threads ---------------------------------------------------------------------------

    async def create_thread(self, request: Request) -> Response:
        body = await read(request, ThreadCreate)
        made = await run_in_threadpool(
            lambda: self.rt.create_thread(
                body.thread_id,
                metadata=body.metadata,
                if_exists=body.if_exists or "raise",
                owner=request.state.owner,
            )
        )
        return JSONResponse(await run_in_threadpool(self.shown_thread, made.thread_id))

    async def get_thread(self, request: Request) -> Response:
        thread_id = request.path_params["thread_id"]
        return JSONResponse(await run_in_threadpool(self.shown_thread, thread_id))

    async def search_threads(self, request: Request) -> Response:
        body = await read(request, ThreadSearch)
        limit, offset, metadata = max(body.limit, 1), body.offset, body.metadata
        owner = request.state.owner

        def search() -> list[dict[str, Any]]:
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
        body = await read(request, RunCreate)
        status, assistant = await self._create(thread_id, body, request.state.owner)
        metadata = body.metadata if body.command is None else None
        return JSONResponse(shapes.run(status, assistant, metadata))

    async def wait_run(self, request: Request) -> Response:
        thread_id = request.path_params["thread_id"]
        body = await read(request, RunCreate)
        status, _ = await self._create(thread_id, body, request.state.owner)
        return JSONResponse(await self._settled(status))

    async def wait_stateless(self, request: Request) -> Response:
        body = (await read(request, RunCreate)).model_copy(update={"if_not_exists": "create"})
        # the thread is made by the run's creation, once the request is found good
        status, _ = await self._create(str(uuid.uuid4()), body, request.state.owner)
        return JSONResponse(await self._settled(status))

    async def _create(
        self, thread_id: str, body: RunCreate, owner: str | None = None
    ) -> tuple[RunStatus, str]:
        """A new run on the thread (made for ``owner`` if it does not exist and the body
        says to), or an answer to the interrupt its run waits on."""
        given = [k for k in UNSUPPORTED if getattr(body, k) not in (None, {}, [], False)]
        if given:
            raise HttpError(
                422, f"Waystone does not support {', '.join(given)} on a run yet; leave it out"
            )
        strategy = body.multitask_strategy or "enqueue"  # the reference's default
        graph_id = self.graph_id(body.assistant_id)
        if_not_exists = body.if_not_exists or "reject"
        command, run_input = body.command, body.input
        options = self._options(body)
        forks = options is not None and options.checkpoint_id is not None
        if forks and not self.rt.is_graph(graph_id):
            raise HttpError(422, f"{graph_id} is an agent of the preset: its runs cannot fork")
        webhook = body.webhook
        # the thread's metadata names its graph, as the reference's (threads.search finds it)
        tags = {"graph_id": graph_id, "assistant_id": shapes.assistant_id(graph_id)}

        def create() -> RunStatus:
            url = None if webhook is None else self.webhooks.check(webhook)
            hooked = options if url is None else replace(options or RunOptions(), webhook=url)
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
                made = self._resume(thread_id, command, url)
            elif run_input is None and not forks and self._at_breakpoint(thread_id):
                made = self._resume(thread_id, {"resume": None}, url)  # as the reference
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
        return status, tags["assistant_id"]

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

    def _resume(self, thread_id: str, command: dict[str, Any], webhook: str | None) -> RunStatus:
        if set(command) - {"resume"} or "resume" not in command:
            raise HttpError(422, 'Waystone answers a command of {"resume": value} only, for now')
        if self.rt.thread(thread_id).state is None:
            raise HttpError(409, f"thread {thread_id} has no run, so no interrupt to resume")
        current = self.rt.status(thread_id)
        if current.state != "waiting" or current.waiting_for != RESUME:
            raise HttpError(409, f"thread {thread_id}'s run waits on no interrupt to resume")
        hook = None
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
        return await self._stream_new(thread_id, await read(request, RunCreate), owner)

    async def stream_stateless(self, request: Request) -> Response:
        body = (await read(request, RunCreate)).model_copy(update={"if_not_exists": "create"})
        return await self._stream_new(str(uuid.uuid4()), body, request.state.owner)

    async def _stream_new(
        self, thread_id: str, body: RunCreate, owner: str | None = None
    ) -> Response:
        modes = _modes(body.stream_mode)
        subgraphs = body.stream_subgraphs is True  # a stream's own: not refused as a run's
        body = body.model_copy(update={"stream_subgraphs": None})
        options = self._options(body)  # refused here before anything is read
        forks = options is not None and options.checkpoint_id is not None
        resuming = (body.command is not None or body.input is None) and not forks
        # a resume streams from where the run stopped: what it sent up to there is old
        start = await run_in_threadpool(self._latest, thread_id) if resuming else None
        status, _ = await self._create(thread_id, body, owner)
        after = stream.resumed_from(start) if start is not None else None
        answered = {i["id"] for i in status.interrupts}
        return self._sse(status, modes, after, answered, subgraphs)

    async def join_stream(self, request: Request) -> Response:
        p = request.path_params
        status, _ = await run_in_threadpool(self._run, p["thread_id"], p["run_id"])
        if status is None:
            raise HttpError(409, f"run {p['run_id']} ended before the thread's current one")
        asked = [m for m in request.query_params.getlist("stream_mode") if m]
        modes = _modes(asked or list(stream.JOINED))
        last = request.headers.get("last-event-id") or None
        return self._sse(status, modes, last, set())

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
    ) -> Response:
        thread_id, run_id = status.thread_id, status.run_id
        assert run_id is not None
        path = f"/threads/{thread_id}/runs/{run_id}"
        return StreamingResponse(
            follow.events(self.rt, self.follower, status, modes, after, answered, subgraphs),
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
    wrong = [m for m in modes if m not in stream.MODES]
    if wrong:
        raise HttpError(
            422,
            f"stream_mode {', '.join(map(str, wrong))} is not supported yet "
            f"(supported: {', '.join(stream.MODES)})",
        )
    return tuple(modes)
