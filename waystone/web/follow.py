"""Following a run from the server while a worker drives it: a wait, or a stream of its
events, reads the run again each time the process's :class:`~waystone.web.follower.Follower`
sees it move, until it waits or ends (for a resume, until the interrupts it answered are
behind it). A stream makes the events of the checkpoints committed since it last looked,
never the whole history again."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool

from waystone._runs.driver import RUN_KEY
from waystone.web import shapes, stream
from waystone.web.follower import Follower

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

    from waystone.runtime import RunStatus, Runtime


def settled(status: RunStatus, run_id: str | None, answered: set[str]) -> bool:
    """Whether run ``run_id`` has waited or ended, as ``status`` (its thread's current run)
    shows it; ``answered``: the interrupts a resume answered, still pending until the run
    goes on."""
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
            if settled(status, started.run_id, answered):
                return status


async def events(
    rt: Runtime,
    follower: Follower,
    started: RunStatus,
    modes: tuple[str, ...],
    after: str | None,
    answered: set[str],
) -> AsyncIterator[str]:
    """The run's events after ``after`` as server-sent events, as its checkpoints commit,
    until it waits or ends (see :mod:`waystone.web.stream`); ``answered`` as for
    :func:`settled`."""
    thread_id, run_id = started.thread_id, started.run_id
    meta = {"graph_id": started.agent, "assistant_id": shapes.assistant_id(started.agent)}
    # a thread of the preset holds one run: every checkpoint of it is the run's
    reader = _Reader(rt, started.agent, thread_id, run_id if rt.is_graph(started.agent) else None)
    maker = stream.Maker(modes, meta)
    yield sse_line("metadata", {"run_id": run_id, "attempt": 1})
    async with follower.follow(thread_id) as changed:
        while True:
            await changed.wait()
            changed.clear()
            status = await run_in_threadpool(rt.status, thread_id)
            done = settled(status, run_id, answered)
            made = maker.add(await run_in_threadpool(reader.newer, maker, done))
            if done and status.state == "waiting":
                made += maker.stopped()
            for event in stream.after(made, after):
                yield sse_line(event.event, event.data, event.id)
                after = event.id
            if done:
                if status.run_id == run_id and status.state in ("failed", "needs-human"):
                    yield sse_line("error", {"error": status.state, "message": status.reason})
                return


def sse_line(event: str, data: Any, event_id: str | None = None) -> str:
    head = f"event: {event}\n"
    lines = "".join(f"data: {line}\n" for line in json.dumps(data, default=str).splitlines())
    return head + lines + (f"id: {event_id}\n" if event_id else "") + "\n"


class _Reader:
    """A run's checkpoints, oldest first, in parts: each :meth:`newer` gives those
    committed since the last (``run_filter``: only those of this run)."""

    def __init__(self, rt: Runtime, agent: str, thread_id: str, run_filter: str | None) -> None:
        self.rt, self.graph, self.thread_id = rt, rt.graph(agent), thread_id
        self.run_filter = run_filter
        self.seen: str | None = None  # the newest checkpoint read, the run's or not

    def newer(self, maker: stream.Maker, done: bool) -> list[StateSnapshot]:
        """The checkpoints committed since the last read; ``maker``'s last one read again
        when they follow it or the run is done: the writes of its tasks (and interrupts)
        commit after it, and its successor's events are made of them."""
        if self.seen is None:  # the first read: back to where the run began
            history = list(self.graph.get_state_history(self.rt.config(self.thread_id)))
            if history:
                self.seen = _checkpoint_id(history[0])
            return stream.run_checkpoints(iter(history), self.run_filter)
        found, ids = [], self._ids_after(self.seen)
        if maker.previous is not None and (ids or done):
            maker.previous = self._state(_checkpoint_id(maker.previous))
        for checkpoint_id in ids:
            snap = self._state(checkpoint_id)
            self.seen = checkpoint_id
            mine = self.run_filter is None or (snap.metadata or {}).get(RUN_KEY) == self.run_filter
            if mine:
                found.append(snap)
        return found

    def _state(self, checkpoint_id: str) -> StateSnapshot:
        config = self.rt.config(self.thread_id)
        config["configurable"].update(checkpoint_ns="", checkpoint_id=checkpoint_id)
        return self.graph.get_state(config)

    def _ids_after(self, checkpoint_id: str) -> list[str]:
        with self.rt.connection() as conn:
            rows = conn.execute(
                "SELECT checkpoint_id FROM public.checkpoints WHERE thread_id = %s "
                "AND checkpoint_ns = '' AND checkpoint_id > %s ORDER BY checkpoint_id",
                (self.thread_id, checkpoint_id),
            ).fetchall()
        return [row["checkpoint_id"] for row in rows]


def _checkpoint_id(snap: StateSnapshot) -> str:
    return str(snap.config["configurable"]["checkpoint_id"])
