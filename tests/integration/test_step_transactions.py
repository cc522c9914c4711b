"""What commits with a node's checkpoint, in its transaction: the node's own ledger change
(the intent of an approved effect the tool can reconcile, authorize's; its receipt,
execute's; a confirmation, confirm's), and, for the graph's last checkpoint, the run's
final transition.

Killed between a ledger change and the checkpoint, neither is in Postgres; the resumed
run reconciles or reads back again, and every effect still happens once. A receipt that
only a person could reconcile is committed at once, on its own. Real CLI processes, real
SIGKILL at the crash points, the real provider on loopback; "the same transaction" is
read from Postgres itself (rows a transaction writes carry its id, ``xmin``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import psycopg
import pytest
from langgraph.runtime import RunControl

from tests.conftest import REFUND_INPUT, Cli
from tests.support.inside import parts
from tests.support.notes import bench_storage, claimed
from tests.support.rows import effects
from waystone import Runtime
from waystone.effects.tools import RetryPolicy
from waystone.errors import TransientError, TransitionNotAllowed
from waystone.examples.provider import ProviderProcess
from waystone.preset.policy import PolicyDecision

SMALL = {**REFUND_INPUT, "amount": "40.00"}  # under the approval threshold: no wait
UNSAFE = {"WAYSTONE_AGENTS": "tests.support.unsafe:build"}


def _start(cli: Cli, agent: str, payload: dict[str, Any], env: dict[str, str]) -> str:
    started = cli("start", "--agent", agent, "--input", json.dumps(payload), "--json", env=env)
    assert started.returncode == 0, started.stderr
    thread_id: str = json.loads(started.stdout)["thread_id"]
    return thread_id


def _killed_at(cli: Cli, thread_id: str, point: str, env: dict[str, str] | None = None) -> None:
    killed = cli("run", thread_id, env={**(env or {}), "WAYSTONE_CRASH_AT": point})
    assert killed.returncode == -9, killed.stderr


def _resumed(cli: Cli, thread_id: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    resumed = cli("run", thread_id, "--json", env=env)
    status: dict[str, Any] = json.loads(resumed.stdout)
    stopped = status["state"] in ("failed", "needs-human")  # the status, then exit 7
    assert resumed.returncode == (7 if stopped else 0), resumed.stderr
    return status


def _ledger(sql: psycopg.Connection[Any], thread_id: str) -> list[tuple[Any, ...]]:
    return effects(sql, thread_id, "tool", "status")


def _event_count(sql: psycopg.Connection[Any], thread_id: str, kind: str) -> int:
    row = sql.execute(
        "SELECT count(*) FROM waystone.run_events WHERE thread_id = %s AND kind = %s",
        (thread_id, kind),
    ).fetchone()
    assert row is not None
    return int(row[0])


def _authorized_xmin(sql: psycopg.Connection[Any], thread_id: str) -> str:
    """The transaction of authorize's checkpoint (the one that routes to execute)."""
    row = sql.execute(
        "SELECT xmin::text FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = '' "
        "AND checkpoint->'channel_versions' ? 'branch:to:execute' "
        "ORDER BY checkpoint_id LIMIT 1",
        (thread_id,),
    ).fetchone()
    assert row is not None
    return str(row[0])


def _intents(sql: psycopg.Connection[Any], thread_id: str) -> list[tuple[Any, ...]]:
    return sql.execute(
        "SELECT tool, status, attempts, xmin::text FROM waystone.effects "
        "WHERE thread_id = %s ORDER BY ordinal",
        (thread_id,),
    ).fetchall()


