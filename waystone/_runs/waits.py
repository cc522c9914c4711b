"""Waiting for a signal inside a node, without holding a process.

``wait_for_signal`` pauses the run (LangGraph ``interrupt()``); the run goes to ``waiting``
and holds no worker and no connection. A ``waystone signal`` (or the HTTP webhook) wakes
it through LISTEN/NOTIFY; a signal that arrived before the wait began is delivered at once.
When the wait times out the node gets a :class:`SignalTimeout` back and applies its policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from langgraph.types import interrupt

OnTimeout = Literal["failed", "needs-human"]


@dataclass(frozen=True)
class SignalWait:
    """What a tool (or node) waits for: a named signal, for at most ``timeout_s``."""

    name: str
    timeout_s: float
    on_timeout: OnTimeout = "needs-human"


@dataclass(frozen=True)
class SignalTimeout:
    name: str


def wait_for_signal(wait: SignalWait) -> dict[str, Any] | SignalTimeout:
    """The signal's payload, or :class:`SignalTimeout`. Call before any side effect in the
    node: the node runs again from its first line when the run resumes."""
    answer = interrupt(
        {
            "kind": "signal",
            "name": wait.name,
            "timeout_s": wait.timeout_s,
            "on_timeout": wait.on_timeout,
        }
    )
    if isinstance(answer, dict) and answer.get("timeout"):
        return SignalTimeout(wait.name)
    payload = answer.get("payload", {}) if isinstance(answer, dict) else {}
    return payload if isinstance(payload, dict) else {"value": payload}
