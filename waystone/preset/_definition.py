"""What an agent is, as data: tools, a policy, a proposer, and the checks of its goal. The
modules that build an agent's graph read it; :class:`~waystone.preset.spec.AgentSpec` adds
its entry in a runtime's catalog."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from waystone.effects.tools import Tool
from waystone.preset.policy import Policy
from waystone.preset.proposers import Proposer


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
class Definition:
    """An agent's parts (see :class:`~waystone.preset.spec.AgentSpec`)."""

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
