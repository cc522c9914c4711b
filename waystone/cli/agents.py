"""The agents the command line's runtimes drive (its commands, the worker, the server):
the demo's refund agent, and those ``WAYSTONE_AGENTS`` names (one named ``refund``
replaces the demo's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from waystone.preset.spec import AgentSpec


def default_agents() -> dict[str, AgentSpec]:
    """Built when a runtime first needs them: a command that only reads runs loads none."""
    from waystone.examples import refund
    from waystone.preset._agents import named_agents

    return {"refund": refund.build(), **named_agents()}