def test_an_approved_reconcilable_intent_commits_with_authorizes_checkpoint(
    runtime: Runtime, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    """No commit of its own before the call: and execute, in the process that committed
    it, calls the provider at once (a missed hand-over would show as a reconciliation)."""
    status = runtime.invoke("refund", SMALL)
    assert status.state == "done", status
    (refund, _notify) = _intents(sql, status.thread_id)
    assert refund[:3] == ("refund", "confirmed", 1)
    assert _event_count(sql, status.thread_id, "effect-resume") == 0
    assert _event_count(sql, status.thread_id, "reconciled") == 0
    assert len(provider.ledger()["refunds"]) == 1


def test_killed_after_authorizes_checkpoint_the_intent_is_reconciled_then_applied_once(
    cli: Cli, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    thread_id = _start(cli, "refund", SMALL, {})
    _killed_at(cli, thread_id, "execute:after-intent@refund")
    assert provider.ledger()["refunds"] == []  # never called
    ((tool, state, attempts, xmin),) = _intents(sql, thread_id)
    assert (tool, state, attempts) == ("refund", "intent", 1)
    assert xmin == _authorized_xmin(sql, thread_id)  # one transaction with the approval

    status = _resumed(cli, thread_id)
    assert status["state"] == "done", status
    assert len(provider.ledger()["refunds"]) == 1  # looked up (absent), then applied once
    assert _event_count(sql, thread_id, "reconciled") == 1


def test_a_persons_approval_rides_the_intent_with_authorizes_checkpoint(
    cli: Cli, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    """Resumed with a decision, authorize's writes go out before its checkpoint (a resume
    value is never held), in a transaction LangGraph does not wait for: the intent waits
    for the checkpoint, so execute finds it committed and handed over."""
    thread_id = _start(cli, "refund", REFUND_INPUT, {})
    assert _resumed(cli, thread_id)["state"] == "waiting"
    approved = cli("approve", thread_id, "--by", "ana")
    assert approved.returncode == 0, approved.stderr
    _killed_at(cli, thread_id, "execute:after-intent@refund")
    ((tool, state, attempts, xmin),) = _intents(sql, thread_id)
    assert (tool, state, attempts) == ("refund", "intent", 1)
    assert xmin == _authorized_xmin(sql, thread_id)
    assert provider.ledger()["refunds"] == []
    assert _resumed(cli, thread_id)["state"] == "done"
    assert len(provider.ledger()["refunds"]) == 1


def test_an_intent_the_provider_would_not_deduplicate_is_committed_by_execute(
    cli: Cli, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    """Found later, such an intent means "maybe called": a lookup settles it only after the
    provider's deadline (notify_customer), a tool with no lookup needs a person (fax). So
    it is committed on its own, right before the call, never with authorize's checkpoint."""
    cases = [
        ("refund", SMALL, {}, "execute:after-intent@notify_customer", "notify_customer"),
        ("unsafe", {"to": "ana@example.com"}, UNSAFE, "execute:after-intent@fax", "fax"),
    ]
    for agent, payload, env, point, tool in cases:
        thread_id = _start(cli, agent, payload, env)
        _killed_at(cli, thread_id, point, env)
        (xmin,) = [r[3] for r in _intents(sql, thread_id) if r[0] == tool and r[1] == "intent"]
        in_checkpoints = sql.execute(
            "SELECT count(*) FROM checkpoints WHERE thread_id = %s AND xmin::text = %s",
            (thread_id, xmin),
        ).fetchone()
        assert in_checkpoints == (0,), tool  # its own commit


def test_a_tool_allowed_one_attempt_commits_its_own_intent(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    """A ridden intent found after a stop is applied as a second attempt: a tool allowed
    only one would go to a person without any call, so its intent is execute's own. Seen
    by the provider: whether the intent it is called for was committed with a checkpoint."""
    spec = bench_storage.agent(1)
    seen: list[bool] = []

    def apply(args: dict[str, Any], key: str, timeout: float) -> dict[str, Any]:
        row = sql.execute(
            "SELECT e.xmin::text IN (SELECT c.xmin::text FROM checkpoints c "
            "WHERE c.thread_id = e.thread_id) FROM waystone.effects e WHERE e.key = %s",
            (key,),
        ).fetchone()
        assert row is not None
        seen.append(bool(row[0]))
        return {"id": key}

    for attempts in (4, 1):
        tool = replace(spec.tools["note"], apply=apply, retry=RetryPolicy(max_attempts=attempts))
        agent = replace(spec, name=f"attempts{attempts}", tools={"note": tool})
        runtime.register(agent)
        assert runtime.invoke(agent.name, {}).state == "done"
    assert seen == [True, False]  # ridden with authorize's checkpoint; then not


def test_a_drain_between_authorize_and_execute_costs_no_attempt(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    """Drained right after authorize's checkpoint (a deploy), the run hands back the intent
    that rode with it: never called, it counts no attempt, and the resumed run has the
    tool's whole budget. Here two attempts, the first failing transiently: counted as a
    second and a third, the run would go to a person."""
    spec = bench_storage.agent(1)
    control = RunControl()
    calls: list[str] = []

    class DrainingPolicy:
        def decide(self, tool: str, risk: str, args: dict[str, Any]) -> PolicyDecision:
            control.request_drain("deploy")  # the step finishes, then the run stops
            return PolicyDecision("allow", "harmless")

    def apply(args: dict[str, Any], key: str, timeout: float) -> dict[str, Any]:
        calls.append(key)
        if len(calls) == 1:
            raise TransientError("503 from the provider")
        return {"id": key}

    tool = replace(
        spec.tools["note"], apply=apply, retry=RetryPolicy(max_attempts=2, base_delay_s=0.01)
    )
    agent = replace(spec, name="drained", tools={"note": tool}, policy=DrainingPolicy())
    runtime.register(agent)
    thread_id = runtime.start(agent.name, {}).thread_id
    run = parts(runtime).registry.claim(owner="deploying", lease_seconds=30, thread_id=thread_id)
    assert run is not None
    assert runtime.drive(run, control) is None  # drained
    assert calls == []
    assert _intents(sql, thread_id)[0][1:3] == ("intent", 0)  # handed back
    assert _event_count(sql, thread_id, "intent-handed-back") == 1

    runtime.register(replace(agent, policy=spec.policy))
    status = runtime.run(thread_id)
    assert status.state == "done", status
    assert len(calls) == 2 and len(set(calls)) == 1  # two attempts, one key
    assert _intents(sql, thread_id)[0][1:3] == ("confirmed", 2)


def test_only_an_intent_never_called_is_handed_back(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    """An untaken hand-over whose row was counted again since (execute read the ledger
    before the ride's answer came, and called through record_intent) keeps its count;
    one still at its first count is handed back. Each hand-over is forgotten once asked."""
    run = claimed(runtime)
    ledger, lease = parts(runtime).ledger, run.lease_token
    for ordinal, called in ((1, True), (2, False)):
        intent = {"thread_id": run.thread_id, "ordinal": ordinal, "tool": "note"}
        ledger.ride_intent(key=f"k{ordinal}-{run.thread_id}", args={}, fence=lease, **intent)
        parts(runtime).saver.flush(run.thread_id)  # committed: the ride's answer keeps the row
        if called:
            ledger.record_intent(
                key=f"k1-{run.thread_id}", args={}, fence=lease, timeout_s=None, **intent
            )
    assert ledger.hand_back(run.thread_id, lease) == (1, 2)
    assert [r[1:3] for r in _intents(sql, run.thread_id)] == [("intent", 2), ("intent", 0)]
    assert ledger.hand_back(run.thread_id, lease) == (0, 0)  # forgotten


def test_a_reconcilable_receipt_commits_with_executes_checkpoint(
    cli: Cli, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    thread_id = _start(cli, "refund", SMALL, {})
    _killed_at(cli, thread_id, "execute:after-receipt@refund")
    assert len(provider.ledger()["refunds"]) == 1  # the provider applied it
    assert _ledger(sql, thread_id) == [("refund", "intent")]  # the receipt died with it
    assert _event_count(sql, thread_id, "effect-applied") == 0

    status = _resumed(cli, thread_id)
    assert status["state"] == "done", status
    assert len(provider.ledger()["refunds"]) == 1  # looked up, not applied again
    assert _ledger(sql, thread_id) == [("refund", "confirmed"), ("notify_customer", "confirmed")]
    assert _event_count(sql, thread_id, "reconciled") == 1


def test_a_receipt_only_a_person_could_reconcile_is_committed_at_once(
    cli: Cli, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    thread_id = _start(cli, "unsafe", {"to": "ana@example.com"}, UNSAFE)
    _killed_at(cli, thread_id, "execute:after-receipt@fax", UNSAFE)
    assert _ledger(sql, thread_id) == [("fax", "applied")]  # no lookup, no key: kept now

    status = _resumed(cli, thread_id, UNSAFE)
    assert status["state"] == "done", status  # not needs-human: the receipt survived
    assert len(provider.ledger()["notifications"]) == 1
    assert _ledger(sql, thread_id) == [("fax", "confirmed")]


def test_a_confirmation_commits_with_confirms_checkpoint(
    cli: Cli, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    thread_id = _start(cli, "refund", SMALL, {})
    _killed_at(cli, thread_id, "confirm:after-record@refund")
    assert _ledger(sql, thread_id) == [("refund", "applied")]  # the confirmation died too
    assert _event_count(sql, thread_id, "effect-confirmed") == 0

    status = _resumed(cli, thread_id)
    assert status["state"] == "done", status
    assert len(provider.ledger()["refunds"]) == 1
    assert _ledger(sql, thread_id) == [("refund", "confirmed"), ("notify_customer", "confirmed")]
    assert _event_count(sql, thread_id, "effect-confirmed") == 2  # read back once more


def test_a_run_that_ends_moves_on_in_its_last_checkpoints_transaction(
    runtime: Runtime, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    thread_id = runtime.start("refund", SMALL).thread_id
    status = runtime.run(thread_id)
    assert status.state == "done", status
    assert len(provider.ledger()["refunds"]) == 1
    held = sql.execute(
        "SELECT updated_at FROM waystone.runs WHERE thread_id = %s", (thread_id,)
    ).fetchone()
    assert held is not None and status.updated_at == held[0].isoformat()  # Postgres' clock

    def xmins(query: str) -> list[str]:
        return [r[0] for r in sql.execute(query, (thread_id,)).fetchall()]

    checkpoints = xmins(
        "SELECT xmin::text FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = '' "
        "ORDER BY checkpoint_id"
    )
    (run,) = xmins("SELECT xmin::text FROM waystone.runs WHERE thread_id = %s")
    (done,) = xmins(
        "SELECT xmin::text FROM waystone.run_events WHERE thread_id = %s "
        "AND kind = 'transition' AND to_state = 'done'"
    )
    assert run == done == checkpoints[-1]  # the last checkpoint and `done`: one commit
    assert len(set(checkpoints)) == len(checkpoints) - 2  # the input ones ride with the first
    confirmed = xmins("SELECT xmin::text FROM waystone.effects WHERE thread_id = %s")
    assert len(confirmed) == 2 and set(confirmed) <= set(checkpoints)  # with confirm's


def test_an_end_never_quietly_changes_nothing(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    run = claimed(runtime)
    statement, ended = parts(runtime).registry.ending(run, "done", "goal met", {"checks": 1})
    assert ended.state == "done" and ended.lease_owner is None
    # the run is no longer running, under the same token (no path does this, but if one
    # ever did): the end fails, rather than report a run done that Postgres does not hold
    sql.execute(
        "UPDATE waystone.runs SET state = 'waiting', reason = 'test' WHERE thread_id = %s",
        (run.thread_id,),
    )
    with pytest.raises(TransitionNotAllowed, match="not running"):
        parts(runtime).db.batch([("end_run", _params(statement))], fence=run.lease_token)
    sql.execute(
        "UPDATE waystone.runs SET state = 'running', reason = 'test' WHERE thread_id = %s",
        (run.thread_id,),
    )
    parts(runtime).db.batch([("end_run", _params(statement))], fence=run.lease_token)
    assert parts(runtime).registry.get(run.thread_id).state == "done"


def _params(statement: Any) -> dict[str, Any]:
    _query, params, _many = statement
    return dict(params)
