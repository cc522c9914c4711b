"""Following a run from the server while a worker drives it: a wait, or a stream of its
events, reads the run's row (and, for a stream, its newest checkpoint) every ``POLL_S``
until the run waits or ends. For a resume, until the interrupts it answered are behind
it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool

from waystone.web import shapes, stream

if TYPE_CHECKING:
    from waystone.runtime import RunStatus, Runtime

POLL_S = 0.05


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


async def until_settled(rt: Runtime, started: RunStatus) -> RunStatus:
    """The thread's status once the run ``started`` shows has waited or ended."""
    answered = {i["id"] for i in started.interrupts}
    while True:
        status = await run_in_threadpool(rt.status, started.thread_id)
        if settled(status, started.run_id, answered, started.run_number):
            return status
        await asyncio.sleep(POLL_S)


async def events(
    rt: Runtime,
    started: RunStatus,
    modes: tuple[str, ...],
    after: str | None,
    answered: set[str],
) -> AsyncIterator[str]:
    """The run's events after ``after`` as server-sent events, as its checkpoints commit,
    until it waits or ends (see :mod:`waystone.web.stream`); ``answered`` as for
    :func:`settled`."""
    thread_id, run_id = started.thread_id, started.run_id
    # a thread of the preset holds one run: every checkpoint of it is the run's
    run_filter = run_id if rt.is_graph(started.agent) else None
    meta = {"graph_id": started.agent, "assistant_id": shapes.assistant_id(started.agent)}
    yield sse_line("metadata", {"run_id": run_id, "attempt": 1})
    seen: tuple[Any, ...] | None = None
    while True:
        status = await run_in_threadpool(rt.status, thread_id)
        done = settled(status, run_id, answered, started.run_number)
        mark = (await run_in_threadpool(_newest_checkpoint, rt, thread_id), done)
        if mark != seen:  # a new checkpoint, or the run settled: make the events again
            seen = mark
            waiting = done and status.state == "waiting"
            made = await run_in_threadpool(
                _run_events, rt, started.agent, thread_id, run_filter, modes, waiting, meta
            )
            for event in stream.after(made, after):
                yield sse_line(event.event, event.data, event.id)
                after = event.id
        if done:
            if status.run_id == run_id and status.state in ("failed", "needs-human"):
                yield sse_line("error", {"error": status.state, "message": status.reason})
            return
        await asyncio.sleep(POLL_S)


def sse_line(event: str, data: Any, event_id: str | None = None) -> str:
    head = f"event: {event}\n"
    lines = "".join(f"data: {line}\n" for line in json.dumps(data, default=str).splitlines())
    return head + lines + (f"id: {event_id}\n" if event_id else "") + "\n"


def _run_events(
    rt: Runtime,
    agent: str,
    thread_id: str,
    run_filter: str | None,
    modes: tuple[str, ...],
    waiting: bool,
    meta: dict[str, Any],
) -> list[stream.Event]:
    history = rt.graph(agent).get_state_history(rt.config(thread_id))
    checkpoints = stream.run_checkpoints(iter(history), run_filter)
    return stream.events(checkpoints, modes, waiting=waiting, meta=meta)


def _newest_checkpoint(rt: Runtime, thread_id: str) -> str | None:
    with rt.connection() as conn:
        row = conn.execute(
            "SELECT max(checkpoint_id) AS newest FROM public.checkpoints "
            "WHERE thread_id = %s AND checkpoint_ns = ''",
            (thread_id,),
        ).fetchone()
    return row["newest"] if row else None
