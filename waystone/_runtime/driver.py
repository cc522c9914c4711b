"""Drive one claimed run: resume its graph from Postgres, then map the outcome to a state.

claim -> resume the graph (initial input; the signal or decision it waits for; a timeout;
or nothing, after a crash) -> transition (waiting / done / failed / needs-human) and
consume the signals used, in one transaction. A run that ends makes that transition in
the transaction of its graph's last checkpoint (see ``_Ending``); a run that waits makes
it after. The process's heartbeat keeps the lease while the graph runs (``leases``); every
write carries the lease token (fencing).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Callable, Generator, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from waystone._crash import crash_point
from waystone._runs import breakpoints as _breakpoints
from waystone._runs.registry import Run, RunRegistry
from waystone._runs.run_config import graph_config
from waystone._runs.signals import APPROVAL, RESUME, Signal, SignalBox

if TYPE_CHECKING:  # the runtime imports this module for every command; most drive nothing
    from langchain_core.runnables import RunnableConfig
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.runtime import RunControl
    from langgraph.types import Command, Interrupt, StateSnapshot

    from waystone._checkpointing.held import Statement
    from waystone._runtime.catalog import Entry
    from waystone._runtime.options import RunOptions
    from waystone._streams.log import StreamLog

logger = logging.getLogger(__name__)

ENDED = {"state": "done", "reason": "the graph ended"}  # a user's graph, once it stops
RUN_KEY = "waystone_run"  # the configurable value naming the run (its id) of its thread
INTERRUPT = "__interrupt__"  # where invoke's output lists the interrupts it stopped on


def waiting_interrupt(snapshot: StateSnapshot | Reached) -> Interrupt | None:
    """The interrupt a state snapshot waits on: an approval or a signal (the agent
    preset's waits), else the first of a graph's own ``interrupt()`` calls, which a resume
    value answers; ``None`` when it waits on nothing."""
    for item in snapshot.interrupts:
        if kind_of(item) in (APPROVAL, "signal"):
            return item
    return snapshot.interrupts[0] if snapshot.interrupts else None


# The fields of Waystone's own waits: an approval (the preset's authorize node) and a
# signal wait (_runs/waits.py). Any other interrupt, a look-alike with fields missing
# included, is a graph's own, answered by a resume value.
_APPROVAL_FIELDS = frozenset({"kind", "tool", "args", "idempotency_key", "digest"})
_SIGNAL_FIELDS = frozenset({"kind", "name", "timeout_s"})


def kind_of(item: Interrupt) -> str:
    """``approval`` or ``signal`` for Waystone's own waits, ``resume`` for any other."""
    value = item.value
    if not isinstance(value, dict):
        return RESUME
    if value.get("kind") == APPROVAL and value.keys() >= _APPROVAL_FIELDS:
        return APPROVAL
    if value.get("kind") == "signal" and value.keys() >= _SIGNAL_FIELDS:
        return "signal"
    return RESUME


def interrupts_of(snapshot: StateSnapshot | Reached) -> list[dict[str, Any]]:
    """The graph's own pending interrupts, as shown: ``{"id", "value"}`` each."""
    # as JSON (a value that is not JSON is shown by its repr): it is kept in the run's row
    return [
        {"id": i.id, "value": json.loads(json.dumps(i.value, default=repr))}
        for i in snapshot.interrupts
        if kind_of(i) == RESUME
    ]


def pending_interrupt(graph: CompiledStateGraph[Any], thread_id: str) -> Interrupt | None:
    """The interrupt the run waits on, read from Postgres."""
    return waiting_interrupt(graph.get_state(graph_config(thread_id)))


def wanted_signal(waiting_on: Interrupt) -> str:
    kind = kind_of(waiting_on)
    return str(waiting_on.value["name"]) if kind == "signal" else kind


def drive(
    entry: Entry,
    run: Run,
    registry: RunRegistry,
    signals: SignalBox,
    *,
    control: RunControl | None = None,
    context: Any = None,
    options: RunOptions | None = None,
    on_new_run: OnNewRun | None = None,
    log: StreamLog | None = None,
) -> Run:
    """Resume the graph of a claimed run until it waits or ends, and record where, as its
    ``entry`` says (its first input, how it ends). ``context`` reaches its nodes' effects
    (see :mod:`waystone.effects`), in ``configurable["__waystone__"]``; ``options`` are
    what the run was created with (config, LangGraph's context, breakpoints);
    ``on_new_run`` is given the thread's state left by the run before, once, before this
    run's input is applied (see :mod:`waystone._runtime.stopped_calls`); ``log``: a
    logged run's stream log, its graph streamed into it (see :mod:`waystone._streams`)."""
    from waystone._streams.drive import stream

    graph = entry.graph
    steps = _steps(
        entry,
        run,
        registry,
        signals,
        context=context,
        options=options,
        on_new_run=on_new_run,
        logged=log is not None,
    )
    extra = options.invoke_kwargs() if options is not None else {}
    move: Callable[[], Any] = steps.__next__
    while True:
        got = _advance(move)
        if isinstance(got, Run):
            return got
        try:
            if log is None:
                out = graph.invoke(*got, durability="sync", control=control, **extra)
            else:
                out = stream(graph, *got, log, durability="sync", control=control, **extra)
        except BaseException as exc:
            move = functools.partial(steps.throw, exc)
        else:
            move = functools.partial(steps.send, out)


async def adrive(
    entry: Entry,
    graph: CompiledStateGraph[Any],
    run: Run,
    registry: RunRegistry,
    signals: SignalBox,
    *,
    control: RunControl | None = None,
    context: Any = None,
    options: RunOptions | None = None,
    on_new_run: OnNewRun | None = None,
    log: StreamLog | None = None,
) -> Run:
    """:func:`drive` on an event loop, of ``graph`` (the entry's, saving on this loop's
    pool): the graph runs with ``ainvoke`` (its async nodes, effects and models on this
    loop), and what the drive reads and records between two invocations (signals,
    transitions) in a worker thread, so the loop is never blocked."""
    from waystone._streams.drive import astream

    steps = _steps(
        entry,
        run,
        registry,
        signals,
        context=context,
        graph=graph,
        options=options,
        on_new_run=on_new_run,
        logged=log is not None,
    )
    extra = options.invoke_kwargs() if options is not None else {}
    move: Callable[[], Any] = steps.__next__
    while True:
        got = await asyncio.to_thread(_advance, move)
        if isinstance(got, Run):
            return got
        try:
            if log is None:
                out = await graph.ainvoke(*got, durability="sync", control=control, **extra)
            else:
                kwargs = {"durability": "sync", "control": control, **extra}
                out = await astream(graph, *got, log, **kwargs)
        except BaseException as exc:
            move = functools.partial(steps.throw, exc)
        else:
            move = functools.partial(steps.send, out)


# What the drive asks for (the graph invoked with a payload and a config), what it is given
# back (the graph's output, or its error thrown in), and the settled run it returns.
Steps = Generator[tuple[Any, "RunnableConfig"], Any, Run]
# Given the graph and the thread's state as the run before left it, as a new run begins.
OnNewRun = Callable[["CompiledStateGraph[Any]", "StateSnapshot"], None]


def _advance(move: Callable[[], Any]) -> Run | tuple[Any, RunnableConfig]:
    """The drive moved on to its next request (a payload and a config), or to its end (the
    settled run): a StopIteration cannot cross a thread's future."""
    try:
        request: tuple[Any, RunnableConfig] = move()
    except StopIteration as stop:
        ended: Run = stop.value
        return ended
    return request


def _steps(
    entry: Entry,
    run: Run,
    registry: RunRegistry,
    signals: SignalBox,
    *,
    context: Any,
    graph: CompiledStateGraph[Any] | None = None,
    options: RunOptions | None = None,
    on_new_run: OnNewRun | None = None,
    logged: bool = False,
) -> Steps:
    """The drive, both sync and async: it yields each invocation of the graph (a payload
    and a config) and is sent its output (or thrown its error); it decides what to resume
    with, and settles the run. A ``logged`` run's first checkpoints are saved at once:
    its stream sends them before the first node's live events."""
    graph = graph if graph is not None else entry.graph
    config = graph_config(
        run.thread_id, entry.recursion_limit, run.lease_token, run.key_namespace or run.thread_id
    )
    if context is not None:
        config["configurable"]["__waystone__"] = context
    if options is not None:  # once per drive: each step's config is this one
        options.apply(config["configurable"])
        if options.recursion_limit is not None:
            config["recursion_limit"] = options.recursion_limit
    number = run.run_number or 1
    if not entry.one_run:  # kept in each checkpoint's metadata: which run wrote it
        config["configurable"][RUN_KEY] = run.run_id
    first = entry.first_input(run) if entry.first_input is not None else run.input
    payload: Any = None
    snapshot: StateSnapshot | Reached | None = None
    fork_at = options.checkpoint_id if options is not None else None
    begin = config  # the first invocation's: from a checkpoint, for a run that forks
    if run.started is False:  # the claim saw no checkpoint: nothing to read back
        payload = first
    else:
        snapshot = graph.get_state(config)
        if not snapshot.values and not snapshot.next:
            payload = first
        elif number > 1 and (snapshot.metadata or {}).get(RUN_KEY) != run.run_id:
            payload = first  # the thread's state is its last run's: this run has not begun
            if fork_at is not None:  # LangGraph branches off there (docs/effects.md)
                begin = {**config, "configurable": {**config["configurable"]}}
                begin["configurable"]["checkpoint_id"] = fork_at
            elif on_new_run is not None:
                on_new_run(graph, snapshot)
    # a graph that records no outcome is settled once it stops (see ``settle``)
    ending = _Ending(registry, run, entry.ending) if entry.ending is not None else None
    finishing = getattr(graph.checkpointer, "finishing", None)
    with (
        finishing(run.thread_id, run.lease_token, ending)
        if finishing is not None and ending is not None
        else nullcontext(lambda: False)
    ) as finished:
        while True:
            waiting_on = waiting_interrupt(snapshot) if snapshot is not None else None
            forking = begin is not config  # what the old branch waits on is not the fork's
            if payload is None and waiting_on is not None and snapshot is not None and not forking:
                payload = _answer(snapshot, run, signals)
                if payload is None:
                    break  # still waiting: nothing arrived and the wait has not timed out
            try:
                with _known_empty(graph, run.thread_id, snapshot is None and not logged):
                    out = yield payload, begin
                begin = config
            except BaseException as exc:
                with suppress(Exception):  # best effort: the graph's own error is the one
                    flush(graph, run.thread_id)
                if isinstance(exc, Exception) and finished() and ending and ending.ended:
                    # e.g. the recursion limit, checked before "no more tasks": the run
                    # ended with its last checkpoint, whatever the graph says after it
                    logger.warning("the graph raised after its run ended", exc_info=True)
                    return ending.ended
                raise
            flush(graph, run.thread_id)
            crash_point("run:after-checkpoint")
            payload = None
            snapshot = _reached(out) or graph.get_state(config)
            waiting_on = waiting_interrupt(snapshot)
            if waiting_on is None or not _available(snapshot, run.thread_id, signals):
                break  # ended, or waits for something that has not arrived yet
        if finished() and ending is not None and ending.ended is not None:
            return ending.ended  # it ended in its last checkpoint's transaction
    breakpoints = options is not None and options.breakpoints
    return settle(
        graph, run, registry, signals, snapshot, ending=entry.ending, breakpoints=breakpoints
    )


class _Ending:
    """A run that ends is moved on in the transaction of its graph's last checkpoint, the
    one with an outcome (routing ends the graph there): no step between the two for a
    crash to fall into, and one round trip less. A run that waits is settled after."""

    def __init__(
        self,
        registry: RunRegistry,
        run: Run,
        ending: Callable[[dict[str, Any]], dict[str, Any] | None],
    ) -> None:
        self.registry = registry
        self.run = run
        self.ending = ending
        self.ended: Run | None = None

    def __call__(self, values: dict[str, Any]) -> list[Statement] | None:
        evidence = self.ending(values)
        if evidence is None:
            return None
        outcome = evidence["outcome"]
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


def flush(graph: CompiledStateGraph[Any], thread_id: str) -> None:
    """Writes the saver still holds for the next save (none, when the graph ended on a
    save, an interrupt or an error) are committed before the run is settled."""
    held = getattr(graph.checkpointer, "flush", None)
    if held is not None:
        held(thread_id)


def _available(snapshot: StateSnapshot | Reached, thread_id: str, signals: SignalBox) -> bool:
    pending = signals.pending(thread_id)
    return any(_match(item, pending) is not None for item in _waits(snapshot))


def _waits(snapshot: StateSnapshot | Reached) -> list[Interrupt]:
    """The interrupts a value can answer now: the preset's one wait, or each of a graph's
    own pending interrupts (answered one by one, by id)."""
    first = waiting_interrupt(snapshot)
    if first is None:
        return []
    return [first] if kind_of(first) != RESUME else list(snapshot.interrupts)


def _match(waiting_on: Interrupt, pending: list[Signal]) -> Signal | None:
    value: Any = waiting_on.value
    kind = kind_of(waiting_on)
    for sig in pending:
        if sig.reserved_for is not None and sig.reserved_for != waiting_on.id:
            continue  # handed to an earlier wait: it answers that one only
        if kind == RESUME:
            if sig.name == RESUME and sig.dedupe_key == waiting_on.id:
                return sig
        elif kind == APPROVAL:
            # a decision is recorded for one interrupt: one action of one run, one time
            if sig.name == APPROVAL and sig.dedupe_key == waiting_on.id:
                return sig
        elif sig.name == value.get("name"):
            return sig
    return None


def _answer(snapshot: StateSnapshot | Reached, run: Run, signals: SignalBox) -> Command[Any] | None:
    """The resume value for what the run waits on: its signal (reserved to it), a timeout,
    or none; for a graph's own interrupts, the values given for those answered so far."""
    from langgraph.types import Command

    waiting_on = waiting_interrupt(snapshot)
    assert waiting_on is not None
    pending = signals.pending(run.thread_id)
    if kind_of(waiting_on) == RESUME:
        answers: dict[str, Any] = {}
        for item in _waits(snapshot):
            found = _match(item, pending)
            if found is not None:
                signals.reserve(found.id, item.id)
                answers[item.id] = found.payload.get("value")
        return Command(resume=answers) if answers else None
    sig = _match(waiting_on, pending)
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
    *,
    ending: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
    breakpoints: bool = False,
) -> Run:
    """Transition the run to what its graph says (``snapshot``: its latest state, read
    again when not given), consuming the signals it has used. A graph with an ``ending``
    (see :class:`~waystone._runtime.catalog.Entry`) ends on the outcome it records; any other is
    done when it ends. A run given ``breakpoints`` that stopped at one waits there."""
    if snapshot is None:
        snapshot = graph.get_state(graph_config(run.thread_id))
    waiting_on = waiting_interrupt(snapshot)
    if breakpoints and waiting_on is None:
        stopped = _breakpoints.stopped_at(graph, run.thread_id)
        if stopped is not None:  # the value that let it go on so far is spent
            spent = [sig for sig in signals.pending(run.thread_id) if sig.name == RESUME]
            with _spending(registry, run, spent, signals) as conn:
                return _breakpoints.wait(registry, run, stopped, conn)
    values = snapshot.values if isinstance(snapshot.values, dict) else {}
    if waiting_on is None:  # it ends: every signal it used, and every approval, is spent
        evidence = ending(values) if ending is not None else {"outcome": ENDED}
        if evidence is None:
            ended = {"state": "failed", "reason": "the graph ended without an outcome"}
            evidence = {"outcome": ended}
        outcome = evidence["outcome"]
        return registry.transition(
            run.thread_id,
            outcome["state"],
            reason=outcome["reason"],
            from_states=("running",),
            evidence=evidence,
            lease_token=run.lease_token,
            spend_signals=True,
        )
    pending = signals.pending(run.thread_id)
    waits = _waits(snapshot)
    live = [found.id for item in waits if (found := _match(item, pending)) is not None]
    ids = {item.id for item in waits}
    spent = [  # used by an earlier wait, or a decision or value no wait will take
        sig
        for sig in pending
        if (sig.reserved_for is not None and sig.reserved_for not in ids)
        or (sig.name in (APPROVAL, RESUME) and sig.id not in live)
    ]
    with _spending(registry, run, spent, signals) as conn:
        return _to_waiting(registry, run, snapshot, waiting_on, conn)


