"""Tool calls a stopped run left without a result, answered so that its thread can take
the next message.

A run stopped in the middle of tool calls (cancelled, interrupted or rolled back by a
double-text, failed) leaves an ``AIMessage`` whose tool calls have no ``ToolMessage``;
every chat model, and LangGraph's own check (``_validate_chat_history``), refuses such a
history. Each of those calls is answered with a ``ToolMessage`` (same id and name,
``status="error"``) saying that the run stopped, and what the effect ledger knows of the
call: applied anyway (with its receipt's id), or of unknown outcome.

Who writes the answers, and when: the run that starts next on the thread, under its own
lease, before its input is applied (:func:`answer_stopped_calls`, from the driver). The
stop itself cannot: the person or process that cancels holds no lease, and the stopped
worker may still be in the middle of its step (its late writes are refused by the fence,
so nothing it does can land after the answers). The next run's claim raised the lease
token past every stopped worker's, and its writes are fenced by it: the answers are a new
checkpoint, through the fenced saver, written by the only process that may write the
thread. They carry no run id in their metadata, so a drive that crashes after writing them
and is taken over applies its input all the same (and finds nothing left to answer).
Only a state the stopped run left is answered: a graph may end a run that goes well on
calls it never answers, by design. Cost: nothing per step; at the start of a run whose
thread's state has calls without results, a read of the thread's past runs, and after a
stop two reads of the state, one of the ledger and two checkpoints.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from waystone._runs.driver import RUN_KEY, graph_config
from waystone._runs.multitask import stopped_as

if TYPE_CHECKING:
    from langchain_core.messages import ToolMessage
    from langchain_core.runnables import RunnableConfig
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.types import StateSnapshot

    from waystone._runs.registry import PastRun, Run, RunRegistry
    from waystone.effects._ledger import Effect, Ledger

logger = logging.getLogger(__name__)

MESSAGES = "messages"  # the key LangGraph's prebuilt agents keep their messages under
EVENT = "tool-calls-answered"  # the run's history event that lists the answers


@dataclass(frozen=True)
class Unanswered:
    """A tool call without a result, under the state key ``key``."""

    key: str
    id: str
    name: str
    args: dict[str, Any]


def messages_keys(graph: CompiledStateGraph[Any]) -> list[str]:
    """The state keys that hold a chat history: each channel reduced by ``add_messages``
    (any name), and ``messages`` (LangGraph's prebuilt agents' key, whatever its reducer)."""
    found = [name for name, channel in graph.channels.items() if _adds_messages(channel)]
    if MESSAGES in graph.channels and MESSAGES not in found:
        found.append(MESSAGES)
    return found


def _adds_messages(channel: Any) -> bool:
    operator = getattr(channel, "operator", None)
    return getattr(operator, "__name__", None) in ("add_messages", "_add_messages")


def unanswered(values: Any, keys: Iterable[str]) -> list[Unanswered]:
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


def how_stopped(previous: PastRun | None) -> str:
    """How the run before this one stopped, in a few words, from its record."""
    if previous is None:
        return "stopped"
    how = stopped_as(previous.evidence)
    if how is not None:
        return {"interrupt": "interrupted", "rollback": "rolled back"}.get(how, "superseded")
    if previous.evidence.get("cancelled"):
        return "cancelled"
    return "failed" if previous.state == "failed" else "stopped"


def left_by_stop(previous: PastRun | None, written_by: str | None) -> bool:
    """Whether the thread's latest state, written by run ``written_by`` (``None``: by an
    update, such as a half-done answer), is where a stopped run left it: the run before
    this one ended ``failed`` (cancelled, stopped by a double-text, failed), and the state
    is its own, not an earlier run's (a rollback's, or one it never wrote to)."""
    if previous is None or previous.state != "failed":
        return False
    return written_by is None or written_by == previous.run_id


def effect_of(call: Unanswered, effects: Sequence[Effect], since: datetime | None) -> Effect | None:
    """The ledger's record of ``call``: the latest effect of its tool with its arguments,
    made after ``since`` (the end of the run before the stopped one), if any."""
    mine = [
        e
        for e in effects
        if e.tool == call.name and e.args == call.args and (since is None or e.created_at > since)
    ]
    return max(mine, key=lambda e: e.created_at) if mine else None


def receipt_id(receipt: dict[str, Any] | None) -> str | None:
    """The provider's id in a receipt: its ``id``, or the ``id`` of what a durable tool
    returned (kept as ``output``)."""
    for found in (receipt, (receipt or {}).get("output")):
        if isinstance(found, dict) and found.get("id") is not None:
            return str(found["id"])
    return None


def answer_text(call: Unanswered, how: str, effect: Effect | None) -> str:
    """What the model is told of a call its run stopped in the middle of."""
    said = f"Tool call {call.name} was not completed: the run was {how} while it was made."
    if effect is None:
        return f"{said} It was not retried; call it again if it is still needed."
    if effect.status in ("applied", "confirmed"):
        ident = receipt_id(effect.receipt)
        shown = f" (receipt {ident})" if ident is not None else ""
        return (
            f"{said} Its effect was applied all the same{shown}, ledger key {effect.key}: "
            "do not call it again for this."
        )
    if effect.status == "failed":
        return f"{said} It failed: {effect.error or 'no detail'}."
    if effect.status == "interrupted":  # it stopped on its own interrupt(), unanswered
        return f"{said} It was waiting for an answer to interrupt() and made no effect."
    return (
        f"{said} Its outcome is unknown (ledger key {effect.key}, {effect.status}): check "
        "before calling it again."
    )


def answers(
    calls: Sequence[Unanswered], how: str, effects: Sequence[Effect], since: datetime | None
) -> dict[str, list[ToolMessage]]:
    """The ``ToolMessage`` answering each call, by state key."""
    from langchain_core.messages import ToolMessage

    by_key: dict[str, list[ToolMessage]] = {}
    for call in calls:
        text = answer_text(call, how, effect_of(call, effects, since))
        message = ToolMessage(text, tool_call_id=call.id, name=call.name, status="error")
        by_key.setdefault(call.key, []).append(message)
    return by_key


def update_of(
    graph: CompiledStateGraph[Any], values: dict[str, Any], found: dict[str, list[ToolMessage]]
) -> dict[str, Any]:
    """The state update that adds the answers: given to a key's reducer to append, or the
    key's whole list with them appended, for a key without one."""
    update: dict[str, Any] = {}
    for key, messages in found.items():
        reduced = getattr(graph.channels.get(key), "operator", None) is not None
        update[key] = messages if reduced else [*values.get(key, []), *messages]
    return update


