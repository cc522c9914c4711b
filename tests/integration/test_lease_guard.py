"""A worker that may have lost its lease (frozen past it, or a heartbeat refused) makes no
external call: the provider never sees it, whatever the tool."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any, cast

import psycopg
import pytest

from tests.conftest import REFUND_INPUT, wait_until
from tests.support.inside import parts
from tests.support.notes import bench_storage, claimed
from waystone import LeaseLost, Runtime, Settings
from waystone._checkpointing.lease_guards import LeaseGuard, lease_ok
from waystone._runs.leases import Heartbeats
from waystone._runs.registry import RunRegistry
from waystone.effects._runner import EffectRunner
from waystone.examples import refund
from waystone.examples.provider import ProviderProcess


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
    run = parts(runtime).registry.get(thread_id)
    runner = EffectRunner(
        ledger=parts(runtime).ledger,
        event=lambda *_: None,
        fence=run.lease_token,
        lease_ok=lambda: False,
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
            assert held[0] == token and held[1] is True and held[2] == parts(rt).owner  # renewed
        finally:
            release.set()
            driving.join(timeout=60)
    assert done == ["done"]
    takeovers = sql.execute(
        "SELECT count(*) FROM waystone.run_events WHERE thread_id = %s AND kind = 'lease-takeover'",
        (thread_id,),
    ).fetchone()
    assert takeovers == (0,)


def _expiry(sql: psycopg.Connection[Any], thread_id: str) -> Any:
    row = sql.execute(
        "SELECT lease_expires_at FROM waystone.runs WHERE thread_id = %s", (thread_id,)
    ).fetchone()
    assert row is not None
    return row[0]


def test_one_thread_renews_every_lease_of_the_process(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    beats = Heartbeats(name="heartbeat-under-test")
    first, second = claimed(runtime), claimed(runtime)  # claimed for 30 s
    before = {run.thread_id: _expiry(sql, run.thread_id) for run in (first, second)}
    with (
        beats.keep(parts(runtime).registry, first, lease_seconds=60),
        beats.keep(parts(runtime).registry, second, lease_seconds=0.6),
    ):
        # the short lease is renewed every 0.2 s, to 0.6 s from then: earlier than its claim's
        wait_until(lambda: _expiry(sql, second.thread_id) < before[second.thread_id], "renewal")
        assert _expiry(sql, first.thread_id) == before[first.thread_id]  # not due for 20 s
        named = [t for t in threading.enumerate() if t.name == "heartbeat-under-test"]
        assert len(named) == 1 and beats.holding() == 2
    assert beats.holding() == 0


def test_a_refused_renewal_marks_the_lease_lost(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    beats = Heartbeats(name="heartbeat-under-test")
    run = claimed(runtime)
    with beats.keep(parts(runtime).registry, run, lease_seconds=0.6) as guard:
        assert guard.ok()
        sql.execute(  # taken over: the run's token moved on
            "UPDATE waystone.runs SET lease_token = lease_token + 1 WHERE thread_id = %s",
            (run.thread_id,),
        )
        wait_until(guard.lost.is_set, "the refused renewal")
        assert not guard.ok()
        assert not lease_ok(run.thread_id, run.lease_token)
    assert lease_ok(run.thread_id, run.lease_token)  # no guard once out: not this process's


def test_leaving_waits_for_a_renewal_under_way_and_none_starts_after(runtime: Runtime) -> None:
    """The registry's renewal is held open by the test: leaving the lease waits for it."""
    entered, release = threading.Event(), threading.Event()
    calls: list[int] = []
    registry = parts(runtime).registry

    class Held:
        def heartbeat(
            self, thread_id: str, lease_token: int, lease_seconds: float, **limits: float
        ) -> bool:
            calls.append(lease_token)
            entered.set()
            release.wait(timeout=60)
            return registry.heartbeat(thread_id, lease_token, lease_seconds, **limits)

    beats = Heartbeats(name="heartbeat-under-test")
    run = claimed(runtime)
    keeping = beats.keep(cast(Any, Held()), run, lease_seconds=0.3)
    keeping.__enter__()
    assert entered.wait(timeout=60), "no renewal started"
    leaving = threading.Thread(target=lambda: keeping.__exit__(None, None, None))
    leaving.start()
    leaving.join(timeout=0.3)
    assert leaving.is_alive()  # held by the renewal under way (it cannot end before release)
    release.set()
    leaving.join(timeout=60)
    assert not leaving.is_alive() and beats.holding() == 0
    renewals = len(calls)  # the one held open, and any that began before leaving took over
    entered.clear()
    assert not entered.wait(timeout=0.3)  # a 0.3 s lease is due every 0.1 s: none came
    assert len(calls) == renewals >= 1


def test_a_run_whose_row_stays_locked_does_not_hold_up_the_others(
    runtime: Runtime, sql: psycopg.Connection[Any], database_url: str
) -> None:
    """A transaction left open on one run's row (a share lock, as a fenced write takes)
    blocks that run's renewals; each gives up after its limit, and the other run's lease
    is renewed all along. Once the lock goes, the first is renewed again."""
    beats = Heartbeats(name="heartbeat-under-test")
    stuck, other = claimed(runtime), claimed(runtime)
    with (
        psycopg.connect(database_url) as locker,
        beats.keep(parts(runtime).registry, stuck, lease_seconds=1.5) as stuck_guard,
        beats.keep(parts(runtime).registry, other, lease_seconds=1.5) as other_guard,
    ):
        locker.execute(
            "SELECT 1 FROM waystone.runs WHERE thread_id = %s FOR SHARE", (stuck.thread_id,)
        )
        seen = [_expiry(sql, other.thread_id)]

        def renewed_again() -> bool:
            now = _expiry(sql, other.thread_id)
            if now != seen[-1]:
                seen.append(now)
            return len(seen) > 6  # six renewals, 0.5 s apart: three leases' worth

        wait_until(renewed_again, "the other run's renewals")
        assert other_guard.ok() and not other_guard.lost.is_set()
        assert not stuck_guard.ok()  # not renewed for most of its lease: it may lapse
        assert not stuck_guard.lost.is_set()  # but it was never refused
        locker.rollback()
        wait_until(stuck_guard.ok, "the unlocked run's renewal")


def test_runs_of_two_runtimes_with_one_id_are_renewed_apart(runtime: Runtime) -> None:
    """Two runtimes of one process (two databases, in production) may drive runs with the
    same thread id and token: each keeps its own lease."""
    beats = Heartbeats(name="heartbeat-under-test")
    run = claimed(runtime)
    second = RunRegistry(parts(runtime).db)
    with beats.keep(parts(runtime).registry, run, lease_seconds=60):
        with beats.keep(second, run, lease_seconds=60):
            assert beats.holding() == 2
        assert beats.holding() == 1
    assert beats.holding() == 0
