"""The real ``waystone`` command in subprocesses: each step a new process."""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import string
from typing import Any

import psycopg

from tests.conftest import REFUND_INPUT, Cli
from tests.support.outputs import ok
from waystone._crash import CRASH_POINTS
from waystone.examples.provider import ProviderProcess


def start(cli: Cli) -> str:
    data = ok(cli("start", "--agent", "refund", "--input", json.dumps(REFUND_INPUT), "--json"))
    assert data["state"] == "queued"
    return str(data["thread_id"])


def test_start_run_approve_run_from_separate_processes(cli: Cli, provider: ProviderProcess) -> None:
    thread_id = start(cli)
    waiting = ok(cli("run", thread_id, "--json"))
    assert waiting["state"] == "waiting"
    pending = waiting["pending_approval"]
    assert (pending["tool"], pending["reason"]) == ("refund", "refunds above 100.00 need approval")
    assert pending["args"] == {"order_id": "1001", "amount": "120.00", "currency": "EUR"}
    status = ok(cli("status", thread_id, "--json"))
    assert {
        "thread_id",
        "state",
        "step",
        "pending_approval",
        "agent",
        "attempts",
        "updated_at",
    } <= set(status)
    assert status["step"] == "authorize"
    approved = ok(cli("approve", thread_id, "--by", "ana", "--comment", "ok", "--json"))
    assert approved["decision_recorded"] is True
    done = ok(cli("run", thread_id, "--json"))
    assert done["state"] == "done"
    ledger = provider.ledger()
    assert [r["order_id"] for r in ledger["refunds"]] == ["1001"]
    assert [n["to"] for n in ledger["notifications"]] == ["ana@example.com"]
    history = ok(cli("history", thread_id, "--json"))
    kinds = [e["kind"] for e in history["events"]]
    assert "decision" in kinds and kinds[-1] == "transition"
    assert [e["status"] for e in history["effects"]] == ["confirmed", "confirmed"]
    listed = ok(cli("list", "--state", "done", "--json"))
    assert [r["thread_id"] for r in listed["runs"]] == [thread_id]
    human = cli("history", thread_id)
    assert human.returncode == 0 and "running -> done" in human.stdout


def test_reject_from_the_cli_ends_the_run_failed_with_no_run(
    cli: Cli, provider: ProviderProcess
) -> None:
    thread_id = start(cli)
    ok(cli("run", thread_id, "--json"))
    rejected = ok(cli("reject", thread_id, "--reason", "fraud suspected", "--json"))
    reason = "rejected by tester: fraud suspected"
    assert (rejected["state"], rejected["reason"]) == ("failed", reason)
    status = ok(cli("status", thread_id, "--json"))
    assert (status["state"], status["reason"], status["pending_approval"]) == (
        "failed",
        reason,
        None,
    )
    assert ok(cli("list", "--state", "waiting", "--json")) == {"runs": []}
    assert ok(cli("dashboard", "--json"))["pending_approvals"] == []
    assert provider.ledger()["refunds"] == []


