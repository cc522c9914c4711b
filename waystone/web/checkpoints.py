"""A run's checkpoints as they commit, read in parts: the graph's (its root namespace)
as soon as they commit, its subgraphs' once the graph's next checkpoint (or the run's
end) shows their step is over, so that what is made of them never changes: a subgraph
running beside another may commit a checkpoint older than one already read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from waystone import sql
from waystone._runs.driver import RUN_KEY
from waystone.web import stream

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

    from waystone.runtime import Runtime


class RunCheckpoints:
    """Each :meth:`newer` gives the run's checkpoints committed since the last
    (``run_filter``: those of this run only; ``subgraphs``: with its subgraphs')."""

    def __init__(
        self, rt: Runtime, agent: str, thread_id: str, run_filter: str | None, subgraphs: bool
    ) -> None:
        self.rt, self.graph, self.thread_id = rt, rt.graph(agent), thread_id
        self.run_filter, self.subgraphs = run_filter, subgraphs
        self.seen: str | None = None  # the newest root checkpoint read, the run's or not
        self.first: str | None = None  # the run's first root checkpoint
        self.seen_below: set[str] = set()  # the subgraphs' checkpoints read

    def newer(
        self, last: dict[str, StateSnapshot], done: bool
    ) -> tuple[dict[str, StateSnapshot], list[StateSnapshot]]:
        """``last`` (a namespace's last checkpoint read) read again when checkpoints
        follow it or the run is done: the writes of its tasks (and interrupts) commit
        after it, and the events of its successor are made of them; then the new
        checkpoints, oldest first."""
        new = self._roots()
        if self.subgraphs and self.first is not None:
            new += self._below(done)
        again = {}
        if new or done:
            again = {ns: self._state(ns, _id(snap)) for ns, snap in last.items()}
        if not done:
            new = self._whole(again.get(""), new)
        return again, sorted(new, key=_id)

    def _whole(self, last: StateSnapshot | None, new: list[StateSnapshot]) -> list[StateSnapshot]:
        """``new`` up to the first checkpoint whose answered interrupt's result is not
        seen yet though a checkpoint follows it (a resumed task's writes can commit after
        its successor): what follows it is read again next time."""
        roots = [s for s in new if not s.config["configurable"].get("checkpoint_ns")]
        chain = ([last] if last is not None else []) + roots
        for k, snap in enumerate(chain[:-1]):
            if any(t.interrupts and t.result is None and t.error is None for t in snap.tasks):
                self.seen = _id(snap)
                held = {_id(s) for s in chain[k + 1 :]}
                return [s for s in new if _id(s) not in held]
        return new

    def _roots(self) -> list[StateSnapshot]:
        if self.seen is None:  # the first read: back to where the run began
            history = list(self.graph.get_state_history(self.rt.config(self.thread_id)))
            found = stream.run_checkpoints(iter(history), self.run_filter)
            self.seen = _id(history[0]) if history else None
        else:
            found = []
            for _, checkpoint_id in self._rows("root_checkpoints_after", after=self.seen):
                self.seen = checkpoint_id
                found += self._mine(self._state("", checkpoint_id))
        if found and self.first is None:
            self.first = _id(found[0])
        return found

    def _below(self, done: bool) -> list[StateSnapshot]:
        found = []
        if done:
            rows = self._rows("subgraph_checkpoints_from", first=self.first)
        else:
            rows = self._rows("subgraph_checkpoints_between", first=self.first, before=self.seen)
        for ns, checkpoint_id in rows:
            if checkpoint_id not in self.seen_below:
                self.seen_below.add(checkpoint_id)
                found += self._mine(self._state(ns, checkpoint_id))
        return found

    def _mine(self, snap: StateSnapshot) -> list[StateSnapshot]:
        mine = self.run_filter is None or (snap.metadata or {}).get(RUN_KEY) == self.run_filter
        return [snap] if mine else []

    def _state(self, ns: str, checkpoint_id: str) -> StateSnapshot:
        config = self.rt.config(self.thread_id)
        config["configurable"].update(checkpoint_ns=ns, checkpoint_id=checkpoint_id)
        return self.graph.get_state(config)

    def _rows(self, query: str, **params: str | None) -> list[tuple[str, str]]:
        with self.rt.connection() as conn:
            rows = conn.execute(
                sql.query(query), {"thread_id": self.thread_id, **params}
            ).fetchall()
        return [(row["checkpoint_ns"], row["checkpoint_id"]) for row in rows]


def _id(snap: StateSnapshot) -> str:
    return str(snap.config["configurable"]["checkpoint_id"])
