"""A thread's events as the thread-centric protocol tells them
(:mod:`waystone.web.protocol`): its runs' streams, one phase after the other (a run from
its start, then each resume of it, then the next run), each made by
:func:`waystone.web.follow.events` (what Postgres holds, so from any server) and told by
:mod:`waystone.web.protocol_events`, between the run's ``lifecycle`` events."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool

from waystone.errors import UnknownThread
from waystone.web import follow, protocol_events, stream
from waystone.web.protocol_events import Filter, Messages

if TYPE_CHECKING:
    from waystone.runtime import RunStatus, Runtime
    from waystone.web.follower import Follower

HEARTBEAT_S = 5.0  # an idle SSE stream says it is alive, as often as the reference
# what a run's protocol events are made from, of the modes its stream has
WANTED = ("values", "updates", "messages-tuple", "custom", "checkpoints", "tasks")


class ThreadEvents:
    """The events of a thread, for as long as they are read: ``events(thread_id)``."""

    def __init__(self, rt: Runtime, follower: Follower) -> None:
        self.rt, self.follower = rt, follower

    def status(self, thread_id: str) -> RunStatus | None:
        """The thread's current run (None: the thread has none, or does not exist yet)."""
        try:
            return self.rt.status(thread_id)
        except UnknownThread:
            return None

    async def __call__(self, thread_id: str) -> AsyncIterator[dict[str, Any]]:
        """The thread's events, numbered (``seq``) from 1: its current run's from its start,
        then each run's and each resume's as they come, for as long as it is read."""
        seq = 0
        run_id: str | None = None  # the run streamed last
        last: str | None = None  # the id of the last event of it streamed
        waited: frozenset[str] | None = None  # the interrupts it stopped on, if it did
        async with self.follower.follow(thread_id) as changed:
            while True:
                await changed.wait()
                changed.clear()
                status = await run_in_threadpool(self.status, thread_id)
                now = next_phase(status, run_id, last, waited)
                if status is None or now is None:
                    continue
                run_id, answered = status.run_id, waited if now != "start" else None
                start = None if now == "start" else last
                async for made, reached in self._run_events(status, now, start, answered):
                    seq += 1
                    last = reached
                    yield {**made, "seq": seq}
                ended = await run_in_threadpool(self.status, thread_id)
                waited = None
                if (
                    ended is not None
                    and ended.run_id == run_id
                    and shown(ended)[0] == "interrupted"
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
            self.rt, self.follower, status, modes, after, set(answered or ()), True
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
        ended = await run_in_threadpool(self.status, status.thread_id)
        said, error = ("completed", None)
        if ended is not None and ended.run_id == run_id:
            said, error = shown(ended)
        if said == "interrupted" and ended is not None:
            for interrupt in ended.interrupts:
                yield protocol_events.input_requested(run_id, interrupt), after
        yield protocol_events.lifecycle(run_id, phase, said, graph, error), after


def next_phase(
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


def shown(status: RunStatus) -> tuple[str, str | None]:
    """The protocol's status of a run, and its error."""
    if status.state == "waiting":
        return "interrupted", None
    if status.state == "done":
        return "completed", None
    if status.state in ("failed", "needs-human"):
        return "failed", status.reason
    return "running", None


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


async def sse(
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
