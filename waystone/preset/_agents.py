"""Which agents a process knows: the examples, plus those ``WAYSTONE_AGENTS`` names."""

from __future__ import annotations

import os

from waystone._imports import import_object
from waystone.errors import BadInput
from waystone.preset.spec import AgentSpec


def default_agents() -> dict[str, AgentSpec]:
    """The example agents, plus those named by ``WAYSTONE_AGENTS``.

    ``WAYSTONE_AGENTS="mypkg.agents:build_payables,other.mod:AGENT"`` names objects that are
    an :class:`AgentSpec` or a no-argument callable returning one, so the CLI and workers
    know your agents too.
    """
    from waystone.examples import refund

    agents = {"refund": refund.build()}
    for spec in load_agents(os.environ.get("WAYSTONE_AGENTS", "")):
        agents[spec.name] = spec
    return agents


def load_agents(text: str) -> list[AgentSpec]:
    """The agents ``text`` names (``module:attribute``, comma-separated)."""
    found: list[AgentSpec] = []
    for ref in (part.strip() for part in text.split(",")):
        if not ref:
            continue
        obj = import_object("WAYSTONE_AGENTS", ref)
        spec = obj() if callable(obj) and not isinstance(obj, AgentSpec) else obj
        if not isinstance(spec, AgentSpec):
            raise BadInput(f"WAYSTONE_AGENTS: {ref!r} is not an AgentSpec")
        found.append(spec)
    return found