def refuse_resume(
    graph: CompiledStateGraph[Any],
    run: Run,
    registry: RunRegistry,
    signals: SignalBox,
    error: BaseException,
) -> Run | None:
    """A resume value an ``interrupt()`` refused (it does not match its
    ``response_schema``): LangGraph saved nothing of it, so the run waits on the same
    interrupts again and the values given for them are refused, to be given again. ``None``
    when the graph waits on nothing (the run fails as for any error)."""
    snapshot = graph.get_state(graph_config(run.thread_id))
    waiting_on = waiting_interrupt(snapshot)
    if waiting_on is None:
        return None
    ids = {item.id for item in _waits(snapshot)}
    refused = [sig for sig in signals.pending(run.thread_id) if sig.reserved_for in ids]
    with registry.db.transaction(fence=run.lease_token) as conn:
        for sig in refused:
            signals.refuse(sig.id, conn=conn)
        registry.event(
            run.thread_id,
            "resume-refused",
            f"interrupt() refused the value given: {type(error).__name__}: {error}; "
            "give it again with a value that matches its response_schema",
            {"signals": [sig.id for sig in refused]},
            conn=conn,
        )
        return _to_waiting(registry, run, snapshot, waiting_on, conn)


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


def _to_waiting(
    registry: RunRegistry,
    run: Run,
    snapshot: StateSnapshot | Reached,
    waiting_on: Interrupt,
    conn: Any,
) -> Run:
    value: Any = waiting_on.value
    evidence: dict[str, Any]
    if kind_of(waiting_on) == RESUME:
        shown = interrupts_of(snapshot)
        reason = (
            f"waiting for a value for interrupt {waiting_on.id}"
            if len(shown) == 1
            else f"waiting for values for {len(shown)} interrupts"
        )
        evidence = {"interrupts": shown}
        wake_at, wait_seconds = None, None
    elif value["kind"] == APPROVAL:
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
