"""The refund agent end to end on a real Postgres and a real provider on loopback."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from tests.conftest import REFUND_INPUT, wait_until
from tests.support.background import Background
from tests.support.inside import parts
from tests.support.rows import effects, lock_waits
from waystone._runs.dashboard import snapshot
from waystone.errors import BadInput, TransitionNotAllowed, UnknownThread
from waystone.examples.provider import ProviderProcess
from waystone.runtime import Runtime


def _refunds_for(provider: ProviderProcess, order_id: str) -> list[dict[str, Any]]:
    return [r for r in provider.ledger()["refunds"] if r["order_id"] == order_id]


def test_start_then_run_waits_for_approval(runtime: Runtime, provider: ProviderProcess) -> None:
    started = runtime.start("refund", REFUND_INPUT)
    assert started.state == "queued"
    waiting = runtime.run(started.thread_id)
    assert waiting.state == "waiting"
    assert waiting.step == "authorize"
    pending = waiting.pending_approval
    assert pending is not None
    assert pending["tool"] == "refund"
    assert pending["args"] == {"order_id": "1001", "amount": "120.00", "currency": "EUR"}
    assert pending["reason"] == "refunds above 100.00 need approval"
    assert pending["idempotency_key"].startswith("ws-refund-")
    assert provider.ledger() == {"refunds": [], "notifications": [], "refused": []}


def test_approve_then_run_ends_done_with_one_refund_and_one_notification(
    runtime: Runtime, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    thread_id = runtime.start("refund", REFUND_INPUT).thread_id
    runtime.run(thread_id)
    runtime.approve(thread_id, by="ana", comment="fine")
    done = runtime.run(thread_id)
    assert done.state == "done", done.reason
    ledger = provider.ledger()
    assert len(_refunds_for(provider, "1001")) == 1
    assert [n["to"] for n in ledger["notifications"]] == ["ana@example.com"]
    assert effects(sql, thread_id) == [
        ("refund", "confirmed", 1),
        ("notify_customer", "confirmed", 1),
    ]
    transitions = sql.execute(
        "SELECT from_state, to_state FROM waystone.run_events "
        "WHERE thread_id = %s AND kind = 'transition' ORDER BY id",
        (thread_id,),
    ).fetchall()
    assert transitions == [
        (None, "queued"),
        ("queued", "running"),
        ("running", "waiting"),
        ("waiting", "running"),
        ("running", "done"),
    ]


def test_small_refund_needs_no_approval(runtime: Runtime, provider: ProviderProcess) -> None:
    thread_id = runtime.start("refund", {**REFUND_INPUT, "amount": "40.00"}).thread_id
    assert runtime.run(thread_id).state == "done"
    assert [r["amount"] for r in _refunds_for(provider, "1001")] == ["40.00"]


def test_invoke_creates_and_claims_the_run_in_one_transaction(
    runtime: Runtime, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    """``invoke`` is ``start`` then ``run`` with one commit less: the run's creation and
    its claim are one transaction (their events carry one xmin)."""
    waiting = runtime.invoke("refund", REFUND_INPUT, key="order-1001")
    assert waiting.state == "waiting" and waiting.pending_approval is not None
    created, claimed = sql.execute(
        "SELECT to_state, lease_token, xmin::text FROM waystone.run_events "
        "WHERE thread_id = %s AND kind = 'transition' ORDER BY id LIMIT 2",
        (waiting.thread_id,),
    ).fetchall()
    assert (created[0], claimed[0], claimed[1]) == ("queued", "running", 1)
    assert created[2] == claimed[2]
    runtime.approve(waiting.thread_id, by="ana")
    assert runtime.run(waiting.thread_id).state == "done"
    assert len(_refunds_for(provider, "1001")) == 1


def test_invoke_with_a_used_key_drives_that_run_and_never_a_second(
    runtime: Runtime, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    small = {**REFUND_INPUT, "amount": "40.00"}
    queued = runtime.start("refund", small, key="k-40")
    assert runtime.invoke("refund", small, key="k-40").state == "done"
    assert runtime.invoke("refund", small, key="k-40").state == "done"  # ended: its status
    runs = sql.execute("SELECT thread_id FROM waystone.runs WHERE start_key = 'k-40'").fetchall()
    assert runs == [(queued.thread_id,)]
    assert [r["amount"] for r in _refunds_for(provider, "1001")] == ["40.00"]
    with pytest.raises(TransitionNotAllowed, match="another agent or input"):
        runtime.invoke("refund", REFUND_INPUT, key="k-40")


def test_invoke_never_claims_a_run_whose_thread_id_is_taken(
    runtime: Runtime, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    queued = runtime.start("refund", REFUND_INPUT, thread_id="taken")
    with pytest.raises(TransitionNotAllowed, match="already exists"):
        runtime.invoke("refund", {**REFUND_INPUT, "amount": "40.00"}, thread_id="taken")
    row = sql.execute(
        "SELECT state, lease_token, input->>'amount' FROM waystone.runs WHERE thread_id = 'taken'"
    ).fetchone()
    assert row == ("queued", 0, "120.00")
    assert runtime.status(queued.thread_id).state == "queued"
    assert provider.ledger() == {"refunds": [], "notifications": [], "refused": []}
    with pytest.raises(BadInput, match="unknown agent"):
        runtime.invoke("nope", {})


def test_invoke_wakes_no_worker_a_start_does(
    runtime: Runtime, provider: ProviderProcess, database_url: str
) -> None:
    """A run created and claimed in one transaction is never runnable once committed: its
    insert announces nothing (an idle worker would wake, claim nothing, and wait again)."""
    small = {**REFUND_INPUT, "amount": "40.00"}
    with psycopg.connect(database_url, autocommit=True) as listener:
        listener.execute("LISTEN waystone_runnable")
        invoked = runtime.invoke("refund", small)
        assert invoked.state == "done"
        started = runtime.start("refund", small)
        heard: list[str] = []
        for note in listener.notifies(timeout=30):  # in commit order: the start's comes last
            heard.append(note.payload)
            if note.payload == started.thread_id:
                break
    assert heard[-1] == started.thread_id
    assert invoked.thread_id not in heard


def test_reject_ends_failed_at_once_with_no_driver_and_no_refund(
    runtime: Runtime, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    """The process that rejects ends the run: ``failed`` with the reason when ``reject``
    returns (the decision, its event and the transition commit in one transaction), with
    no worker or ``run``; nothing can claim it after, and its history keeps the decision."""
    thread_id = runtime.start("refund", REFUND_INPUT).thread_id
    runtime.run(thread_id)
    rejected = runtime.reject(thread_id, by="bob", reason="order was never paid")
    reason = "rejected by bob: order was never paid"
    assert (rejected.state, rejected.reason, rejected.pending_approval) == ("failed", reason, None)
    status = runtime.status(thread_id)
    assert (status.state, status.reason, status.pending_approval) == ("failed", reason, None)
    assert runtime.list("waiting") == []
    assert snapshot(runtime)["pending_approvals"] == []
    written = sql.execute(
        "SELECT 'signal', xmin::text FROM waystone.signals WHERE thread_id = %(t)s"
        " AND name = 'approval' AND consumed_at IS NOT NULL"
        " UNION ALL SELECT kind, xmin::text FROM waystone.run_events WHERE thread_id = %(t)s"
        " AND (kind = 'decision' OR to_state = 'failed')",
        {"t": thread_id},
    ).fetchall()
    assert sorted(kind for kind, _ in written) == ["decision", "signal", "transition"]
    assert len({xmin for _, xmin in written}) == 1  # one transaction
    assert parts(runtime).registry.claim(owner="w", lease_seconds=30, agents=["refund"]) is None
    with pytest.raises(TransitionNotAllowed, match="is failed"):
        runtime.run(thread_id)
    events = runtime.history(thread_id)["events"]
    assert "reject by bob: order was never paid" in [e["reason"] for e in events]
    assert (events[-1]["from_state"], events[-1]["to_state"], events[-1]["reason"]) == (
        "waiting",
        "failed",
        reason,
    )
    assert provider.ledger() == {"refunds": [], "notifications": [], "refused": []}


def test_a_rejection_repeated_after_it_ended_the_run_is_one(
    runtime: Runtime, provider: ProviderProcess
) -> None:
    thread_id = runtime.start("refund", REFUND_INPUT).thread_id
    runtime.run(thread_id)
    runtime.reject(thread_id, by="bob", reason="no")
    assert runtime.reject(thread_id, by="bob", reason="no").state == "failed"
    with pytest.raises(TransitionNotAllowed, match="reject by bob"):
        runtime.approve(thread_id, by="ana")
    kinds = [e["kind"] for e in runtime.history(thread_id)["events"]]
    assert (kinds.count("decision"), kinds.count("decision-repeated")) == (1, 1)


@pytest.mark.parametrize("taker_approved", [True, False], ids=["approved", "taken-over"])
def test_a_rejection_racing_a_claim_leaves_the_run_to_its_claimer(
    runtime: Runtime,
    provider: ProviderProcess,
    database_url: str,
    sql: psycopg.Connection[Any],
    taker_approved: bool,
) -> None:
    """A rejection moves the run out of ``waiting`` under the lease token it read. A claim
    that commits first (a worker after another person's approval, or a takeover) keeps the
    run: the rejection waits for it, then changes nothing, and the run goes on."""
    thread_id = runtime.start("refund", REFUND_INPUT).thread_id
    pending = runtime.run(thread_id).pending_approval
    assert pending is not None
    interrupt_id = parts(runtime).registry.get(thread_id).wait_id
    taker = psycopg.connect(database_url)  # mid-transaction: approve, then claim
    if taker_approved:
        approval = {
            "choice": "approve",
            "digest": pending["digest"],
            "key": pending["idempotency_key"],
            "by": "ana",
            "comment": None,
            "args": None,
        }
        taker.execute(
            "INSERT INTO waystone.signals (thread_id, name, dedupe_key, payload, actor)"
            " VALUES (%s, 'approval', %s, %s, 'ana')",
            (thread_id, interrupt_id, Jsonb(approval)),
        )
    taker.execute(
        "UPDATE waystone.runs SET state = 'running', reason = 'claimed', actor = 'w',"
        " lease_token = lease_token + 1, lease_owner = 'w',"
        " lease_expires_at = clock_timestamp() - interval '1 second' WHERE thread_id = %s",
        (thread_id,),
    )
    rejecter = Background(lambda: runtime.reject(thread_id, by="bob", reason="no"))
    try:
        wait_until(
            lambda: lock_waits(sql) == 1, "the rejection to wait for the claim's transaction"
        )
    finally:
        with taker:  # commits, then closes
            pass
        rejected = rejecter.join(timeout=30)
    assert isinstance(rejected, TransitionNotAllowed), rejected
    decisions = sql.execute(
        "SELECT payload->>'choice' FROM waystone.signals WHERE thread_id = %s", (thread_id,)
    ).fetchall()
    assert decisions == ([("approve",)] if taker_approved else [])
    assert parts(runtime).registry.get(thread_id).state == "running"
    if taker_approved:  # its lease expired: the next claim resumes it with the approval
        assert runtime.run(thread_id).state == "done"
        assert len(_refunds_for(provider, "1001")) == 1
    else:
        assert provider.ledger()["refunds"] == []


def test_an_approved_run_shows_as_approved_and_waiting_for_a_worker(
    runtime: Runtime, provider: ProviderProcess
) -> None:
    """Once approved, a run that no worker has resumed yet is not awaiting a decision any
    more: status, list and the dashboard say who approved it and that a worker resumes it
    (a decision recorded for another action changes nothing)."""
    thread_id = runtime.start("refund", REFUND_INPUT).thread_id
    runtime.run(thread_id)
    stale = {"choice": "approve", "digest": "sha256:other", "key": "k", "by": "mallory"}
    parts(runtime).signals.record(thread_id, "approval", "sha256:other", stale, "mallory")
    still = runtime.status(thread_id)
    assert still.pending_approval is not None and still.decision_recorded is False
    approved = runtime.approve(thread_id, by="ana", comment="fine")
    shown = "approved by ana; waiting for a worker to resume it"
    for status in (approved, runtime.status(thread_id), *runtime.list("waiting")):
        assert (status.state, status.pending_approval, status.decision_recorded) == (
            "waiting",
            None,
            True,
        )
        assert status.reason.startswith(shown), status.reason
    data = snapshot(runtime)
    assert data["pending_approvals"] == []
    assert [r["reason"][: len(shown)] for r in data["active_runs"]] == [shown]
    assert runtime.run(thread_id).state == "done"
    assert len(_refunds_for(provider, "1001")) == 1


def test_a_requeued_rejection_asks_again_then_refunds_once(
    runtime: Runtime, provider: ProviderProcess
) -> None:
    """A requeued run resumes as if the node before the one that ended it had just run,
    and goes where that node routes: after a rejection (authorize), propose's routing
    leads to authorize, which asks for the same action's approval again."""
    thread_id = runtime.start("refund", REFUND_INPUT).thread_id
    asked = runtime.run(thread_id).pending_approval
    assert asked is not None
    assert runtime.reject(thread_id, by="bob", reason="check the order first").state == "failed"
    runtime.requeue(thread_id, by="bob", reason="order checked")
    again = runtime.run(thread_id)
    assert again.state == "waiting" and again.pending_approval is not None
    assert again.pending_approval["idempotency_key"] == asked["idempotency_key"]
    runtime.approve(thread_id, by="bob")
    assert runtime.run(thread_id).state == "done"
    assert len(_refunds_for(provider, "1001")) == 1


def test_edit_approves_the_edited_action_with_a_new_key(
    runtime: Runtime, provider: ProviderProcess
) -> None:
    thread_id = runtime.start("refund", REFUND_INPUT).thread_id
    original = runtime.run(thread_id).pending_approval
    assert original is not None
    runtime.approve(thread_id, by="ana", args={"amount": "110.00"})
    assert runtime.run(thread_id).state == "done"
    refunds = _refunds_for(provider, "1001")
    assert [r["amount"] for r in refunds] == ["110.00"]
    assert refunds[0]["idempotency_key"] != original["idempotency_key"]


def test_approval_is_bound_to_the_action_digest(
    runtime: Runtime, provider: ProviderProcess
) -> None:
    """A decision recorded for another digest does not release the action."""
    thread_id = runtime.start("refund", REFUND_INPUT).thread_id
    runtime.run(thread_id)
    stale = {"choice": "approve", "digest": "sha256:someotheraction", "by": "mallory"}
    parts(runtime).signals.record(thread_id, "approval", "sha256:someotheraction", stale, "mallory")
    after = runtime.run(thread_id)
    assert after.state == "waiting"
    assert after.pending_approval is not None
    assert provider.ledger()["refunds"] == []
    # the stale signal was consumed, so the run is not claimable again without a decision
    with pytest.raises(TransitionNotAllowed, match="waits for a decision"):
        runtime.run(thread_id)


def test_the_same_decision_twice_is_a_repeat_a_different_one_is_refused(
    runtime: Runtime, provider: ProviderProcess
) -> None:
    thread_id = runtime.start("refund", REFUND_INPUT).thread_id
    runtime.run(thread_id)
    runtime.approve(thread_id, by="ana", comment="ok")
    runtime.approve(thread_id, by="ana", comment="ok")
    with pytest.raises(TransitionNotAllowed, match="already recorded"):
        runtime.reject(thread_id, by="bob", reason="no")
    assert runtime.run(thread_id).state == "done"
    assert len(_refunds_for(provider, "1001")) == 1


def test_errors_leave_the_run_unchanged(runtime: Runtime, provider: ProviderProcess) -> None:
    with pytest.raises(UnknownThread):
        runtime.status("no-such-thread")
    thread_id = runtime.start("refund", REFUND_INPUT).thread_id
    before = runtime.status(thread_id)
    with pytest.raises(TransitionNotAllowed, match="not waiting"):
        runtime.approve(thread_id, by="ana")
    assert runtime.status(thread_id) == before
    runtime.run(thread_id)
    waiting = runtime.status(thread_id)
    with pytest.raises(BadInput, match="amount"):
        runtime.approve(thread_id, by="ana", args={"amount": "lots"})
    assert runtime.status(thread_id) == waiting
    with pytest.raises(BadInput):
        runtime.start("refund", {"order_id": "1"})
    with pytest.raises(BadInput, match="unknown agent"):
        runtime.start("nope", REFUND_INPUT)


def test_checkpoints_are_rows_read_back_from_a_fresh_process(
    runtime: Runtime, provider: ProviderProcess, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    thread_id = runtime.start("refund", REFUND_INPUT).thread_id
    runtime.run(thread_id)
    runtime.approve(thread_id, by="ana")
    runtime.run(thread_id)
    (count,) = sql.execute(
        "SELECT count(*) FROM checkpoints WHERE thread_id = %s", (thread_id,)
    ).fetchone() or (0,)
    (writes,) = sql.execute(
        "SELECT count(*) FROM checkpoint_writes WHERE thread_id = %s", (thread_id,)
    ).fetchone() or (0,)
    assert count >= 12 and writes > 0
    code = (
        "import json, sys\n"
        "from waystone import Runtime, Settings\n"
        "from waystone.examples import refund\n"
        f"rt = Runtime(Settings(database_url={database_url!r}), {{'refund': refund.build()}})\n"
        f"g = rt.graph('refund')\n"
        f"hist = list(g.get_state_history(rt.config({thread_id!r})))\n"
        "print(json.dumps({'n': len(hist), 'last': hist[0].values['outcome'],"
        " 'nexts': [list(h.next) for h in hist]}))\n"
        "rt.close()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    data = json.loads(proc.stdout)
    assert data["n"] == count
    assert data["last"] == {
        "state": "done",
        "reason": "goal verified: all checks pass",
        "at": "verify",
    }
    assert ["execute"] in data["nexts"] and ["confirm"] in data["nexts"]
