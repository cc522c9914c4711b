"""Waystone: durable execution for LangGraph agents on Postgres.

The names below are imported on first use (PEP 562): ``import waystone`` alone loads
neither LangGraph nor pydantic, so a CLI command that only reads runs starts fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from waystone._checkpointing.aio import AsyncWaystoneSaver
    from waystone._checkpointing.saver import WaystoneSaver
    from waystone.config import Settings
    from waystone.effects.inline import effect
    from waystone.effects.lc_tools import durable_tool
    from waystone.effects.tools import RetryPolicy, Tool
    from waystone.errors import (
        BadInput,
        DatabaseUnavailable,
        LeaseLost,
        NeedsHuman,
        PermanentError,
        TransientError,
        TransitionNotAllowed,
        UnknownOutcome,
        UnknownThread,
        WaystoneError,
    )
    from waystone.preset.policy import PolicyDecision, Rule, RulePolicy
    from waystone.preset.proposers import ChatModelProposer, Proposal, ScriptedProposer
    from waystone.preset.spec import AgentSpec, Check, CheckResult
    from waystone.runtime import RunStatus, Runtime

_HOMES = {
    "AgentSpec": "waystone.preset.spec",
    "Check": "waystone.preset.spec",
    "CheckResult": "waystone.preset.spec",
    "Settings": "waystone.config",
    "WaystoneSaver": "waystone._checkpointing.saver",
    "AsyncWaystoneSaver": "waystone._checkpointing.aio",
    "effect": "waystone.effects.inline",
    "durable_tool": "waystone.effects.lc_tools",
    "RetryPolicy": "waystone.effects.tools",
    "Tool": "waystone.effects.tools",
    "BadInput": "waystone.errors",
    "DatabaseUnavailable": "waystone.errors",
    "LeaseLost": "waystone.errors",
    "NeedsHuman": "waystone.errors",
    "PermanentError": "waystone.errors",
    "TransientError": "waystone.errors",
    "TransitionNotAllowed": "waystone.errors",
    "UnknownOutcome": "waystone.errors",
    "UnknownThread": "waystone.errors",
    "WaystoneError": "waystone.errors",
    "PolicyDecision": "waystone.preset.policy",
    "Rule": "waystone.preset.policy",
    "RulePolicy": "waystone.preset.policy",
    "ChatModelProposer": "waystone.preset.proposers",
    "Proposal": "waystone.preset.proposers",
    "ScriptedProposer": "waystone.preset.proposers",
    "RunStatus": "waystone._runs.status",
    "Runtime": "waystone.runtime",
}

__all__ = [
    "AgentSpec",
    "BadInput",
    "ChatModelProposer",
    "Check",
    "CheckResult",
    "DatabaseUnavailable",
    "LeaseLost",
    "NeedsHuman",
    "PermanentError",
    "PolicyDecision",
    "Proposal",
    "RetryPolicy",
    "Rule",
    "RulePolicy",
    "RunStatus",
    "Runtime",
    "ScriptedProposer",
    "Settings",
    "Tool",
    "TransientError",
    "TransitionNotAllowed",
    "UnknownOutcome",
    "UnknownThread",
    "WaystoneError",
    "WaystoneSaver",
    "AsyncWaystoneSaver",
    "durable_tool",
    "effect",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'waystone' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later look-ups find it without coming here again
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
