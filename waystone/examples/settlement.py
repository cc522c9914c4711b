"""The refund agent, with refunds confirmed only by the provider's ``refund.settled``
webhook, delivered as a signal (``waystone signal THREAD refund.settled --payload ...``).

The run waits for it in ``confirm`` without holding a worker or a connection. Load it into
the CLI and workers with
``WAYSTONE_AGENTS=waystone.examples.settlement:settled``.
"""

from __future__ import annotations

from dataclasses import replace

from waystone import AgentSpec
from waystone._runs.waits import SignalWait
from waystone.examples import refund


def _with_wait(name: str, wait: SignalWait) -> AgentSpec:
    base = refund.build()
    tool = replace(refund.REFUND, await_signal=wait)
    return replace(base, name=name, tools={**base.tools, "refund": tool})


def settled() -> AgentSpec:
    """Waits up to an hour for the webhook; a person looks if it never comes."""
    return _with_wait("settled", SignalWait("refund.settled", timeout_s=3600))


def settled_briefly() -> AgentSpec:
    """Waits one second; no webhook fails the run."""
    return _with_wait(
        "settled_briefly", SignalWait("refund.settled", timeout_s=1, on_timeout="failed")
    )
