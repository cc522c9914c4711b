"""What an agent is to Waystone: tools, a policy, a proposer, and the checks of its goal."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from waystone.effects.tools import Tool
from waystone.preset.policy import Policy
from waystone.preset.proposers import Proposer

if TYPE_CHECKING:
    from waystone._runtime.catalog import Entry
    from waystone._runtime.parts import Parts


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    detail: str


CheckFn = Callable[[dict[str, Any], list[dict[str, Any]]], CheckResult]


@dataclass(frozen=True)
class Check:
    """One verification of the goal, run in parallel with the others.

    ``fn(input, completed)`` gets the run's input and the confirmed actions so far. A
    check only reads, and may run again: after a crash before its step's checkpoint (an
    agent with one check commits its result with that checkpoint), or on a new round.
    """

    name: str
    fn: CheckFn


@dataclass(frozen=True)
class AgentSpec:
    name: str
    tools: Mapping[str, Tool]
    policy: Policy
    proposer: Proposer
    checks: Sequence[Check]
    describe_goal: Callable[[dict[str, Any]], str] = field(default=lambda _input: "")
    validate_input: Callable[[dict[str, Any]], dict[str, Any]] = field(default=lambda i: i)
    max_steps: int = 10

    def tool(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def entry(self, parts: Parts) -> Entry:
        """This agent's entry in a runtime's catalog (see :mod:`waystone.preset._entry`)."""
        from waystone.preset._entry import agent_entry

        return agent_entry(self, parts)
