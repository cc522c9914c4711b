"""Drive one claimed run: resume its graph from Postgres, then map the outcome to a state.

claim -> resume the graph (initial input; the signal or decision it waits for; a timeout;
or nothing, after a crash) -> transition (waiting / done / failed / needs-human) and
consume the signals used, in one transaction. A run that ends makes that transition in
the transaction of its graph's last checkpoint (see ``_Ending``); a run that waits makes
it after. The process's heartbeat keeps the lease while the graph runs (``leases``); every
write carries the lease token (fencing).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from waystone.crash import crash_point
from waystone.graph.state import initial_state
from waystone.runs.registry import Run, RunRegistry
from waystone.runs.signals import APPROVAL, Signal, SignalBox

if TYPE_CHECKING:  # the runtime imports this module for every command; most drive nothing
    from langchain_core.runnables import RunnableConfig
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.runtime import RunControl
    from langgraph.types import Command, Interrupt, StateSnapshot

    from waystone.checkpointing.held import Statement

logger = logging.getLogger(__name__)

INTERRUPT = "__interrupt__"  # where invoke's output lists the interrupts it stopped on


def graph_config(
    thread_id: str,
    recursion_limit: int = 200,
    lease_token: int | None = None,
    key_namespace: str | None = None,
) -> RunnableConfig:
    """The LangGraph config of a run; with ``lease_token`` every write it causes is fenced.
    ``key_namespace`` is the thread id its idempotency keys derive from (a fork's root)."""
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if lease_token is not None:
        configurable["lease_token"] = lease_token
    if key_namespace is not None:
        configurable["key_namespace"] = key_namespace
    return {"configurable": configurable, "recursion_limit": recursion_limit}


def waiting_interrupt(snapshot: StateSnapshot | Reached) -> Interrupt | None:
    """The interrupt a state snapshot waits on (an approval or a signal), or ``None``."""
    for item in snapshot.interrupts:
        if isinstance(item.value, dict) and item.value.get("kind") in (APPROVAL, "signal"):
            return item
    return None


def pending_interrupt(graph: CompiledStateGraph[Any], thread_id: str) -> Interrupt | None:
    """The interrupt the run waits on, read from Postgres."""
    return waiting_interrupt(graph.get_state(graph_config(thread_id)))


def wanted_signal(waiting_on: Interrupt) -> str:
    value: dict[str, Any] = waiting_on.value
    return APPROVAL if value.get("kind") == APPROVAL else str(value["name"])


def drive(
    graph: CompiledStateGraph[Any],
    run: Run,
    registry: RunRegistry,
    signals: SignalBox,
    *,
    recursion_limit: int,
    control: RunControl | None = None,
) -> Run:
    """Resume the graph of a claimed run until it waits or ends, and record where."""
    config = graph_config(
        run.thread_id, recursion_limit, run.lease_token, run.key_namespace or run.thread_id
    )
    payload: Any = None
    snapshot: StateSnapshot | Reached | None = None
    if run.started is False:  # the claim saw no checkpoint: nothing to read back
        payload = initial_state(run.goal, run.input)
    else:
        snapshot = graph.get_state(config)
        if not snapshot.values:
            payload = initial_state(run.goal, run.input)
    ending = _Ending(registry, run)
    finishing = getattr(graph.checkpointer, "finishing", None)
    with (
        finishing(run.thread_id, run.lease_token, ending)
        if finishing is not None
        else nullcontext(lambda: False)
    ) as finished:
        while True:
            waiting_on = waiting_interrupt(snapshot) if snapshot is not None else None
            if payload is None and waiting_on is not None:
                payload = _answer(waiting_on, run, signals)
                if payload is None:
                    break  # still waiting: nothing arrived and the wait has not timed out
            try:
                with _known_empty(graph, run.thread_id, snapshot is None):
                    out = graph.invoke(payload, config, durability="sync", control=control)
            except BaseException as exc:
                with suppress(Exception):  # best effort: the graph's own error is the one
                    _flush(graph, run.thread_id)
                if isinstance(exc, Exception) and finished() and ending.ended is not None:
                    # e.g. the recursion limit, checked before "no more tasks": the run
                    # ended with its last checkpoint, whatever the graph says after it
                    logger.warning("the graph raised after its run ended", exc_info=True)
                    return ending.ended
                raise
            _flush(graph, run.thread_id)
            crash_point("run:after-checkpoint")
            payload = None
            snapshot = _reached(out) or graph.get_state(config)
            waiting_on = waiting_interrupt(snapshot)
            if waiting_on is None or not _available(waiting_on, run.thread_id, signals):
                break  # ended, or waits for something that has not arrived yet
        if finished() and ending.ended is not None:
            return ending.ended  # it ended in its last checkpoint's transaction
    return settle(graph, run, registry, signals, snapshot)


class _Ending:
    """A run that ends is moved on in the transaction of its graph's last checkpoint, the
    one with an outcome (routing ends the graph there): no step between the two for a
    crash to fall into, and one round trip less. A run that waits is settled after."""

    def __init__(self, registry: RunRegistry, run: Run) -> None:
        self.registry = registry
        self.run = run
        self.ended: Run | None = None

    def __call__(self, values: dict[str, Any]) -> list[Statement] | None:
        outcome = values.get("outcome")
        if not outcome:
            return None
        evidence = {"outcome": outcome, "evidence": list(values.get("evidence") or [])[-5:]}
        statement, self.ended = self.registry.ending(
            self.run, outcome["state"], outcome["reason"], evidence, self._committed
        )
        return [statement]

    def _committed(self, run: Run) -> None:
        self.ended = run  # as Postgres holds it, once the last checkpoint's commit is in


@dataclass(frozen=True)
class Reached:
    """Where an invoke left the graph, as its output says: the values of its last
    checkpoint and the interrupts it stopped on (what reading the state back would say)."""

    values: dict[str, Any]
    interrupts: tuple[Interrupt, ...]


def _reached(out: Any) -> Reached | None:
    from langgraph.types import Interrupt

    if not isinstance(out, dict):
        return None  # not the values of a state graph: read the state back instead
    interrupts = tuple(i for i in out.get(INTERRUPT, ()) if isinstance(i, Interrupt))
    return Reached({k: v for k, v in out.items() if k != INTERRUPT}, interrupts)


def _known_empty(
    graph: CompiledStateGraph[Any], thread_id: str, empty: bool
) -> AbstractContextManager[None]:
    """A run whose claim saw no checkpoint starts without reading one back."""
    known = getattr(graph.checkpointer, "empty", None)
    return known(thread_id) if empty and known is not None else nullcontext()


def _flush(graph: CompiledStateGraph[Any], thread_id: str) -> None:
    """Writes the saver still holds for the next save (none, when the graph ended on a
    save, an interrupt or an error) are committed before the run is settled."""
    flush = getattr(graph.checkpointer, "flush", None)
    if flush is not None:
        flush(thread_id)


def _available(waiting_on: Interrupt, thread_id: str, signals: SignalBox) -> bool:
    return _match(waiting_on, signals.pending(thread_id)) is not None


def _match(waiting_on: Interrupt, pending: list[Signal]) -> Signal | None:
    value: dict[str, Any] = waiting_on.value
    for sig in pending:
        if sig.reserved_for is not None and sig.reserved_for != waiting_on.id:
            continue  # handed to an earlier wait: it answers that one only
        if value["kind"] == APPROVAL:
            # a decision is recorded for one interrupt: one action of one run, one time
            if sig.name == APPROVAL and sig.dedupe_key == waiting_on.id:
                return sig
        elif sig.name == value.get("name"):
            return sig
    return None


def _answer(waiting_on: Interrupt, run: Run, signals: SignalBox) -> Command[Any] | None:
    """The resume value for the interrupt: its signal (reserved to it), a timeout, or none."""
    from langgraph.types import Command

    sig = _match(waiting_on, signals.pending(run.thread_id))
    if sig is not None:
        signals.reserve(sig.id, waiting_on.id)
        if waiting_on.value["kind"] == APPROVAL:
            return Command(resume=sig.payload)
        return Command(resume={"signal": sig.name, "payload": sig.payload, "id": sig.id})
    if run.deadline_passed and _deadline_of(run, waiting_on):  # by the database's clock
        return Command(resume={"timeout": True})
    return None


def _deadline_of(run: Run, waiting_on: Interrupt) -> bool:
    """Whether the run's deadline is this wait's: the one it was set for, or (a deadline
    set before waits were named, wait_id NULL) the wait the claim took the run from."""
    if run.wait_id is not None:
        return run.wait_id == waiting_on.id
    return run.prev_state == "waiting"


def settle(
    graph: CompiledStateGraph[Any],
    run: Run,
    registry: RunRegistry,
    signals: SignalBox,
    snapshot: StateSnapshot | Reached | None = None,
) -> Run:
    """Transition the run to what its graph says (``snapshot``: its latest state, read
    again when not given), consuming the signals it has used."""
    if snapshot is None:
        snapshot = graph.get_state(graph_config(run.thread_id))
    waiting_on = waiting_interrupt(snapshot)
    values = snapshot.values
    outcome = values.get("outcome") if isinstance(values, dict) else None
    if waiting_on is None:  # it ends: every signal it used, and every approval, is spent
        if not outcome:
            outcome = {"state": "failed", "reason": "the graph ended without an outcome"}
        return registry.transition(
            run.thread_id,
            outcome["state"],
            reason=outcome["reason"],
            from_states=("running",),
            evidence={"outcome": outcome, "evidence": values.get("evidence", [])[-5:]},
            lease_token=run.lease_token,
            spend_signals=True,
        )
    pending = signals.pending(run.thread_id)
    live = _match(waiting_on, pending)
    spent = [  # used by an earlier wait, or an approval this wait will not take
        sig
        for sig in pending
        if (sig.reserved_for is not None and sig.reserved_for != waiting_on.id)
        or (sig.name == APPROVAL and (live is None or sig.id != live.id))
    ]
    with _spending(registry, run, spent, signals) as conn:
        return _to_waiting(registry, run, waiting_on, conn)


@contextmanager
def _spending(
    registry: RunRegistry, run: Run, spent: list[Signal], signals: SignalBox
) -> Iterator[Any]:
    """The transaction that consumes the signals a run has used (or that went stale) and
    moves the run on; with none to consume, the transition is one statement on its own
    (conditional on the lease token, so fenced all the same)."""
    if not spent:
        yield None
        return
    with registry.db.transaction(fence=run.lease_token) as conn:
        for sig in spent:
            signals.consume(sig.id, conn=conn)
        yield conn


def _to_waiting(registry: RunRegistry, run: Run, waiting_on: Interrupt, conn: Any) -> Run:
    value: dict[str, Any] = waiting_on.value
    evidence: dict[str, Any]
    if value["kind"] == APPROVAL:
        reason = f"waiting for approval of {value.get('tool')}: {value.get('reason')}"
        evidence = {"pending_approval": value}
        wake_at, wait_seconds = None, None
    else:
        reason = f"waiting for signal {value['name']!r} (timeout {value['timeout_s']:g}s)"
        evidence = {"waiting_for_signal": value, "interrupt_id": waiting_on.id}
        if run.wait_id == waiting_on.id and run.wake_at is not None:
            wake_at, wait_seconds = run.wake_at, None  # the same wait: its deadline stands
        else:
            wake_at, wait_seconds = None, float(value["timeout_s"])
    return registry.transition(
        run.thread_id,
        "waiting",
        reason=reason,
        from_states=("running",),
        evidence=evidence,
        lease_token=run.lease_token,
        waiting_for=wanted_signal(waiting_on),
        wake_at=wake_at,
        wait_seconds=wait_seconds,
        wait_id=waiting_on.id,
        conn=conn,
    )
