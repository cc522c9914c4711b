"""A person's decision on the action an agent's run waits on: approve it, approve it with
edited arguments, or reject it (the run ends ``failed`` at once, in the transaction that
records the rejection)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from waystone._db.database import Database
from waystone._hints import command
from waystone._runs.registry import Run, RunRegistry
from waystone._runs.signals import APPROVAL, Signal, SignalBox
from waystone._runtime import driver
from waystone.errors import LeaseLost, TransitionNotAllowed
from waystone.preset._approval import parse_decision

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

    from waystone.preset.spec import AgentSpec


@dataclass(frozen=True)
class Decisions:
    """``redact`` (the vault's) gives a decision as it is stored, to compare with the one
    recorded; ``graph_of`` and ``agent_of`` an agent's compiled graph and spec."""

    db: Database
    registry: RunRegistry
    signals: SignalBox
    redact: Callable[[Any], Any]
    graph_of: Callable[[str], CompiledStateGraph[Any]]
    agent_of: Callable[[str], AgentSpec]

    def decide(
        self,
        thread_id: str,
        choice: str,
        by: str,
        comment: str | None,
        args: dict[str, Any] | None,
    ) -> None:
        """Record ``by``'s decision (``approve``, ``edit`` with ``args``, ``reject``) on the
        action the run waits on; the same decision again is recorded as a repeat, another
        one refused."""
        run = self.registry.get(thread_id)
        # read whatever the run's state: a repeat of the decision that moved it on is one
        waiting_on = driver.pending_interrupt(self.graph_of(run.agent), thread_id)
        pending = waiting_on.value if waiting_on is not None else None
        not_waiting = (
            f"run {thread_id} is {run.state} and not waiting for an approval; "
            f"nothing to decide (see {command('status', thread_id)})"
        )
        if waiting_on is None or pending is None or driver.kind_of(waiting_on) != APPROVAL:
            raise TransitionNotAllowed(not_waiting)
        raw: dict[str, Any] = {
            "choice": choice,
            "digest": pending["digest"],
            "key": pending["idempotency_key"],
            "by": by,
        }
        if comment is not None:
            raw["comment"] = comment
        if args is not None:
            raw["args"] = args
        decision = parse_decision(raw)
        if decision.args is not None:
            tool = self.agent_of(run.agent).tool(pending["tool"])
            assert tool is not None
            tool.validate_edit(pending["args"], decision.args)
        record = decision.to_dict()
        summary = f"{choice} by {by}" + (f": {comment}" if comment else "")
        if run.state != "waiting":
            found = self.signals.get(thread_id, APPROVAL, waiting_on.id)
            if found is None:
                raise TransitionNotAllowed(not_waiting)
            signal, created = found, False
        elif choice == "reject":
            signal, created = self._reject(run, waiting_on.id, record, summary)
        else:
            signal, created = self.signals.record(
                thread_id, APPROVAL, waiting_on.id, record, actor=by
            )
            if created:
                self.registry.event(thread_id, "decision", summary, {"decision": record}, actor=by)
        if not created:
            if signal.payload != self.redact(record):
                raise TransitionNotAllowed(
                    f"a different decision ({signal.payload.get('choice')} by "
                    f"{signal.payload.get('by')}) is already recorded for this action"
                )
            self.registry.event(
                thread_id, "decision-repeated", summary, {"decision": record}, actor=by
            )

    def _reject(
        self, run: Run, interrupt_id: str, record: dict[str, Any], summary: str
    ) -> tuple[Signal, bool]:
        """Record a rejection and end the run with it, in one transaction: the decision, its
        event and the move from ``waiting`` to ``failed`` under the lease token the run was
        read with. A claim that commits first (after another decision, or a takeover)
        keeps the run, and nothing is changed. The graph still waits in ``authorize``; a
        requeue asks again (see :meth:`rejected`)."""
        thread_id, by = run.thread_id, record["by"]
        try:
            with self.db.transaction() as conn:
                signal, created = self.signals.record(
                    thread_id, APPROVAL, interrupt_id, record, actor=by, conn=conn
                )
                if not created:
                    return signal, False
                self.registry.event(
                    thread_id, "decision", summary, {"decision": record}, actor=by, conn=conn
                )
                self.registry.transition(
                    thread_id,
                    "failed",
                    reason=f"rejected by {by}: {record['comment']}",
                    evidence={"decision": record},
                    from_states=("waiting",),
                    lease_token=run.lease_token,
                    actor=by,
                    spend_signals=True,  # the rejection itself, and any stale approval
                    conn=conn,
                )
        except (LeaseLost, TransitionNotAllowed):
            current = self.registry.get(thread_id)
            raise TransitionNotAllowed(
                f"run {thread_id} moved on while the rejection was being recorded (it is "
                f"{current.state} now); nothing was changed (see {command('status', thread_id)})"
            ) from None
        return signal, True

    def rejected(self, graph: CompiledStateGraph[Any], thread_id: str) -> bool:
        """Whether the run ended on the rejection of the approval its graph waits on."""
        waiting_on = driver.pending_interrupt(graph, thread_id)
        if waiting_on is None or driver.kind_of(waiting_on) != APPROVAL:
            return False
        decision = self.signals.get(thread_id, APPROVAL, waiting_on.id)
        return (
            decision is not None
            and decision.consumed_at is not None
            and decision.payload.get("choice") == "reject"
        )
