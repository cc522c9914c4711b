"""The agent preset's entry in a runtime's catalog: its five-node graph, built on the
runtime's parts, and how a run of it goes (see :class:`waystone._runs.catalog.Entry`).

A run of the preset starts from the goal and input, ends on the outcome its graph records
(in that checkpoint's transaction), keeps its thread to itself, is reopened before a
requeue, and waits for a person's decision on the actions its policy holds back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from waystone._runs.catalog import Entry
from waystone._runs.run_config import graph_config
from waystone.errors import BadInput
from waystone.preset._decisions import Decisions
from waystone.preset._graph.builder import build_graph
from waystone.preset._graph.ports import Ports
from waystone.preset._graph.reopen import reopen
from waystone.preset._graph.state import initial_state
from waystone.preset.proposers import correction_budget

if TYPE_CHECKING:
    from waystone._runs.parts import Parts
    from waystone._runs.registry import Run
    from waystone.preset.spec import AgentSpec


def agent_entry(spec: AgentSpec, parts: Parts) -> Entry:
    settings = parts.settings
    ports = Ports(
        agent=spec,
        ledger=parts.ledger,
        registry=parts.registry,
        reveal=parts.vault.reveal,
        model_timeout_s=settings.model_timeout_s,
        tool_timeouts=settings.tool_timeouts,
        tool_settle=settings.tool_settle,
    )
    graph = build_graph(ports, parts.saver)
    decisions = Decisions(
        parts.db, parts.registry, parts.signals, parts.vault.redact, lambda _: graph, lambda _: spec
    )

    def check_input(value: Any) -> Any:
        if not isinstance(value, dict):
            raise BadInput("--input must be a JSON object")
        return spec.validate_input(value)

    def reopened(run: Run) -> None:
        rejected = decisions.rejected(graph, run.thread_id)
        config = graph_config(run.thread_id, lease_token=run.lease_token)
        reopen(graph, spec, config, ended_at="authorize" if rejected else None)

    return Entry(
        graph=graph,
        step_budget_s=ports.step_budget(settings.step_margin_s),
        check_input=check_input,
        describe=spec.describe_goal,
        # each step's few nodes, and each correction of its proposal
        recursion_limit=spec.max_steps * (8 + correction_budget(spec.proposer)) + 20,
        first_input=lambda run: initial_state(run.goal, run.input),
        ending=_ending,
        one_run=True,
        effects_in_nodes=False,  # its nodes reach the ledger through their ports
        reopen=reopened,
        decide=decisions.decide,
    )


def _ending(values: dict[str, Any]) -> dict[str, Any] | None:
    """The run's end as the graph records it: its outcome, and the last of its evidence."""
    outcome = values.get("outcome")
    if not outcome:
        return None
    return {"outcome": outcome, "evidence": list(values.get("evidence") or [])[-5:]}
