"""The agents the command line's runtimes drive (its commands, the worker, the server):
the demo's refund agent, and those ``WAYSTONE_AGENTS`` names (one named ``refund``
replaces the demo's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from waystone.config import Settings
    from waystone.preset.spec import AgentSpec


def default_agents(settings: Settings | None = None) -> dict[str, AgentSpec]:
    """Built when a runtime first needs them: a command that only reads runs loads none.
    ``settings``: the command's (None: ``WAYSTONE_AGENTS`` read now, for a test's runtime)."""
    from waystone.config import Settings
    from waystone.examples import refund
    from waystone.preset._agents import named_agents

    refs = Settings.read("agents") if settings is None else settings.agents
    return {"refund": refund.build(), **named_agents(refs)}
