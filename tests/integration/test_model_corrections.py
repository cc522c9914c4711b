"""A chat model that names an unknown tool or gives invalid arguments gets its error back
as a tool message, as LangGraph's ``ToolNode`` hands it back, a bounded number of times in
a row; the count is in the run's checkpoints, so a crash mid-correction keeps it."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import ToolMessage

from tests.conftest import REFUND_INPUT, Cli
from tests.support.chat_models import BAD_REFUND, GOOD_REFUND, ConversationModel, agent, call
from waystone import Runtime, Settings


def _corrections(rt: Runtime, thread_id: str) -> list[dict[str, Any]]:
    return [e for e in rt.history(thread_id)["events"] if e["kind"] == "proposal-corrected"]


def test_unknown_tool_is_handed_back_to_the_model_and_the_run_proceeds(
    database_url: str,
) -> None:
    model = ConversationModel(responses=[call("refnd", GOOD_REFUND), call("refund", GOOD_REFUND)])
    with Runtime(Settings(database_url=database_url), agents={"m": agent(model, "m")}) as rt:
        thread_id = rt.start("m", REFUND_INPUT).thread_id
        status = rt.run(thread_id)
        corrections = _corrections(rt, thread_id)
    assert status.state == "waiting", status.reason
    assert status.pending_approval is not None
    assert (status.pending_approval["tool"], status.pending_approval["args"]) == (
        "refund",
        GOOD_REFUND,
    )
    assert len(corrections) == 1
    assert (
        "'refnd' is not a valid tool, try one of [refund, notify_customer]"
        in (corrections[0]["reason"])
    )
    assert corrections[0]["evidence"]["correction"] == 1
    # the second question carried the rejected call and its error, as a tool message
    assert len(model.seen) == 2
    errors = [m for m in model.seen[1] if isinstance(m, ToolMessage)]
    assert len(errors) == 1 and "'refnd' is not a valid tool" in str(errors[0].content)
    assert errors[0].status == "error"


def test_bad_arguments_every_time_fail_the_run_after_the_budget(database_url: str) -> None:
    model = ConversationModel(responses=[call("refund", BAD_REFUND)])
    with Runtime(Settings(database_url=database_url), agents={"m": agent(model, "m")}) as rt:
        thread_id = rt.start("m", REFUND_INPUT).thread_id
        status = rt.run(thread_id)
        corrections = _corrections(rt, thread_id)
    assert status.state == "failed"
    assert "invalid 4 times in a row (3 corrections spent)" in status.reason
    assert "amount must be a positive decimal" in status.reason
    assert [c["evidence"]["correction"] for c in corrections] == [1, 2, 3]
    assert len(model.seen) == 4


def test_a_crash_mid_correction_keeps_the_count(cli: Cli) -> None:
    """The first process records one correction, then dies after the model's second
    answer; the next one spends only the two corrections left (three in all)."""
    env = {"WAYSTONE_AGENTS": "tests.support.chat_models:refund_bad_args"}
    started = cli(
        "start", "--agent", "refund-by-model", "--input", json.dumps(REFUND_INPUT), env=env
    )
    assert started.returncode == 0, started.stderr
    thread_id = started.stdout.split()[0]
    killed = cli("run", thread_id, env={**env, "WAYSTONE_CRASH_AT": "propose:after-model@refund"})
    assert killed.returncode == -9, killed.stderr
    resumed = cli("run", thread_id, "--json", env=env)
    status = json.loads(resumed.stdout)
    assert status["state"] == "failed", status
    assert "invalid 4 times in a row (3 corrections spent)" in status["reason"]
    history = json.loads(cli("history", thread_id, "--json", env=env).stdout)
    numbers = [
        e["evidence"]["correction"] for e in history["events"] if e["kind"] == "proposal-corrected"
    ]
    assert numbers == [1, 2, 3]