def answer_stopped_calls(
    graph: CompiledStateGraph[Any],
    snapshot: StateSnapshot,
    run: Run,
    registry: RunRegistry,
    ledger: Ledger,
) -> int:
    """Answer the tool calls the thread's state leaves without a result, as the next run
    ``run`` begins (``snapshot``: the thread's latest state, the stopped run's); how many
    were answered. The stopped step's unfinished tasks are cleared first, the results of
    those that had finished kept (LangGraph's ``update_state`` as ``END``); the answers
    are then written as the node those tasks ran (``tools`` in a prebuilt agent), so the
    state routes on as after that node: to the model, never to the stopped tools again."""
    from langgraph.graph import END

    keys = messages_keys(graph)
    if not keys or not unanswered(snapshot.values, keys):
        return 0
    past = registry.past_runs(run.thread_id)
    previous = past[-1] if past else None
    written_by = (snapshot.metadata or {}).get(RUN_KEY)
    if not left_by_stop(previous, written_by if isinstance(written_by, str) else None):
        return 0  # calls a graph leaves unanswered by design, in a run that ended well
    config = graph_config(run.thread_id, recursion_limit=None, lease_token=run.lease_token)
    if snapshot.next:
        graph.update_state(config, None, as_node=END)
    cleared = graph.get_state(config)
    calls = unanswered(cleared.values, keys)
    if not calls:
        _flush(graph, run.thread_id)
        return 0
    how = how_stopped(previous)
    since = past[-2].ended_at if len(past) > 1 else None
    found = answers(calls, how, ledger.for_thread(run.thread_id), since)
    stopped_nodes = {t.name for t in snapshot.tasks if t.result is None}
    event = (
        EVENT,
        f"{len(calls)} tool call(s) left without a result by the {how} run answered",
        {
            "tool_calls": [{"id": c.id, "name": c.name} for c in calls],
            "stopped_run": previous.run_id if previous is not None else None,
        },
    )
    update = update_of(graph, cleared.values, found)
    as_node = next(iter(stopped_nodes)) if len(stopped_nodes) == 1 else None
    return len(calls) if _write(graph, config, run, registry, update, as_node, event) else 0


def _write(
    graph: CompiledStateGraph[Any],
    config: RunnableConfig,
    run: Run,
    registry: RunRegistry,
    update: dict[str, Any],
    as_node: str | None,
    event: tuple[str, str, dict[str, Any]],
) -> bool:
    """Write the answers as ``as_node``, the event riding with their checkpoint; with no
    node known (a half-done answer, taken over), as LangGraph infers one, the event after
    it. Whether they were written."""
    from langgraph.errors import InvalidUpdateError

    kind, reason, evidence = event
    ride = getattr(graph.checkpointer, "ride", None) if as_node is not None else None
    if ride is not None:  # the event commits with the answers' checkpoint, or neither does
        statement = registry.event_statement(
            run.thread_id, kind, reason, evidence, lease_token=run.lease_token
        )
        ride(run.thread_id, run.lease_token, [statement])
        graph.update_state(config, update, as_node=as_node)
        _flush(graph, run.thread_id)
        return True
    try:
        graph.update_state(config, update, as_node=as_node)
    except InvalidUpdateError:
        logger.warning(
            "could not answer the tool calls a stopped run left: no node to write as",
            exc_info=True,
            extra={"thread_id": run.thread_id},
        )
        return False
    _flush(graph, run.thread_id)
    registry.event(run.thread_id, kind, reason, evidence, lease_token=run.lease_token)
    return True


def _flush(graph: CompiledStateGraph[Any], thread_id: str) -> None:
    flush = getattr(graph.checkpointer, "flush", None)
    if flush is not None:
        flush(thread_id)
