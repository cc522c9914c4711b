"""A worker that may have lost its lease (frozen past it, or a heartbeat refused) makes no
external call: the provider never sees it, whatever the tool."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from tests.conftest import REFUND_INPUT
from waystone import LeaseLost, Runtime
from waystone.effects.runner import EffectRunner
from waystone.examples import refund
from waystone.examples.provider import ProviderProcess
from waystone.runs.driver import LeaseGuard


def test_guard_expires_with_the_lease_and_on_a_refused_heartbeat() -> None:
    now = [100.0]
    guard = LeaseGuard(lease_seconds=10, clock=lambda: now[0])
    assert guard.ok()
    now[0] += 9.5  # no heartbeat for most of the lease: another worker may take it soon
    assert not guard.ok()
    guard.renewed()
    assert guard.ok()
    fresh = LeaseGuard(lease_seconds=60)
    assert fresh.ok()
    fresh.lost.set()
    assert not fresh.ok()


def test_no_call_once_the_lease_may_have_expired(
    runtime: Runtime, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    thread_id = runtime.start("refund", {**REFUND_INPUT, "amount": "40.00"}).thread_id
    run = runtime.registry.get(thread_id)
    runner = EffectRunner(
        ledger=runtime.ledger, event=lambda *_: None, fence=run.lease_token, lease_ok=lambda: False
    )
    action = {
        "key": "ws-guard-test",
        "ordinal": 1,
        "args": {"to": "ana@example.com", "body": "hello"},
    }
    with pytest.raises(LeaseLost, match="not calling notify_customer"):
        runner.perform(thread_id, action, refund.NOTIFY)
    assert provider.ledger()["notifications"] == []
    row = sql.execute("SELECT status FROM waystone.effects WHERE key = 'ws-guard-test'").fetchone()
    assert row == ("intent",)  # the intent is there, the call is not: reconciled later
