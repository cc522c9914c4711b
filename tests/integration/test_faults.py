"""Failures take the path their kind deserves (issue: exactly-once effects).

Real provider faults over loopback; the runs go through the real runtime on Postgres.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.conftest import REFUND_INPUT, Cli
from tests.support.rows import effects
from waystone import Runtime, Settings
from waystone.cli.agents import default_agents
from waystone.examples.provider import ProviderProcess

SMALL = {**REFUND_INPUT, "amount": "40.00"}  # under the approval threshold


@pytest.fixture
def fast_runtime(database_url: str) -> Iterator[Runtime]:
    settings = Settings(
        database_url=database_url,
        tool_timeouts={"refund": 1.0, "notify_customer": 1.0},
        tool_settle={"notify_customer": 1.0},  # how late the provider may apply a request
    )
    with Runtime(settings, default_agents) as rt:
        yield rt


def _kinds(rt: Runtime, thread_id: str) -> list[str]:
    return [e["kind"] for e in rt.history(thread_id)["events"]]


def _one_of_each(provider: ProviderProcess) -> None:
    ledger = provider.ledger()
    assert len(ledger["refunds"]) == 1, ledger
    assert len(ledger["notifications"]) == 1, ledger


@pytest.mark.parametrize("endpoint", ["refunds", "notifications"])
def test_timeout_after_apply_is_reconciled_not_repeated(
    endpoint: str, fast_runtime: Runtime, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    provider.inject(endpoint, "timeout_after_apply", delay_s=3)
    thread_id = fast_runtime.start("refund", SMALL).thread_id
    assert fast_runtime.run(thread_id).state == "done"
    _one_of_each(provider)
    kinds = _kinds(fast_runtime, thread_id)
    assert kinds.count("unknown-outcome") == 1
    reconciled = [e for e in fast_runtime.history(thread_id)["events"] if e["kind"] == "reconciled"]
    assert [e["reason"] for e in reconciled] == ["lookup found the effect: recorded as applied"]
    assert [row[1:] for row in effects(sql, thread_id)] == [("confirmed", 1), ("confirmed", 1)]


def test_transient_twice_then_success_records_three_attempts(
    fast_runtime: Runtime, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    provider.inject("refunds", "transient", times=2)
    thread_id = fast_runtime.start("refund", SMALL).thread_id
    assert fast_runtime.run(thread_id).state == "done"
    assert effects(sql, thread_id)[0] == ("refund", "confirmed", 3)
    assert _kinds(fast_runtime, thread_id).count("retry") == 2
    _one_of_each(provider)


def test_attempt_count_survives_a_kill_between_attempts(
    cli: Cli, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    provider.inject("refunds", "transient", times=2)
    started = cli("start", "--agent", "refund", "--input", json.dumps(SMALL), "--json")
    thread_id = json.loads(started.stdout)["thread_id"]
    killed = cli("run", thread_id, env={"WAYSTONE_CRASH_AT": "execute:after-transient@refund"})
    assert killed.returncode == -9
    assert effects(sql, thread_id) == [("refund", "intent", 1)]
    resumed = cli("run", thread_id, "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["state"] == "done"
    assert effects(sql, thread_id)[0] == ("refund", "confirmed", 3)
    _one_of_each(provider)


def test_permanent_failure_is_not_retried_and_fails_the_run(
    fast_runtime: Runtime, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    provider.inject("refunds", "permanent")
    thread_id = fast_runtime.start("refund", SMALL).thread_id
    final = fast_runtime.run(thread_id)
    assert final.state == "failed"
    assert "injected permanent failure" in final.reason
    assert "HTTP 422" in fast_runtime.status(thread_id).reason
    assert effects(sql, thread_id) == [("refund", "failed", 1)]
    assert "retry" not in _kinds(fast_runtime, thread_id)
    assert provider.ledger() == {"refunds": [], "notifications": [], "refused": []}


def test_slow_within_budget_succeeds(
    fast_runtime: Runtime, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    provider.inject("refunds", "slow", delay_s=0.3)
    thread_id = fast_runtime.start("refund", SMALL).thread_id
    assert fast_runtime.run(thread_id).state == "done"
    assert "unknown-outcome" not in _kinds(fast_runtime, thread_id)
    assert effects(sql, thread_id)[0] == ("refund", "confirmed", 1)


@pytest.mark.parametrize(
    ("endpoint", "delay_s"),
    [("refunds", 2), ("notifications", 2), ("notifications", 8)],  # 8: past its deadline
)
def test_slow_beyond_budget_is_unknown_never_failed(
    endpoint: str,
    delay_s: float,
    fast_runtime: Runtime,
    provider: ProviderProcess,
) -> None:
    provider.inject(endpoint, "slow", delay_s=delay_s)
    thread_id = fast_runtime.start("refund", SMALL).thread_id
    assert fast_runtime.run(thread_id).state == "done"
    kinds = _kinds(fast_runtime, thread_id)
    assert kinds.count("unknown-outcome") == 1
    assert "effect-failed" not in kinds
    _one_of_each(provider)


def test_tool_without_lookup_or_dedupe_goes_to_needs_human(
    cli: Cli, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    agents = {"WAYSTONE_AGENTS": "tests.support.unsafe:build"}
    started = cli(
        "start", "--agent", "unsafe", "--input", '{"to": "ana@example.com"}', "--json", env=agents
    )
    assert started.returncode == 0, started.stderr
    thread_id = json.loads(started.stdout)["thread_id"]
    killed = cli("run", thread_id, env={**agents, "WAYSTONE_CRASH_AT": "execute:after-apply@fax"})
    assert killed.returncode == -9
    assert len(provider.ledger()["notifications"]) == 1
    for _ in range(2):  # resumed, and resumed again after a requeue: never re-applied
        resumed = cli("run", thread_id, "--json", env=agents)
        assert resumed.returncode == 7, resumed.stderr  # the run ended needs-human
        status = json.loads(resumed.stdout)
        assert status["state"] == "needs-human"
        assert "neither a lookup nor key deduplication" in status["reason"]
        assert len(provider.ledger()["notifications"]) == 1
        requeued = cli("requeue", thread_id, "--reason", "looked, unsure", env=agents)
        assert requeued.returncode == 0, requeued.stderr
    assert effects(sql, thread_id) == [("fax", "intent", 0)]


def test_exhausted_retries_need_a_human_then_requeue_finishes(
    fast_runtime: Runtime, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    provider.inject("refunds", "transient", times=50)
    thread_id = fast_runtime.start("refund", SMALL).thread_id
    stuck = fast_runtime.run(thread_id)
    assert stuck.state == "needs-human"
    assert "retries exhausted" in stuck.reason
    assert effects(sql, thread_id) == [("refund", "intent", 5)]  # 4 calls, then the refusal
    assert provider.ledger()["refunds"] == []
    provider.clear_faults()
    fast_runtime.requeue(thread_id, by="ops", reason="provider fixed")
    assert fast_runtime.run(thread_id).state == "done"
    _one_of_each(provider)
    requeued = [
        e
        for e in fast_runtime.history(thread_id)["events"]
        if e["kind"] == "transition" and e["to_state"] == "queued"
    ]
    assert requeued[-1]["reason"] == "requeued by ops: provider fixed"


def test_no_deadline_no_dedupe_absent_lookup_needs_a_human(
    database_url: str, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    """A provider that neither deduplicates nor promises a request deadline: a lookup that
    finds nothing right after a timeout proves nothing, so nobody guesses."""
    from dataclasses import replace

    from waystone.examples import refund

    base = refund.build()
    no_deadline = replace(refund.NOTIFY, settle_s=None)
    agent = replace(base, tools={**base.tools, "notify_customer": no_deadline})
    settings = Settings(database_url=database_url, tool_timeouts={"notify_customer": 1.0})
    provider.inject("notifications", "slow", delay_s=2)
    with Runtime(settings, agents={"refund": agent}) as rt:
        thread_id = rt.start("refund", SMALL).thread_id
        final = rt.run(thread_id)
        kinds = _kinds(rt, thread_id)
    assert final.state == "needs-human"
    assert "does not refuse late requests" in final.reason
    assert "unknown-outcome" in kinds
    assert effects(sql, thread_id)[1][:2] == ("notify_customer", "unknown")
    assert len(provider.ledger()["notifications"]) <= 1  # the slow one may still land; once


def _written_the_natural_way(provider: ProviderProcess, fail_first: bool) -> Any:
    """The notification tool as a user writes it: plain httpx, ``raise_for_status``."""
    from dataclasses import replace

    import httpx

    from waystone.examples import refund

    calls = []

    def apply(args: dict[str, Any], key: str, timeout: float) -> dict[str, Any]:
        calls.append(key)
        if fail_first and len(calls) == 1:  # the provider's port, not yet listening
            httpx.post("http://127.0.0.1:9/notifications", json=args, timeout=timeout)
        answer = httpx.post(
            f"{provider.url}/notifications", json={**args, "client_ref": key}, timeout=timeout
        )
        answer.raise_for_status()
        receipt: dict[str, Any] = answer.json()
        return receipt

    base = refund.build()
    tool = replace(refund.NOTIFY, apply=apply)
    return replace(base, tools={**base.tools, "notify_customer": tool}), calls


def test_a_natural_tools_connect_error_is_retried_not_failed(
    database_url: str, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    agent, calls = _written_the_natural_way(provider, fail_first=True)
    with Runtime(Settings(database_url=database_url), agents={"refund": agent}) as rt:
        thread_id = rt.start("refund", SMALL).thread_id
        assert rt.run(thread_id).state == "done"
        assert "retry" in _kinds(rt, thread_id)
    assert len(calls) == 2
    assert effects(sql, thread_id)[1] == ("notify_customer", "confirmed", 2)
    _one_of_each(provider)


def test_a_natural_tools_read_timeout_is_reconciled_not_failed(
    database_url: str, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    agent, calls = _written_the_natural_way(provider, fail_first=False)
    provider.inject("notifications", "timeout_after_apply", delay_s=3)
    settings = Settings(database_url=database_url, tool_timeouts={"notify_customer": 1.0})
    with Runtime(settings, agents={"refund": agent}) as rt:
        thread_id = rt.start("refund", SMALL).thread_id
        assert rt.run(thread_id).state == "done"
        kinds = _kinds(rt, thread_id)
    assert kinds.count("unknown-outcome") == 1 and "reconciled" in kinds
    assert len(calls) == 1  # found by the lookup, never sent again
    _one_of_each(provider)
