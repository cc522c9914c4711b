"""Drive one claimed run: resume its graph from Postgres, then map the outcome to a state.

claim -> resume graph (initial input, a recorded decision, or nothing after a crash) ->
transition (waiting / done / failed / needs-human) and consume used signals, in one
transaction. A heartbeat thread keeps the lease while the graph runs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from waystone.crash import crash_point
from waystone.graph.state import initial_state
from waystone.runs.registry import Run, RunRegistry
from waystone.runs.signals import SignalBox

logger = logging.getLogger(__name__)

APPROVAL = "approval"


def graph_config(thread_id: str, recursion_limit: int = 200) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}, "recursion_limit": recursion_limit}


def pending_interrupt(graph: CompiledStateGraph[Any], thread_id: str) -> dict[str, Any] | None:
    """The payload of the interrupt the run waits on, or ``None``."""
    snapshot = graph.get_state(graph_config(thread_id))
    for item in snapshot.interrupts:
        if isinstance(item.value, dict):
            return item.value
    return None


@contextmanager
def heartbeat(registry: RunRegistry, run: Run, lease_seconds: float) -> Iterator[threading.Event]:
    """Renew the lease every third of its length; the event is set if the lease is lost."""
    stop, lost = threading.Event(), threading.Event()

    def beat() -> None:
        while not stop.wait(lease_seconds / 3):
            try:
                if not registry.heartbeat(run.thread_id, run.lease_token, lease_seconds):
                    lost.set()
                    logger.warning("lease lost", extra={"thread_id": run.thread_id})
                    return
            except Exception:  # the database may be briefly away; the next beat retries
                logger.exception("heartbeat failed", extra={"thread_id": run.thread_id})

    thread = threading.Thread(target=beat, name=f"heartbeat-{run.thread_id}", daemon=True)
    thread.start()
    try:
        yield lost
    finally:
        stop.set()
        thread.join()


def drive(
    graph: CompiledStateGraph[Any],
    run: Run,
    registry: RunRegistry,
    signals: SignalBox,
    *,
    recursion_limit: int,
) -> Run:
    """Resume the graph of a claimed run and record where it ended."""
    config = graph_config(run.thread_id, recursion_limit)
    snapshot = graph.get_state(config)
    pending = [s for s in signals.pending(run.thread_id) if s.name == APPROVAL]
    waiting_on = pending_interrupt(graph, run.thread_id)
    payload: Any
    if not snapshot.values:
        payload = initial_state(run.goal, run.input)
    elif waiting_on is not None:
        answer = next((s for s in pending if s.dedupe_key == waiting_on.get("digest")), None)
        payload = Command(resume=answer.payload) if answer else None
        if answer is None:
            return _settle(graph, run, registry, signals)
    else:
        payload = None  # resume from the last checkpoint (after a crash or a failure)
    graph.invoke(payload, config, durability="sync")
    crash_point("run:after-checkpoint")
    return _settle(graph, run, registry, signals)


def _settle(
    graph: CompiledStateGraph[Any], run: Run, registry: RunRegistry, signals: SignalBox
) -> Run:
    """Transition the run to what its graph says, consuming the signals it has used."""
    waiting_on = pending_interrupt(graph, run.thread_id)
    values = graph.get_state(graph_config(run.thread_id)).values
    outcome = values.get("outcome") if isinstance(values, dict) else None
    live_digest = waiting_on.get("digest") if waiting_on else None
    with registry.db.transaction() as conn:
        for sig in signals.pending(run.thread_id):
            if sig.name == APPROVAL and sig.dedupe_key != live_digest:
                signals.consume(sig.id, conn=conn)
        if waiting_on is not None:
            reason = f"waiting for approval of {waiting_on.get('tool')}: {waiting_on.get('reason')}"
            return registry.transition(
                run.thread_id,
                "waiting",
                reason=reason,
                from_states=("running",),
                evidence={"pending_approval": waiting_on},
                lease_token=run.lease_token,
                conn=conn,
            )
        if not outcome:
            outcome = {"state": "failed", "reason": "the graph ended without an outcome"}
        return registry.transition(
            run.thread_id,
            outcome["state"],
            reason=outcome["reason"],
            from_states=("running",),
            evidence={"outcome": outcome, "evidence": values.get("evidence", [])[-5:]},
            lease_token=run.lease_token,
            conn=conn,
        )
