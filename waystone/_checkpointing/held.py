"""What the saver holds for a thread's next save, which writes may wait for it, and how it
records a held save."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from langgraph._internal._constants import CONFIG_KEY_CHECKPOINT_NS, NS_SEP
from langgraph.checkpoint.base import WRITES_IDX_MAP
from langgraph.config import get_config
from langgraph.constants import START, TASKS

WriteRow = tuple[str, str, str, str, str, int, str, str, bytes]
# Given a statement's rows once its transaction has committed.
Answer = Callable[[list[dict[str, Any]]], None]
# (sql, params or rows, executemany: True; execute: False; execute, then answer its rows)
Statement = tuple[str, Any, bool | Answer]
LEASE_KEY = "lease_token"
PULL_TASK = "~__pregel_pull, "  # a task path's start for a node's own (pulled) task
PUSH_TASK = "~__pregel_push, "  # ... and for a task a Send started


def may_hold(
    configurable: dict[str, Any],
    writes: Sequence[tuple[str, Any]],
    task_path: str,
    *,
    lone: bool = False,
) -> bool:
    """Whether a task's writes may wait for the next save: a fenced run's node, or the
    ``Send`` task that is its step's only task (``lone``), with no error, interrupt or
    resume value among them."""
    return (
        configurable.get(LEASE_KEY) is not None
        and (task_path.startswith(PULL_TASK) or (lone and task_path.startswith(PUSH_TASK)))
        and not any(channel in WRITES_IDX_MAP for channel, _ in writes)
    )


def one_send(values: dict[str, Any]) -> bool:
    """Whether the step after a checkpoint with these channel values runs one task, a
    ``Send``: one packet sent, and no node triggered (a graph's nodes are triggered through
    its ``branch:``/``join:`` channels, or ``__start__``). Should another task run in it
    after all, its writes take the held ones out with them, as a second node's would."""
    sent = values.get(TASKS)
    return (
        isinstance(sent, list)
        and len(sent) == 1
        and not any(k.startswith(("branch:", "join:")) or k == START for k in values)
    )


def saved_in() -> str:
    """The checkpoint namespace whose saves commit the writes of the LangGraph task calling:
    its own namespace less its last part (a subgraph's task is saved in the subgraph's
    namespace, with the subgraph's checkpoints); the graph's own (``""``) outside a task."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # not called from a task
        return ""
    return str(configurable.get(CONFIG_KEY_CHECKPOINT_NS) or "").rpartition(NS_SEP)[0]


def until_asked(statements: list[Statement]) -> tuple[list[Statement], list[Statement]]:
    """``statements`` split before the first one whose rows are wanted (an answer): what
    may go out now, and what must wait for a checkpoint, in order."""
    for i, (_, _, how) in enumerate(statements):
        if not isinstance(how, bool):
            return statements[:i], statements[i:]
    return statements, []


class Held:
    """What a thread's next save commits with its own, in its transaction and before it:
    held checkpoints (their blobs and rows, as statements), statements that ride with the
    next checkpoint (a node's own ledger changes), and the pending writes of the latest
    checkpoint's task."""

    def __init__(
        self, lease_token: int, rows: list[WriteRow], statements: list[Statement] | None = None
    ) -> None:
        self.lease_token = lease_token
        self.rows = rows
        self.statements = statements or []

    def all(self, insert_writes: str) -> list[Statement]:
        if not self.rows:
            return self.statements
        return [*self.statements, (insert_writes, self.rows, True)]


class Batch:
    """One save's round trip, for the async saver to send: the lease token to set, then
    the statements, pipelined as one implicit transaction; ``own``: the save's own
    statements are among them (else it only flushes what was held); ``then``: what to do
    once it committed."""

    def __init__(self, token: int | None, statements: list[Statement], own: bool) -> None:
        self.token = token
        self.statements = statements
        self.own = own
        self.then: list[Callable[[], None]] = []
        self.after: list[Future[None]] = []  # saves it must not commit before (`Out`)
        self.sent: list[Callable[[], None]] = []  # once it is sent, committed or not


class Recorder:
    """A cursor that keeps the statements of a held save instead of sending them."""

    def __init__(self) -> None:
        self.statements: list[Statement] = []

    def execute(self, query: str, params: Any = None) -> None:
        self.statements.append((query, params, False))

    def executemany(self, query: str, params_seq: Any) -> None:
        self.statements.append((query, list(params_seq), True))


class Out:
    """Saves on their way to Postgres with what was held for a slot's next save: the
    writes of a task that are not held (a ``Send`` branch with siblings, a second task)
    take what its siblings' effects rode there, as a reader's flush does. LangGraph
    saves those writes in the background and does not wait for them before it saves the
    step's checkpoint and starts the next step; the checkpoint's save waits for them, so
    a receipt is never committed after the checkpoint of a step past its effect."""

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock  # the saver's, over its held slots: taking and counting are one
        self._by: dict[tuple[str, str], set[Future[None]]] = {}

    def take(self, where: tuple[str, str]) -> Callable[[], None]:
        """Count a save of what was taken from ``where`` (under the lock); what to call
        once that save has been sent, committed or not."""
        done: Future[None] = Future()
        self._by.setdefault(where, set()).add(done)

        def sent() -> None:
            with self._lock:
                going = self._by.get(where, set())
                going.discard(done)
                if not going:
                    self._by.pop(where, None)
            done.set_result(None)

        return sent

    def of(self, where: tuple[str, str]) -> list[Future[None]]:
        """The saves of what was taken from ``where`` not yet sent (under the lock)."""
        return list(self._by.get(where, ()))
