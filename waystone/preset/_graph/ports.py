"""The collaborators nodes receive: nodes never open connections or read globals."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig

from waystone._checkpointing.lease_guards import progressed
from waystone._runs.registry import RunRegistry
from waystone.effects._ledger import Ledger
from waystone.effects._runner import EffectRunner
from waystone.effects.context import EffectContext
from waystone.effects.tools import RetryPolicy, Tool

if TYPE_CHECKING:
    from waystone.preset.spec import AgentSpec


@dataclass(frozen=True)
class Ports:
    agent: AgentSpec
    ledger: Ledger
    registry: RunRegistry
    model_timeout_s: float = 120.0
    model_retry: RetryPolicy = field(default_factory=lambda: RetryPolicy(max_attempts=3))
    tool_timeouts: Mapping[str, float] = field(default_factory=dict)
    tool_settle: Mapping[str, float] = field(default_factory=dict)
    reveal: Callable[[Any], Any] = field(default=lambda value: value)  # tokens -> real values

    def scope(self, config: RunnableConfig) -> RunScope:
        """What a node needs about the run it is executing: its id and lease token."""
        thread_id = thread_id_of(config)
        namespace = (config.get("configurable") or {}).get("key_namespace") or thread_id
        return RunScope(self, thread_id, lease_of(config), str(namespace))

    def step_budget(self, margin_s: float) -> float:
        """The longest a drive of this agent may go without marking progress: its longest
        wait between two marks (a model call and the delay before its retry; a tool call,
        its retry delay and its settle time), plus ``margin_s``."""
        waits = [self.model_timeout_s + self.model_retry.longest_delay_s]
        for name in self.agent.tools:
            tool = self.tool(name)
            assert tool is not None
            waits.append(tool.timeout_s + tool.retry.longest_delay_s + (tool.settle_s or 0.0))
        return max(waits) + margin_s

    def tool(self, name: str) -> Tool | None:
        """The agent's tool, with this deployment's timeout for it if one is configured."""
        tool = self.agent.tool(name)
        if tool is not None and name in self.tool_timeouts:
            tool = replace(tool, timeout_s=self.tool_timeouts[name])
        if tool is not None and name in self.tool_settle:
            tool = replace(tool, settle_s=self.tool_settle[name])
        return tool


@dataclass(frozen=True)
class RunScope:
    """One run as seen from inside a node: every write it makes carries the lease token."""

    ports: Ports
    thread_id: str
    fence: int | None
    key_namespace: str  # what idempotency keys derive from: the thread, or a fork's root

    def event(self, kind: str, reason: str, evidence: dict[str, Any] | None = None) -> None:
        progressed(self.thread_id, self.fence)  # a retry, a reconciliation: the step goes on
        self.ports.registry.event(self.thread_id, kind, reason, evidence, lease_token=self.fence)

    def runner(self) -> EffectRunner:
        context = EffectContext(self.ports.ledger, self.ports.registry, reveal=self.ports.reveal)
        return context.runner(self.thread_id, self.fence)


def lease_of(config: RunnableConfig) -> int | None:
    token = (config.get("configurable") or {}).get("lease_token")
    return int(token) if token is not None else None


def thread_id_of(config: RunnableConfig) -> str:
    thread_id = (config.get("configurable") or {}).get("thread_id")
    if not isinstance(thread_id, str):
        raise ValueError("the graph must be invoked with config['configurable']['thread_id']")
    return thread_id
