"""A worker that may have lost its lease (frozen past it, or a heartbeat refused) makes no
external call: the provider never sees it, whatever the tool."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import psycopg
import pytest

from tests.conftest import REFUND_INPUT, wait_until
from tests.support.notes import bench_storage
from waystone import LeaseLost, Runtime, Settings
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


def test_a_step_longer_than_the_lease_keeps_it_by_heartbeat(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    """The heartbeat renews the lease while a node runs: a tool call that outlasts the
    lease's length leaves the run held by the same token, and the run ends without a
    takeover."""
    entered, release = threading.Event(), threading.Event()

    def slow_apply(args: dict[str, Any], key: str, timeout: float) -> dict[str, Any]:
        entered.set()
        release.wait(timeout=60)  # until the test has seen the lease outlive its length
        return {"id": key}

    base = bench_storage.agent(1)
    spec = replace(base, name="slow", tools={"note": replace(base.tools["note"], apply=slow_apply)})
    with Runtime(Settings(database_url=database_url, lease_seconds=1.5)) as rt:
        rt.register(spec)
        thread_id = rt.start(spec.name, {}).thread_id
        done: list[str] = []
        driving = threading.Thread(target=lambda: done.append(rt.run(thread_id).state))
        driving.start()
        try:
            assert entered.wait(timeout=60), "the tool was never called"
            row = sql.execute(
                "SELECT lease_token, lease_expires_at FROM waystone.runs WHERE thread_id = %s",
                (thread_id,),
            ).fetchone()
            assert row is not None
            token, first_expiry = row

            def past_first_expiry() -> bool:
                now = sql.execute("SELECT clock_timestamp() > %s", (first_expiry,)).fetchone()
                return bool(now and now[0])

            wait_until(past_first_expiry, "the lease's first expiry to pass")
            held = sql.execute(
                "SELECT lease_token, lease_expires_at > clock_timestamp(), lease_owner "
                "FROM waystone.runs WHERE thread_id = %s",
                (thread_id,),
            ).fetchone()
            assert held is not None
            assert held[0] == token and held[1] is True and held[2] == rt.owner  # renewed
        finally:
            release.set()
            driving.join(timeout=60)
    assert done == ["done"]
    takeovers = sql.execute(
        "SELECT count(*) FROM waystone.run_events WHERE thread_id = %s AND kind = 'lease-takeover'",
        (thread_id,),
    ).fetchone()
    assert takeovers == (0,)
