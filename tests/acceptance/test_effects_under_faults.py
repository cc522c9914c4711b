"""Effects under faults, with real processes: a worker frozen (SIGSTOP) right before its
request leaves, a network that holds requests longer than the client waits, and a cancel
that races the call. Assertions read the provider's own records and Postgres."""

from __future__ import annotations

import json
import signal
from typing import Any
from urllib.parse import urlsplit

import psycopg

from tests.acceptance.conftest import Workers, stopped
from tests.conftest import REFUND_INPUT, Cli, wait_until
from tests.support.proxy import DelayingProxy
from tests.support.rows import lease_expired, one, run_state
from waystone import Runtime
from waystone.examples.provider import ProviderProcess

SMALL = {**REFUND_INPUT, "amount": "40.00"}  # allowed by policy: no approval
FAST_NOTIFY = {
    "WAYSTONE_TOOL_TIMEOUTS": "notify_customer=2",
    "WAYSTONE_TOOL_SETTLE": "notify_customer=1",
}


def holding_notifications(provider: ProviderProcess, hold_s: float, times: int) -> DelayingProxy:
    """A proxy to the provider that holds its first ``times`` notification POSTs."""
    address = urlsplit(provider.url)
    assert address.hostname and address.port
    held = b"POST /notifications"
    return DelayingProxy((address.hostname, address.port), held, hold_s=hold_s, times=times)


def _landed(provider: ProviderProcess) -> int:
    """Notification requests that reached the provider: applied or refused."""
    ledger = provider.ledger()
    return len(ledger["notifications"]) + len(ledger["refused"])


def event_kinds(sql: psycopg.Connection[Any], thread_id: str) -> list[str]:
    rows = sql.execute(
        "SELECT kind FROM waystone.run_events WHERE thread_id = %s ORDER BY id", (thread_id,)
    ).fetchall()
    return [r[0] for r in rows]


def test_frozen_worker_sends_no_second_notification(
    runtime: Runtime, provider: ProviderProcess, workers: Workers, sql: psycopg.Connection[Any]
) -> None:
    """Frozen after its last lease check, right before the request leaves, then woken once
    another worker took the run over and sent the notification: its request, sent late,
    carries a deadline long past, and the provider refuses it."""
    thread_id = runtime.start("refund", SMALL).thread_id
    frozen = workers.spawn(
        "--lease-seconds",
        "2",
        "--until-idle",
        env={**FAST_NOTIFY, "WAYSTONE_FREEZE_AT": "effect:before-send@notify_customer"},
    )
    wait_until(lambda: stopped(frozen), "the worker frozen before sending the notification")
    wait_until(lambda: lease_expired(sql, thread_id), "the frozen worker's lease expired")
    rescuer = workers.spawn("--lease-seconds", "2", "--until-idle", env=FAST_NOTIFY)
    assert rescuer.wait(timeout=90) == 0, workers.output(rescuer)
    assert run_state(sql, thread_id) == "done"

    frozen.send_signal(signal.SIGCONT)
    assert frozen.wait(timeout=90) == 0, workers.output(frozen)
    assert workers.summary(frozen)["lease_lost"] == 1
    ledger = provider.ledger()
    assert len(ledger["notifications"]) == 1, ledger
    key = one(
        sql,
        "SELECT key FROM waystone.effects WHERE thread_id = %s AND tool = 'notify_customer'",
        thread_id,
    )
    assert [(r["endpoint"], r["ref"]) for r in ledger["refused"]] == [("notifications", key)]


def test_slow_network_sends_each_notification_once(
    runtime: Runtime, provider: ProviderProcess, workers: Workers, sql: psycopg.Connection[Any]
) -> None:
    """Each run's first notification is held 12 s in transit, the client waits 2 s: the
    outcome is unknown, the lookup finds nothing, the run sends it again once the first
    call's deadline has passed; the first one lands late and is refused."""
    with holding_notifications(provider, hold_s=12, times=2) as proxy:
        threads = [
            runtime.start("refund", {**SMALL, "order_id": f"10{n}"}).thread_id for n in (1, 2)
        ]
        env = {**FAST_NOTIFY, "WAYSTONE_PAYMENTS_URL": proxy.url}
        worker = workers.spawn("--concurrency", "2", "--until-idle", env=env)
        assert worker.wait(timeout=120) == 0, workers.output(worker)
        wait_until(lambda: _landed(provider) == 4, "the 2 held requests and the 2 resent landed")
    assert proxy.held == 2
    for thread_id in threads:
        assert run_state(sql, thread_id) == "done"
        assert "unknown-outcome" in event_kinds(sql, thread_id)
    ledger = provider.ledger()
    sent = sorted(n["client_ref"] for n in ledger["notifications"])
    keys = sorted(
        r[0]
        for r in sql.execute(
            "SELECT key FROM waystone.effects WHERE tool = 'notify_customer'"
        ).fetchall()
    )
    assert sent == keys and len(keys) == 2, ledger  # one each, none twice
    assert sorted(r["ref"] for r in ledger["refused"]) == keys