def test_run_that_ends_needs_human_exits_7_and_its_hints_run_as_printed(
    cli: Cli, provider: ProviderProcess
) -> None:
    thread_id = start(cli)
    waiting = cli("run", thread_id)
    assert waiting.returncode == 0, waiting.stderr  # waiting for its approval is no failure
    for hint in re.findall(r"`waystone ([^`]+)`", waiting.stdout):
        if hint.startswith("approve"):
            assert cli(*shlex.split(hint)).returncode == 0, hint
    provider.inject("refunds", "transient", times=10)  # more than the retry budget
    stopped = cli("run", thread_id)
    assert stopped.returncode == 7, stopped.stderr
    assert f"{thread_id}  needs-human" in stopped.stdout
    assert f"error: run {thread_id} ended needs-human" in stopped.stderr
    hints = list(dict.fromkeys(re.findall(r"`waystone ([^`]+)`", stopped.stdout + stopped.stderr)))
    assert sorted(h.split()[0] for h in hints) == ["history", "requeue"], hints
    provider.clear_faults()
    for hint in hints:  # each one runs as printed: history, then requeue
        assert cli(*shlex.split(hint)).returncode == 0, hint
    done = cli("run", thread_id, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["state"] == "done"


def test_run_json_that_ends_failed_exits_7_with_its_status_on_stdout(
    cli: Cli, provider: ProviderProcess
) -> None:
    thread_id = start(cli)
    ok(cli("run", thread_id, "--json"))
    ok(cli("approve", thread_id, "--json"))
    provider.inject("refunds", "permanent")
    failed = cli("run", thread_id, "--json")
    assert failed.returncode == 7, failed.stderr
    assert json.loads(failed.stdout)["state"] == "failed"
    assert f"run {thread_id} ended failed" in failed.stderr


def test_exit_codes_and_unchanged_state(
    cli: Cli, provider: ProviderProcess, database_url: str
) -> None:
    unknown = cli("status", "no-such-thread")
    assert unknown.returncode == 3 and "unknown thread" in unknown.stderr
    assert cli("approve", "no-such-thread").returncode == 3
    thread_id = start(cli)

    def snapshot() -> tuple[Any, ...]:
        with psycopg.connect(database_url) as conn:
            run = conn.execute(
                "SELECT state, updated_at, lease_token FROM waystone.runs WHERE thread_id = %s",
                (thread_id,),
            ).fetchone()
            events = conn.execute(
                "SELECT count(*) FROM waystone.run_events WHERE thread_id = %s", (thread_id,)
            ).fetchone()
            signals = conn.execute("SELECT count(*) FROM waystone.signals").fetchone()
        return (run, events, signals)

    before = snapshot()
    not_waiting = cli("approve", thread_id)
    assert not_waiting.returncode == 4 and "not waiting" in not_waiting.stderr
    assert snapshot() == before
    ok(cli("run", thread_id, "--json"))
    waiting = snapshot()
    for bad in ("{not json", "[1, 2]", '{"amount": "lots"}'):
        result = cli("approve", thread_id, "--args", bad)
        assert result.returncode == 2, (bad, result.stderr)
        assert "error" in result.stderr
        assert snapshot() == waiting
    bad_input = cli("start", "--agent", "refund", "--input", "{oops")
    assert bad_input.returncode == 2 and "not valid JSON" in bad_input.stderr
    assert cli("run", thread_id).returncode == 4  # waiting with no decision: nothing to run
    assert snapshot() == waiting


def _recorded(database_url: str) -> tuple[Any, ...]:
    """Every run, event, signal and vault value: what refused input must leave alone."""
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT (SELECT string_agg(thread_id || ':' || state, ',' ORDER BY thread_id)"
            " FROM waystone.runs), (SELECT count(*) FROM waystone.run_events),"
            " (SELECT count(*) FROM waystone.signals), (SELECT count(*) FROM waystone.vault)"
        ).fetchone()
    assert row is not None
    return tuple(row)


def test_approve_with_args_null_is_refused_not_taken_for_a_plain_approval(
    cli: Cli, provider: ProviderProcess, database_url: str
) -> None:
    thread_id = start(cli)
    ok(cli("run", thread_id, "--json"))
    before = _recorded(database_url)
    for given, what in (("null", "not null"), ("{}", "not an empty object"), ('"x"', "a string")):
        result = cli("approve", thread_id, "--args", given)
        assert result.returncode == 2, (given, result.stderr)
        assert "--args must be a non-empty JSON object" in result.stderr and what in result.stderr
    assert _recorded(database_url) == before
    status = ok(cli("status", thread_id, "--json"))
    assert status["pending_approval"] is not None and status["decision_recorded"] is False


def test_bad_identifiers_and_deep_json_exit_2_and_change_nothing(
    cli: Cli, provider: ProviderProcess, database_url: str
) -> None:
    """A 3,000-character thread id, unprintable or padded names and keys, arguments that
    are not UTF-8 and JSON nested past the limit are bad input (exit 2, a message saying
    what is wrong), not a lost database (exit 6) or a traceback."""
    thread_id = start(cli)
    before = _recorded(database_url)
    zoe = {**REFUND_INPUT, "email": "zoe@example.com"}  # a value the vault does not hold yet
    refund = ("start", "--agent", "refund", "--input", json.dumps(zoe))
    # text Postgres cannot compress: too long for an index row, as such an id is
    long_id = "".join(random.Random(15).choices(string.ascii_letters + string.digits, k=3000))
    not_utf8 = os.fsdecode(b"\xff")  # as Python decodes such an argument
    cases = [
        ((*refund, "--thread-id", long_id), "the thread id is 3000 characters long"),
        ((*refund, "--key", "order\x071001"), "the start key holds U+0007"),
        (("start", "--agent", "refund", "--input", "[" * 5000 + "]" * 5000), "nested too deep"),
        (("start", "--agent", "refund", "--input", '{"a":' * 40 + "1" + "}" * 40), "at most 32"),
        (("status", "t" * 3000), "the thread id is 3000 characters long"),
        (("status", not_utf8), "lone surrogate"),
        (("signal", thread_id, "n" * 3000), "the signal name is 3000 characters long"),
        (("signal", thread_id, "refund.settled", "--key", " evt_1"), "signal key starts or"),
        (
            ("cancel", thread_id, "--reason", "x", "--by", "ana\nbob"),
            "'by' (who acted) holds U+000A",
        ),
        (("cancel", thread_id, "--reason", not_utf8), "not valid text"),
    ]
    for args, message in cases:
        result = cli(*args)
        assert result.returncode == 2, (args[:2], result.returncode, result.stderr)
        assert message in result.stderr, (args[:2], result.stderr)
        assert "Traceback" not in result.stderr
    assert _recorded(database_url) == before


def test_refund_amounts_the_provider_refuses_are_refused_before_any_approval(
    cli: Cli, provider: ProviderProcess, database_url: str
) -> None:
    for amount in ("0120.00", "١٢٠.٠٠"):  # a leading zero; Arabic-Indic digits
        given = json.dumps({**REFUND_INPUT, "amount": amount})
        result = cli("start", "--agent", "refund", "--input", given)
        assert result.returncode == 2, (amount, result.stderr)
        assert "amount must be a positive decimal in ASCII digits" in result.stderr
    assert _recorded(database_url) == (None, 0, 0, 0)  # no run created, nothing kept


def test_crash_points_are_listed(cli: Cli) -> None:
    data = ok(cli("debug", "crash-points", "--json"))
    assert [p["name"] for p in data["crash_points"]] == list(CRASH_POINTS)


def test_demo_runs_to_done(cli: Cli) -> None:
    data = ok(cli("demo", "--approve", "--json"))
    assert data["state"] == "done"
    assert len(data["provider_ledger"]["refunds"]) == 1
    assert len(data["provider_ledger"]["notifications"]) == 1
    interactive = cli("demo", input="y\n")
    assert interactive.returncode == 0, interactive.stderr
    assert "done" in interactive.stdout and "1 refund(s), 1 notification(s)" in interactive.stdout
    unattended = cli("demo", input="")  # `< /dev/null`, a script: the default answer, yes
    assert unattended.returncode == 0, unattended.stderr
    assert "taking the default, yes" in unattended.stdout + unattended.stderr
    assert "1 refund(s), 1 notification(s)" in unattended.stdout
    declined = cli("demo", input="n\n")
    assert declined.returncode == 0, declined.stderr
    assert "0 refund(s)" in declined.stdout


def test_dashboard_and_prune_from_the_cli(cli: Cli, provider: ProviderProcess) -> None:
    thread_id = start(cli)
    ok(cli("run", thread_id, "--json"))
    board = ok(cli("dashboard", "--json"))
    assert {
        "active_runs",
        "retries_by_step",
        "step_times",
        "pending_approvals",
        "pending_signals",
        "counts_by_state",
    } <= set(board)
    assert board["counts_by_state"]["waiting"] == 1
    assert [a["thread_id"] for a in board["pending_approvals"]] == [thread_id]
    human = cli("dashboard")
    assert human.returncode == 0 and "Pending approvals" in human.stdout
    dry = ok(cli("prune", "--older-than", "0s", "--dry-run", "--json"))
    assert dry == {"dry_run": True, "older_than_s": 0.0, "runs": [], "checkpoints": 0}
    assert cli("prune", "--older-than", "soon").returncode == 2
