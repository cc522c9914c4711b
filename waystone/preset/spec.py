"""What an agent is to Waystone: tools, a policy, a proposer, and the checks of its goal."""

from __future__ import annotations

from typing import TYPE_CHECKING

from waystone.preset._definition import Check, CheckFn, CheckResult, Definition

if TYPE_CHECKING:
    from waystone._runtime.catalog import Entry
    from waystone._runtime.parts import Parts

__all__ = ["AgentSpec", "Check", "CheckFn", "CheckResult"]


class AgentSpec(Definition):
    """An agent: its name, tools, policy, proposer and checks (the fields of
    :class:`~waystone.preset._definition.Definition`), and its entry in a runtime."""

    def entry(self, parts: Parts) -> Entry:
        """This agent's entry in a runtime's catalog (see :mod:`waystone.preset._entry`)."""
        from waystone.preset._entry import agent_entry

        return agent_entry(self, parts)
