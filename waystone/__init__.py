"""Waystone: durable execution for LangGraph agents on Postgres."""

from waystone.agent import AgentSpec, Check, CheckResult
from waystone.config import Settings
from waystone.effects.tools import RetryPolicy, Tool
from waystone.errors import (
    BadInput,
    DatabaseUnavailable,
    LeaseLost,
    PermanentError,
    TransientError,
    TransitionNotAllowed,
    UnknownOutcome,
    UnknownThread,
    WaystoneError,
)
from waystone.policy import PolicyDecision, Rule, RulePolicy
from waystone.proposers import ChatModelProposer, Proposal, ScriptedProposer
from waystone.runtime import RunStatus, Runtime

__all__ = [
    "AgentSpec",
    "BadInput",
    "ChatModelProposer",
    "Check",
    "CheckResult",
    "DatabaseUnavailable",
    "LeaseLost",
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
]
