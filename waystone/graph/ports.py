"""The collaborators nodes receive: nodes never open connections or read globals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig

from waystone.agent import AgentSpec
from waystone.effects.ledger import Ledger
from waystone.effects.runner import EffectRunner
from waystone.runs.registry import RunRegistry


@dataclass(frozen=True)
class Ports:
    agent: AgentSpec
    ledger: Ledger
    registry: RunRegistry

    def runner(self, thread_id: str) -> EffectRunner:
        def event(kind: str, reason: str, evidence: dict[str, Any]) -> None:
            self.registry.event(thread_id, kind, reason, evidence)

        return EffectRunner(ledger=self.ledger, event=event)


def thread_id_of(config: RunnableConfig) -> str:
    thread_id = (config.get("configurable") or {}).get("thread_id")
    if not isinstance(thread_id, str):
        raise ValueError("the graph must be invoked with config['configurable']['thread_id']")
    return thread_id
