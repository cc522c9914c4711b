"""Reopen a graph that ended with an outcome, for a requeue: it resumes just before the
node that ended it, as if the node before had just returned, routed as that node routes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from waystone.preset._graph.builder import goto
from waystone.preset._graph.state import applied

if TYPE_CHECKING:
    from waystone.preset.spec import AgentSpec

# The node that ended a run -> the node its requeue resumes after (so routing re-enters it):
# execute again with the same action and key, confirm again, or ask again.
RESUME_AS = {
    "execute": "authorize",
    "confirm": "execute",
    "authorize": "propose",
    "propose": "verify",
    "verify": "verify",
}


def reopen(
    graph: CompiledStateGraph[Any],
    agent: AgentSpec,
    config: RunnableConfig,
    *,
    ended_at: str | None = None,
) -> None:
    """A graph that ended with an outcome resumes just before the node that ended it.
    ``ended_at`` names that node for a run that ended while its graph did not: a rejection
    ends the run with its graph still waiting in ``authorize``."""
    current = graph.get_state(config).values
    outcome = current.get("outcome")
    if ended_at is None:
        if not outcome or outcome.get("state") == "done":
            return  # it stopped on an error: resuming re-runs the failed step as it is
        ended_at = outcome.get("at", "verify")
    as_node = RESUME_AS.get(ended_at, "verify")
    values: dict[str, Any] = {"outcome": None}
    if as_node in ("propose", "verify"):
        values |= {"decision": None, "failure": None}
    # as if ``as_node`` had just returned ``values``: routed as that node routes
    update = Command(update=values, goto=goto(agent, as_node, applied(current, values)))
    graph.update_state(config, update, as_node=as_node)
