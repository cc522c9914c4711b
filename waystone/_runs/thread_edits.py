"""Changes to a thread as a whole, for the LangGraph server API: copy it, and update its
state between runs. Each goes through Waystone's own paths: a copy is a fork (effects
the original applied are reused, never applied again), and a state update is a fenced
checkpoint under the run's current lease token, so a worker that claims the run first
fences it out, and one that claims it after sees it."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from waystone._runs import driver
from waystone._runs.breakpoints import only_breakpoints
from waystone._runs.run_config import graph_config
from waystone.errors import BadInput, TransitionNotAllowed

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

    from waystone._runs.catalog import Catalog
    from waystone._runs.commands import Commands
    from waystone._runs.parts import Parts
    from waystone._runs.threads import Thread, Threads

# The states of a run whose thread's state may be changed: nothing drives it, and nothing
# (a signal, a resume) is about to; and a run waiting at a breakpoint.
EDITABLE = ("done", "failed")


class ThreadEdits:
    def __init__(
        self, parts: Parts, catalog: Catalog, commands: Commands, threads: Threads
    ) -> None:
        self._parts, self._catalog = parts, catalog
        self._commands, self._threads = commands, threads

    def copy(self, thread_id: str, by: str, owner: str | None) -> Thread:
        """A new thread with the thread's metadata (``owner``'s), and its run forked into
        it when it has one: the copy's run starts from the original's latest checkpoint."""
        found = self._threads.get(thread_id, owner)
        target = str(uuid.uuid4())
        self._threads.create(target, metadata=found.metadata, owner=owner)
        if found.agent is not None:
            self._commands.fork(thread_id, None, target, by)
        return self._threads.get(target, owner)

    def update_state(
        self,
        thread_id: str,
        values: Any,
        *,
        as_node: str | None = None,
        checkpoint_id: str | None = None,
        owner: str | None = None,
    ) -> RunnableConfig:
        """Write ``values`` as ``as_node`` would (LangGraph's ``update_state``) on the
        thread's latest checkpoint, or on ``checkpoint_id``; the new checkpoint's config.
        Refused (:class:`TransitionNotAllowed`) unless the thread's run has ended."""
        found = self._threads.get(thread_id, owner)
        if found.agent is None:
            raise BadInput(
                f"thread {thread_id} has no run yet, so no graph: start a run on it first"
            )
        entry = self._catalog.entry(self._catalog.known(found.agent))
        run = self._parts.registry.get(thread_id)
        # at a breakpoint nothing is pending in the graph: the next resume goes on from here
        at_breakpoint = run.state == "waiting" and only_breakpoints(
            run.evidence.get("interrupts") or []
        )
        if run.state not in EDITABLE and not at_breakpoint:
            raise TransitionNotAllowed(
                f"thread {thread_id}'s run is {run.state}: its state changes only once the "
                "run has ended or stopped at a breakpoint (cancel it, or wait for it)"
            )
        if run.pruned_at is not None:
            raise TransitionNotAllowed(f"thread {thread_id}'s checkpoints were erased")
        config = graph_config(thread_id, lease_token=run.lease_token)
        if not entry.one_run and run.run_id is not None:
            config["configurable"][driver.RUN_KEY] = run.run_id  # its run's, as its steps'
        if checkpoint_id is not None:
            config["configurable"]["checkpoint_id"] = checkpoint_id
        from langgraph.errors import InvalidUpdateError

        graph = entry.graph
        try:
            updated = graph.update_state(config, values, as_node=as_node)
        except (InvalidUpdateError, ValueError, KeyError, TypeError) as exc:  # bad input
            raise BadInput(f"the state update was refused by the graph: {exc}") from exc
        flush = getattr(graph.checkpointer, "flush", None)
        if flush is not None:
            flush(thread_id)
        return updated
