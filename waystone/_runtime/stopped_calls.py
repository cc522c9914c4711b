"""Tool calls a stopped run left without a result, answered so that its thread can take
the next message.

A run stopped in the middle of tool calls (cancelled, interrupted or rolled back by a
double-text, failed) leaves an ``AIMessage`` whose tool calls have no ``ToolMessage``;
every chat model, and LangGraph's own check (``_validate_chat_history``), refuses such a
history. Each of those calls is answered with a ``ToolMessage`` (same id and name,
``status="error"``) placed right after its ``AIMessage`` (chat models refuse a tool result
that does not follow its call), saying that it was cancelled and what the effect ledger
knows of it: applied anyway (with what the tool returned), failed, or of unknown outcome.

Who writes the answers, and when: the run that starts next on the thread, under its own
lease, before its input is applied (:func:`answer_stopped_calls`, from the driver). The
stop itself cannot: the person or process that cancels holds no lease, and the stopped
worker may still be in the middle of its step (its late writes are refused by the fence,
so nothing it does can land after the answers). The next run's claim raised the lease
token past every stopped worker's, and its writes are fenced by it: the answers are a new
checkpoint, through the fenced saver, written by the only process that may write the
thread, as the graph's tool node, so the state routes on as after that node. They carry
the stopped run's id in their metadata, so a drive that crashes after writing them and is
taken over applies its input all the same, and one that crashes half-way finds the same
stopped run again.

Only a state a stopped run left is answered (the run its latest checkpoint names ended
``failed``): a graph may end a run that goes well on calls it never answers, by design.
Cost: nothing per step; at the start of a run whose thread's state has calls without
results, one run row read by key; after a stop, two reads of the state, one of the ledger
(the calls' effects, by tool call id) and two checkpoints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from waystone._runs.run_config import graph_config
from waystone._runtime.driver import RUN_KEY, flush
from waystone._runtime.multitask import stopped_as, stopped_in_words
from waystone.errors import PermanentError

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage, ToolMessage
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.types import StateSnapshot

    from waystone._runs.registry import PastRun, Run, RunRegistry
    from waystone.effects._ledger import Effect, Ledger

EVENT = "tool-calls-answered"  # the run's history event that lists the answers


@dataclass(frozen=True)
class Unanswered:
    """A tool call without a result, under the state key ``key``."""

    key: str
    id: str
    name: str
    args: dict[str, Any]


def messages_keys(values: Any) -> list[str]:
    """The state keys that hold a chat history: lists with an ``AIMessage`` in them."""
    from langchain_core.messages import AIMessage

    if not isinstance(values, dict):
        return []
    return [
        key
        for key, value in values.items()
        if isinstance(value, list) and any(isinstance(m, AIMessage) for m in value)
    ]


def reducer_of(channel: Any) -> Any:
    """A channel's reducer: a ``BinaryOperatorAggregate``'s ``operator``, a
    ``DeltaChannel``'s ``reducer``; ``None`` for a channel that keeps the last value."""
    for name in ("operator", "reducer"):
        found = getattr(channel, name, None)
        if found is not None:
            return found
    return None


def unanswered(values: Any, keys: Sequence[str]) -> list[Unanswered]:
    """The tool calls of the ``AIMessage``s in ``values[key]`` that no ``ToolMessage``
    answers, found as LangGraph's ``_validate_chat_history`` finds them."""
    from langchain_core.messages import AIMessage, ToolMessage

    if not isinstance(values, dict):
        return []
    found: list[Unanswered] = []
    for key in keys:
        messages = values.get(key)
        if not isinstance(messages, list):
            continue
        answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
        found.extend(
            Unanswered(key, str(call["id"]), call["name"], dict(call.get("args") or {}))
            for m in messages
            if isinstance(m, AIMessage)
            for call in m.tool_calls
            if call.get("id") and call["id"] not in answered
        )
    return found


def how_stopped(stopped: PastRun | None) -> str:
    """What happened to the stopped run, as ``its run ...`` goes on."""
    if stopped is None:
        return "stopped"
    how = stopped_as(stopped.evidence)
    if how is not None:
        return f"was {stopped_in_words(how)} by a new run"
    if stopped.evidence.get("cancelled"):
        return "was cancelled"
    return "failed" if stopped.state == "failed" else "stopped"


