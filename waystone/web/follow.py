"""Following a run from the server while a worker drives it: a wait, or a stream of its
events, reads the run again each time the process's :class:`~waystone.web.follower.Follower`
sees it move, until it waits or ends (for a resume, until the interrupts it answered are
behind it). A stream makes the events of the checkpoints committed since it last looked,
never the whole history again."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import anyio
from starlette.concurrency import run_in_threadpool

from waystone.web import live, shapes, stream
from waystone.web.checkpoints import RunCheckpoints
from waystone.web.follower import Follower

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

    from waystone.runtime import RunStatus, Runtime


def settled(
    status: RunStatus, run_id: str | None, answered: set[str], number: int | None = None
) -> bool:
    """Whether run ``run_id`` (number ``number`` of its thread) has waited or ended, as
    ``status`` (its thread's current run) shows it: a run queued behind the current one
    has not; ``answered``: the interrupts a resume answered, still pending until the run
    goes on."""
    if number is not None and status.run_number is not None and status.run_number < number:
        return False
    if status.run_id != run_id or status.state in shapes.SETTLED:
        return True
    return status.state == "waiting" and not answered & {i["id"] for i in status.interrupts}


async def until_settled(rt: Runtime, follower: Follower, started: RunStatus) -> RunStatus:
    """The thread's status once the run ``started`` shows has waited or ended."""
    answered = {i["id"] for i in started.interrupts}
    async with follower.follow(started.thread_id) as changed:
        while True:
            await changed.wait()
            changed.clear()
            status = await run_in_threadpool(rt.status, started.thread_id)
            if settled(status, started.run_id, answered, started.run_number):
                return status


async def events(
    rt: Runtime,
    follower: Follower,
    started: RunStatus,
    modes: tuple[str, ...],
    after: str | None,
    answered: set[str],
    subgraphs: bool = False,
) -> AsyncIterator[str]:
    """The run's events after ``after`` as server-sent events, as its checkpoints commit
    (see :mod:`waystone.web.stream`) merged with its live events when it asks for a live
    mode (see :mod:`waystone.web.live`), until it waits or ends; ``answered`` as for
    :func:`settled`; ``subgraphs``: with the events of its subgraphs."""
    thread_id, run_id = started.thread_id, started.run_id
    meta = {"graph_id": started.agent, "assistant_id": shapes.assistant_id(started.agent)}
    # a thread of the preset holds one run: every checkpoint of it is the run's
    run_filter = run_id if rt.is_graph(started.agent) else None
    reader = RunCheckpoints(rt, started.agent, thread_id, run_filter, subgraphs)
    maker = stream.RunMaker(modes, meta)
    merge = live.Merge(modes, subgraphs)
    logged = run_id if set(modes) & set(live.LIVE_MODES) else None
    yield sse_line("metadata", {"run_id": run_id, "attempt": 1})
    async with follower.follow(thread_id, logged) as changed:
        while True:
            await changed.wait()
            changed.clear()
            status = await run_in_threadpool(rt.status, thread_id)
            done = settled(status, run_id, answered, started.run_number)
            if logged is not None:  # after the status: once it is done, the log is whole
                token, rows = await run_in_threadpool(
                    rt.stream_log, thread_id, logged, merge.read_to
                )
                merge.logged(token, rows)
            again, new = await run_in_threadpool(reader.newer, maker.last(), done)
            merge.committed(maker.add(again, new, stopped=done and status.state == "waiting"))
            root = maker.last().get("")
            ready = merge.ready(_id(root) if root is not None else None, done)
            for event in stream.after(ready, after):
                yield sse_line(event.event, event.data, event.id)
                after = event.id
            if done:
                if status.run_id == run_id and status.state in ("failed", "needs-human"):
                    yield sse_line("error", {"error": status.state, "message": status.reason})
                return


async def cancelled_on_disconnect(
    rt: Runtime, started: RunStatus, events: AsyncIterator[str]
) -> AsyncIterator[str]:
    """``events``; the run is cancelled if its client goes away before they end."""
    ended = False
    try:
        async for line in events:
            yield line
        ended = True
    finally:
        if not ended:  # shielded: the request's scope is being cancelled
            with anyio.CancelScope(shield=True):
                await run_in_threadpool(_cancel, rt, started)


def _cancel(rt: Runtime, started: RunStatus) -> None:
    from waystone.errors import TransitionNotAllowed

    try:
        if rt.status(started.thread_id).run_id == started.run_id:
            rt.cancel(started.thread_id, by="api", reason="its stream's client went away")
    except TransitionNotAllowed:
        pass  # it ended meanwhile


def _id(snap: StateSnapshot) -> str:
    return str(snap.config["configurable"]["checkpoint_id"])


def sse_line(event: str, data: Any, event_id: str | None = None) -> str:
    head = f"event: {event}\n"
    lines = "".join(f"data: {line}\n" for line in json.dumps(data, default=str).splitlines())
    return head + lines + (f"id: {event_id}\n" if event_id else "") + "\n"
