"""Where an effect made inside a node of any graph finds its run, its ledger and its key.

When Waystone drives a graph, the config's ``configurable`` holds the run's
``thread_id``, its ``lease_token``, its ``key_namespace`` (the thread keys derive from: a
fork's root) and, under :data:`CONTEXT_KEY`, an :class:`EffectContext`: the ledger and the
run registry an effect is recorded with. :func:`call_site` reads them, with LangGraph's
identity of the task making the call, from the config LangGraph gives the node.

The task's identity is its checkpoint namespace (``node:task_id``, with its parents' for
a subgraph, and a count for a subgraph called more than once). LangGraph derives the task
id from the checkpoint the step started from, its namespace, the step, the node and its
triggers (a ``Send``'s index for a fan-out task): the checkpoint is stored before the task
runs, so a task re-executed after a crash, after ``interrupt()`` and ``Command(resume=...)``,
or after a requeue gets the same id, and a fork (whose checkpoints keep their ids) too;
two tasks of one step, two ``Send`` branches and a subgraph's tasks get different ones.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from langgraph._internal._constants import (
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_RUNTIME,
    CONFIG_KEY_SCRATCHPAD,
)
from langgraph.config import get_config

from waystone._checkpointing.lease_guards import lease_ends, lease_ok, progressed
from waystone._runs.registry import RunRegistry
from waystone.effects._keys import canonical_json
from waystone.effects._ledger import Ledger
from waystone.effects._runner import EffectRunner
from waystone.errors import NotDurable

CONTEXT_KEY = "__waystone__"  # configurable[CONTEXT_KEY]: the EffectContext of the drive


@dataclass(frozen=True)
class EffectContext:
    """What an effect needs from the runtime that drives the graph: the ledger, the run
    registry (events, and whether the run is still this lease's), and the vault's
    ``redact`` and ``reveal``: the saver's ``redact``, since a node re-executed from a
    checkpoint reads its state's personal data as the vault's tokens, so keys derive
    from arguments as redacted (the same tokens every time); ``reveal`` gives a provider
    the real values back."""

    ledger: Ledger
    registry: RunRegistry
    reveal: Callable[[Any], Any] = field(default=lambda value: value)
    redact: Callable[[Any], Any] = field(default=lambda value: value)
    # commits what the saver holds for a thread (a new run's first checkpoints, held to go
    # with its first node's): the step's checkpoint must be durable before an effect whose
    # key derives from it, or a crash would give the re-run task another id
    flush: Callable[[str], None] = field(default=lambda thread_id: None)

    def event(
        self, thread_id: str, fence: int | None, kind: str, reason: str, evidence: dict[str, Any]
    ) -> None:
        progressed(thread_id, fence)  # a retry, a reconciliation: the step goes on
        self.registry.event(thread_id, kind, reason, evidence, lease_token=fence)

    def runner(self, thread_id: str, lease_token: int | None) -> EffectRunner:
        """The effect runner of run ``thread_id`` under lease ``lease_token``: every ledger
        write carries the token, and a provider call is made only while the lease holds."""

        def event(kind: str, reason: str, evidence: dict[str, Any]) -> None:
            self.event(thread_id, lease_token, kind, reason, evidence)

        return EffectRunner(
            ledger=self.ledger,
            event=event,
            fence=lease_token,
            reveal=self.reveal,
            lease_ok=lambda: lease_ok(thread_id, lease_token),
            lease_ends=lambda: lease_ends(thread_id, lease_token),
            still_held=lambda: lease_token is None or self.registry.holds(thread_id, lease_token),
            progressed=lambda: progressed(thread_id, lease_token),
        )


@dataclass(frozen=True)
class CallSite:
    """One call of an effect, as the task making it sees it."""

    context: EffectContext
    thread_id: str
    fence: int | None
    namespace: str  # what keys derive from: the thread, or a fork's root
    task: str  # the task's checkpoint namespace
    step: int  # LangGraph's step of the task: the ledger's ordinal
    execution: tuple[object, int]  # this execution of the task, and its attempt


_THROUGH: ContextVar[bool] = ContextVar("waystone_effects_through", default=False)


@contextmanager
def without_ledger() -> Iterator[None]:
    """Inside, an effect called where Waystone does not drive the graph calls its function
    directly (for a test of a graph on another saver): no ledger, no exactly-once."""
    token = _THROUGH.set(True)
    try:
        yield
    finally:
        _THROUGH.reset(token)


def calling_through() -> bool:
    return _THROUGH.get()


def call_site(effect: str) -> CallSite | None:
    """The call site of effect ``effect`` in the task running now; ``None`` inside
    :func:`without_ledger` where Waystone does not drive the graph. Raises
    :class:`NotDurable` when neither."""
    try:
        config = get_config()
    except RuntimeError:
        config = {}
    configurable: dict[str, Any] = config.get("configurable") or {}
    context = configurable.get(CONTEXT_KEY)
    if not isinstance(context, EffectContext):
        if calling_through():
            return None
        raise NotDurable(
            f"{effect} is a Waystone effect called outside a run Waystone drives, where "
            "nothing makes it exactly-once: register the graph with Runtime(graphs=...) "
            "and start it with Waystone; to call it without the ledger (a test on "
            "another saver), call the graph inside `with "
            "waystone.effects.context.without_ledger():`"
        )
    task = configurable.get(CONFIG_KEY_CHECKPOINT_NS)
    scratchpad = configurable.get(CONFIG_KEY_SCRATCHPAD)
    if not task or scratchpad is None:
        raise NotDurable(
            f"{effect} was called outside a LangGraph task: call it from a node (or a tool "
            "a node runs) of the graph Waystone drives"
        )
    thread_id = str(configurable["thread_id"])
    token = configurable.get("lease_token")
    runtime = configurable.get(CONFIG_KEY_RUNTIME)
    info = getattr(runtime, "execution_info", None)
    attempt = int(getattr(info, "node_attempt", 1) or 1)  # a LangGraph retry of the node
    metadata = config.get("metadata") or {}
    return CallSite(
        context=context,
        thread_id=thread_id,
        fence=int(token) if token is not None else None,
        namespace=str(configurable.get("key_namespace") or thread_id),
        task=str(task),
        step=int(metadata.get("langgraph_step", 0)),
        execution=(scratchpad, attempt),
    )


EXECUTIONS_KEPT = 4096  # task executions whose calls are counted at once, in this process


class _Calls:
    """How many times each effect with the same arguments was called so far in each task
    execution: the second identical call of a node gets another key than the first.

    An execution is LangGraph's scratchpad of the task (new each time the task is
    prepared: a resume, a re-run after a crash) and the node's attempt (a LangGraph retry
    reuses the scratchpad). Counting by arguments keeps keys independent of the order in
    which calls with different arguments run (``asyncio.gather``, threads). Entries hold
    their scratchpad, so its id is not reused while counted; the oldest go past
    ``EXECUTIONS_KEPT``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by: OrderedDict[tuple[int, int], tuple[object, Counter[str]]] = OrderedDict()

    def next(self, execution: tuple[object, int], effect: str, args: dict[str, Any]) -> int:
        scratchpad, attempt = execution
        slot = (id(scratchpad), attempt)
        what = canonical_json([effect, args])
        with self._lock:
            entry = self._by.get(slot)
            if entry is None or entry[0] is not scratchpad:
                entry = (scratchpad, Counter())
                self._by[slot] = entry
            self._by.move_to_end(slot)
            while len(self._by) > EXECUTIONS_KEPT:
                self._by.popitem(last=False)
            count = entry[1][what]
            entry[1][what] = count + 1
        return count


CALLS = _Calls()
