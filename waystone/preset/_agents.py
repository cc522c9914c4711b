"""The agents ``WAYSTONE_AGENTS`` names (``module:attribute``, comma-separated)."""

from __future__ import annotations

import os

from waystone._imports import import_object
from waystone.errors import BadInput
from waystone.preset.spec import AgentSpec


def named_agents() -> dict[str, AgentSpec]:
    """The agents ``WAYSTONE_AGENTS`` names, by name.

    ``WAYSTONE_AGENTS="mypkg.agents:build_payables,other.mod:AGENT"`` names objects that are
    an :class:`AgentSpec` or a no-argument callable returning one, so the CLI and workers
    know your agents too.
    """
    return {spec.name: spec for spec in load_agents(os.environ.get("WAYSTONE_AGENTS", ""))}


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
