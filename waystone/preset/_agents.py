"""The agents ``WAYSTONE_AGENTS`` names (``module:attribute``, comma-separated)."""

from __future__ import annotations

from collections.abc import Iterable

from waystone._imports import import_object
from waystone.errors import BadInput
from waystone.preset.spec import AgentSpec


def named_agents(refs: Iterable[str]) -> dict[str, AgentSpec]:
    """The agents ``refs`` name (``settings.agents``, ``WAYSTONE_AGENTS``'s), by name.

    ``WAYSTONE_AGENTS="mypkg.agents:build_payables,other.mod:AGENT"`` names objects that are
    an :class:`AgentSpec` or a no-argument callable returning one, so the CLI and workers
    know your agents too.
    """
    return {spec.name: spec for spec in load_agents(refs)}


def load_agents(refs: Iterable[str]) -> list[AgentSpec]:
    """The agents ``refs`` name (``module:attribute`` each)."""
    found: list[AgentSpec] = []
    for ref in refs:
        obj = import_object("WAYSTONE_AGENTS", ref)
        spec = obj() if callable(obj) and not isinstance(obj, AgentSpec) else obj
        if not isinstance(spec, AgentSpec):
            raise BadInput(f"WAYSTONE_AGENTS: {ref!r} is not an AgentSpec")
        found.append(spec)
    return found
