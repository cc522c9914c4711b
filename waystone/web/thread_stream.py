"""``GET /threads/{id}/stream``: a thread's stream across its runs, as the reference's
``threads.join_stream``: the events of each of its runs as it runs (the one running when
the client joins from its start, each later one, and a run that waited and goes on),
until the client goes. A run's events are those of its own stream
(:func:`waystone.web.follow.events`, in the modes a join streams). Their ids follow the
thread's checkpoints, which only grow, so one ``Last-Event-ID`` says where the client is
in the whole thread: what it missed of that run and every run after is sent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from starlette.concurrency import run_in_threadpool

from waystone.errors import UnknownThread
from waystone.web import follow, stream
from waystone.web.follower import Follower
from waystone.web.replies import HttpError

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

    from waystone.runtime import RunStatus, Runtime

# The reference's modes of a thread's stream: its runs' events, or their metadata only.
MODES = ("run_modes", "lifecycle")
MOVING = ("queued", "running")


def modes_of(given: str | None) -> tuple[str, ...]:
    """``stream_modes`` of the query (one, or several comma-separated; by default
    ``run_modes``, as the reference's); 422 for one Waystone does not stream."""
    asked = [m.strip() for m in (given or "run_modes").split(",") if m.strip()]
    if "state_update" in asked:
        raise HttpError(422, "stream_modes state_update is not supported yet: use run_modes")
    wrong = [m for m in asked if m not in MODES]
    if wrong:
        raise HttpError(422, f"Invalid stream mode: {', '.join(wrong)} (give {', '.join(MODES)})")
    return tuple(asked)


def event_id(line: str) -> str | None:
    """The id of a server-sent event (:func:`follow.sse_line`'s), if it has one."""
    for part in line.splitlines():
        if part.startswith("id: "):
            return part[4:]
    return None


def wanted(line: str, modes: tuple[str, ...]) -> bool:
    return "run_modes" in modes or line.startswith("event: metadata\n")


def due(status: RunStatus, newest: str | None, after: str | None) -> bool:
    """Whether the thread's current run has events for the client: it moves, or it
    committed a checkpoint after the event ``after`` (a run quicker than a wake)."""
    if status.run_id is None:
        return False
    if status.state in MOVING:
        return True
    return None not in (newest, after) and str(newest) > str(after).partition(".")[0]


async def events(
    rt: Runtime,
    follower: Follower,
    thread_id: str,
    modes: tuple[str, ...],
    after: str | None,
    latest: StateSnapshot | None,
) -> AsyncIterator[str]:
    """The thread's runs' events after ``after`` (none given: from the run moving now, or
    from the next; ``latest``: the thread's newest checkpoint when the client joined)."""
    if after is None and latest is not None:
        after = stream.resumed_from(latest)  # what a run sent up to there is behind it
    async with follower.follow(thread_id) as changed:
        while True:
            await changed.wait()
            changed.clear()
            try:
                status = await run_in_threadpool(rt.status, thread_id)
            except UnknownThread:
                continue  # no run yet: its first one is to come
            newest = None
            if status.state not in MOVING:
                newest = await run_in_threadpool(_newest, rt, thread_id, status.agent)
            if not due(status, newest, after):
                continue
            async for line in follow.events(rt, follower, status, stream.JOINED, after, set()):
                after = event_id(line) or after
                if wanted(line, modes):
                    yield line


def _newest(rt: Runtime, thread_id: str, agent: str | None) -> str | None:
    if agent is None or agent not in rt.names():
        return None
    config = rt.graph(agent).get_state(rt.config(thread_id)).config
    return str(config["configurable"]["checkpoint_id"]) if config else None
