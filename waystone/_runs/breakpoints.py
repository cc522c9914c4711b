"""Breakpoints a run was created with (LangGraph's ``interrupt_before`` / ``interrupt_after``,
given as run options): a run that stopped at one waits there as on an interrupt of its own,
with nothing pending in the graph, until a value (any; the API's resume with none) lets it
go on. Only runs given breakpoints are read for them, once, when they stop."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from waystone._runs.run_config import graph_config
from waystone._runs.signals import RESUME

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

    from waystone._runs.registry import Run, RunRegistry

PREFIX = "breakpoint-"  # a breakpoint's wait id: this and its checkpoint's id


def only_breakpoints(interrupts: list[dict[str, Any]]) -> bool:
    """Whether a waiting run's pending interrupts (as shown) are a breakpoint's."""
    return bool(interrupts) and all(str(i["id"]).startswith(PREFIX) for i in interrupts)


def stopped_at(graph: CompiledStateGraph[Any], thread_id: str) -> dict[str, Any] | None:
    """The breakpoint the thread's graph stopped at, as a pending interrupt is shown
    (``{"id", "value"}``): nodes still to run and none of its own interrupts pending;
    ``None`` when it ended or waits on an ``interrupt()``."""
    snapshot = graph.get_state(graph_config(thread_id))
    if not snapshot.next or snapshot.interrupts or not snapshot.config:
        return None
    checkpoint_id = snapshot.config["configurable"]["checkpoint_id"]
    return {"id": f"{PREFIX}{checkpoint_id}", "value": {"breakpoint": list(snapshot.next)}}


def wait(registry: RunRegistry, run: Run, stopped: dict[str, Any], conn: Any) -> Run:
    """The run, waiting at the breakpoint for a value (``resume``)."""
    nodes = ", ".join(stopped["value"]["breakpoint"])
    return registry.transition(
        run.thread_id,
        "waiting",
        reason=f"stopped at a breakpoint, before {nodes}: waiting for a resume",
        from_states=("running",),
        evidence={"interrupts": [stopped]},
        lease_token=run.lease_token,
        waiting_for=RESUME,
        wait_id=stopped["id"],
        conn=conn,
    )