def left_by_stop(stopped: PastRun | None, written_by: str | None) -> bool:
    """Whether the thread's latest state, written by run ``written_by`` (``None``: by an
    update, such as a half-done answer), is where a stopped run left it: that run
    (``stopped``, read by its id) ended ``failed`` (cancelled, stopped by a double-text,
    failed, even without writing anything after)."""
    if written_by is None:
        return True
    return stopped is not None and stopped.state == "failed"


def effects_of(calls: Sequence[Unanswered], effects: Sequence[Effect]) -> dict[str, Effect | None]:
    """The ledger's record of each call, by its id: the effect made for that tool call
    (of its tool, if several); for one with none, the latest effect of its tool with its
    arguments that records no tool call (older rows), each such row given to one call."""
    by_call = {c.id: _own(c, effects) for c in calls}
    loose = sorted((e for e in effects if e.tool_call_id is None), key=lambda e: e.created_at)
    for call in calls:
        if by_call[call.id] is not None:
            continue
        match = next(
            (e for e in reversed(loose) if e.tool == call.name and e.args == call.args), None
        )
        if match is not None:
            loose.remove(match)
        by_call[call.id] = match
    return by_call


def _own(call: Unanswered, effects: Sequence[Effect]) -> Effect | None:
    mine = [e for e in effects if e.tool_call_id == call.id]
    named = [e for e in mine if e.tool == call.name] or mine
    return max(named, key=lambda e: e.created_at) if named else None


def answer_text(call: Unanswered, how: str, effect: Effect | None) -> str:
    """What the model is told of a call its run stopped in the middle of."""
    said = f"Tool call {call.name} was cancelled: its run {how} before the call returned."
    if effect is None:
        return (
            f"{said} The effect ledger has no record of it, so whether it took effect is "
            "unknown: check before calling it again."
        )
    if effect.status in ("applied", "confirmed"):
        # here, not at load: the drives import this module, and `status` and `list`
        # start without langchain-core
        from waystone.effects._receipts import receipt_id
        from waystone.effects._tool_calls import kept_content

        content = kept_content(effect.receipt)
        ident = receipt_id(effect.receipt)
        shown = f" It returned: {content}" if content is not None else ""
        shown = shown or (f" (receipt {ident})" if ident is not None else "")
        return (
            f"{said} Its effect was applied all the same (ledger key {effect.key}).{shown} "
            "Do not call it again for this."
        )
    if effect.status == "failed":
        return f"{said} It failed: {effect.error or 'no detail'}."
    if effect.status == "interrupted":  # it stopped on its own interrupt(), unanswered
        return (
            f"{said} It was waiting for an answer to its interrupt(); the ledger records no "
            f"outcome for the call itself (ledger key {effect.key}), and keeps any effect "
            "it made before asking under that effect's own key."
        )
    return (
        f"{said} Its outcome is unknown (ledger key {effect.key}, {effect.status}): check "
        "before calling it again."
    )


def answers(
    calls: Sequence[Unanswered], how: str, effects: Sequence[Effect]
) -> dict[str, ToolMessage]:
    """The ``ToolMessage`` answering each call, by the call's id."""
    from langchain_core.messages import ToolMessage

    known = effects_of(calls, effects)
    return {
        call.id: ToolMessage(
            answer_text(call, how, known[call.id]),
            tool_call_id=call.id,
            name=call.name,
            status="error",
        )
        for call in calls
    }


def placed(messages: Sequence[BaseMessage], found: dict[str, ToolMessage]) -> list[BaseMessage]:
    """``messages`` with each answer right after its ``AIMessage`` and the results that
    already follow it."""
    from langchain_core.messages import AIMessage, ToolMessage

    left = dict(found)  # each answer placed once
    out: list[BaseMessage] = []
    waiting: list[ToolMessage] = []  # the answers of the last AIMessage, not placed yet
    for message in messages:
        if waiting and not isinstance(message, ToolMessage):
            out.extend(waiting)
            waiting = []
        out.append(message)
        if isinstance(message, AIMessage):
            ids = [str(c.get("id")) for c in message.tool_calls]
            waiting = [left.pop(i) for i in ids if i in left]
    return [*out, *waiting]