def test_no_effect_starts_after_a_committed_cancel(
    cli: Cli,
    runtime: Runtime,
    provider: ProviderProcess,
    workers: Workers,
    sql: psycopg.Connection[Any],
) -> None:
    """Approved, then frozen after the refund's intent (committed with authorize's
    checkpoint) and before the call; the run is cancelled; woken, the worker asks Postgres
    before calling and sends nothing."""
    thread_id = runtime.start("refund", REFUND_INPUT).thread_id
    assert runtime.run(thread_id).state == "waiting"
    runtime.approve(thread_id, by="ana")
    holder = workers.spawn(
        "--until-idle", env={"WAYSTONE_FREEZE_AT": "execute:after-intent@refund"}
    )
    wait_until(lambda: stopped(holder), "the worker frozen before the refund's call")
    assert cli("cancel", thread_id, "--reason", "customer withdrew").returncode == 0
    holder.send_signal(signal.SIGCONT)
    assert holder.wait(timeout=60) == 0, workers.output(holder)
    assert workers.summary(holder)["lease_lost"] == 1
    assert provider.ledger()["refunds"] == [], workers.output(holder)
    assert one(sql, "SELECT status FROM waystone.effects WHERE thread_id = %s", thread_id) == (
        "intent"
    )
    assert "effect-applied" not in event_kinds(sql, thread_id)


def test_an_effect_in_flight_at_cancel_is_in_the_history(
    cli: Cli,
    runtime: Runtime,
    provider: ProviderProcess,
    workers: Workers,
    sql: psycopg.Connection[Any],
) -> None:
    """Cancelled while its refund's request is on its way: the refund lands, and although
    the worker's own receipt is fenced out, the history shows the money that moved."""
    thread_id = runtime.start("refund", SMALL).thread_id
    holder = workers.spawn("--until-idle", env={"WAYSTONE_FREEZE_AT": "effect:before-send@refund"})
    wait_until(lambda: stopped(holder), "the worker frozen as the refund's request leaves")
    assert cli("cancel", thread_id, "--reason", "stop").returncode == 0
    holder.send_signal(signal.SIGCONT)
    assert holder.wait(timeout=60) == 0, workers.output(holder)
    assert workers.summary(holder)["lease_lost"] == 1
    state, reason = sql.execute(
        "SELECT state, reason FROM waystone.runs WHERE thread_id = %s", (thread_id,)
    ).fetchone() or ("", "")
    assert (state, reason) == ("failed", "cancelled by tester: stop")
    [refund] = provider.ledger()["refunds"]
    history = json.loads(cli("history", thread_id, "--json").stdout)
    [effect] = history["effects"]
    assert effect["status"] == "applied" and effect["receipt"]["id"] == refund["id"], effect
    assert "late-receipt" in [e["kind"] for e in history["events"]]


def test_a_longer_timeout_elsewhere_is_waited_for(
    runtime: Runtime, provider: ProviderProcess, workers: Workers, sql: psycopg.Connection[Any]
) -> None:
    """A worker with an 8 s timeout dies with its notification held 6 s in transit; the
    one that takes over has a 2 s timeout, and still waits for the first call's own
    deadline before it trusts a lookup that finds nothing: the late request is found."""
    with holding_notifications(provider, hold_s=6, times=1) as proxy:
        thread_id = runtime.start("refund", SMALL).thread_id
        patient = {
            "WAYSTONE_TOOL_TIMEOUTS": "notify_customer=8",
            "WAYSTONE_TOOL_SETTLE": "notify_customer=1",
            "WAYSTONE_PAYMENTS_URL": proxy.url,
        }
        first = workers.spawn("--lease-seconds", "2", "--until-idle", env=patient)
        wait_until(lambda: proxy.held == 1, "the first worker's notification in transit")
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        wait_until(lambda: lease_expired(sql, thread_id), "the dead worker's lease expired")
        env = {**FAST_NOTIFY, "WAYSTONE_PAYMENTS_URL": proxy.url}
        second = workers.spawn("--lease-seconds", "2", "--until-idle", env=env)
        assert second.wait(timeout=120) == 0, workers.output(second)
    assert run_state(sql, thread_id) == "done"
    ledger = provider.ledger()
    assert len(ledger["notifications"]) == 1, ledger  # the late one, found; or refused and sent
    assert "reconcile-wait" in event_kinds(sql, thread_id)
