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
    ``settings``: the command's; None: ``WAYSTONE_AGENTS`` read now, and the refund
    agent's ``WAYSTONE_PAYMENTS_URL`` at each call (a test's runtime, its provider moving)."""
    from waystone.config import Settings
    from waystone.examples import refund
    from waystone.preset._agents import named_agents

    if settings is None:
        return {"refund": refund.build(), **named_agents(Settings.read("agents"))}
    demo = refund.build(provider_url=settings.payments_url)
    return {"refund": demo, **named_agents(settings.agents)}