def update_of(
    graph: CompiledStateGraph[Any],
    values: dict[str, Any],
    calls: Sequence[Unanswered],
    found: dict[str, ToolMessage],
) -> dict[str, Any]:
    """The state update that places the answers, key by key: the answers alone when they
    all go at the end of a key with a reducer; else the whole list, past the key's reducer
    if it has one (``Overwrite``: any reducer, ``add_messages`` or a user's own)."""
    from langgraph.types import Overwrite

    update: dict[str, Any] = {}
    for key in dict.fromkeys(c.key for c in calls):
        old = list(values.get(key) or [])
        new = placed(old, found)
        if reducer_of(graph.channels.get(key)) is None:
            update[key] = new
        elif new[: len(old)] == old:
            update[key] = new[len(old) :]
        else:
            update[key] = Overwrite(new)
    return update


def tool_node(graph: CompiledStateGraph[Any], stopped: set[str]) -> str:
    """The node to write the answers as: the graph's ``ToolNode`` the stopped step ran,
    or its only one; else the only node the stopped step ran."""
    from langgraph.prebuilt import ToolNode

    nodes = {name for name, node in graph.nodes.items() if isinstance(node.bound, ToolNode)}
    for fits in (nodes & stopped, nodes, stopped & set(graph.nodes)):
        if len(fits) == 1:
            return next(iter(fits))
    raise PermanentError(
        "tool calls a stopped run left without a result cannot be answered: the graph has "
        f"{'no ToolNode' if not nodes else 'several ToolNodes (' + ', '.join(sorted(nodes)) + ')'}"
        " to answer them as; answer each call with a ToolMessage through update_state "
        "as your tool node, then requeue the run"
    )


def answer_stopped_calls(
    graph: CompiledStateGraph[Any],
    snapshot: StateSnapshot,
    run: Run,
    registry: RunRegistry,
    ledger: Ledger,
) -> None:
    """Answer the tool calls the thread's state leaves without a result, as the next run
    ``run`` begins (``snapshot``: the thread's latest state, the stopped run's). The
    stopped step's unfinished tasks are cleared first, the results of those that had
    finished kept (LangGraph's ``update_state`` as ``END``); the answers are then written
    as the graph's tool node (``tools`` in a prebuilt agent), so the state routes on as
    after that node: to the model, never to the stopped tools again. Raises
    :class:`PermanentError` (the run fails, saying what to do) when no node fits."""
    from langgraph.graph import END

    if not unanswered(snapshot.values, messages_keys(snapshot.values)):
        return
    written_by = (snapshot.metadata or {}).get(RUN_KEY)
    by = written_by if isinstance(written_by, str) else None
    stopped = registry.past_run(run.thread_id, by, run.run_number or 1) if by else None
    if not left_by_stop(stopped, by):
        return  # calls a graph leaves unanswered by design, in a run that ended well
    config = graph_config(run.thread_id, recursion_limit=None, lease_token=run.lease_token)
    if by is not None:  # its checkpoints are the stopped run's: a takeover finds it again
        config["configurable"][RUN_KEY] = by
    if snapshot.next:
        graph.update_state(config, None, as_node=END)
    cleared = graph.get_state(config)
    calls = unanswered(cleared.values, messages_keys(cleared.values))
    if not calls:
        flush(graph, run.thread_id)
        return
    how = how_stopped(stopped)
    since = stopped.created_at if stopped is not None else None
    effects = ledger.for_tool_calls(
        run.thread_id, [c.id for c in calls], sorted({c.name for c in calls}), since
    )
    found = answers(calls, how, effects)
    as_node = tool_node(graph, {t.name for t in snapshot.tasks if t.result is None})
    reason = f"{len(calls)} tool call(s) answered, left without a result: the run {how}"
    evidence = {
        "tool_calls": [{"id": c.id, "name": c.name} for c in calls],
        "stopped_run": by,
    }
    update = update_of(graph, cleared.values, calls, found)
    ride = getattr(graph.checkpointer, "ride", None)
    if ride is not None:  # the event commits with the answers' checkpoint, or neither does
        statement = registry.event_statement(
            run.thread_id, EVENT, reason, evidence, lease_token=run.lease_token
        )
        ride(run.thread_id, run.lease_token, [statement])
    graph.update_state(config, update, as_node=as_node)
    flush(graph, run.thread_id)
    if ride is None:
        registry.event(run.thread_id, EVENT, reason, evidence, lease_token=run.lease_token)
