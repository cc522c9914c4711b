"""verify's checks run as parallel LangGraph tasks: when one fails, the others' results
are kept as pending writes in Postgres and are not run again on resume."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
from pydantic import BaseModel

from waystone import AgentSpec, Check, CheckResult, Rule, RulePolicy, Runtime, Settings, Tool
from waystone.preset.proposers import Proposal, ScriptedProposer


class NoArgs(BaseModel):
    note: str


def _counting_agent(calls: Path) -> AgentSpec:
    def count(name: str) -> int:
        path = calls / name
        n = int(path.read_text()) + 1 if path.exists() else 1
        path.write_text(str(n))
        return n

    def check_a(input: dict[str, Any], completed: list[dict[str, Any]]) -> CheckResult:
        count("a")
        return CheckResult(bool(completed), "a sees the completed action")

    def check_b(input: dict[str, Any], completed: list[dict[str, Any]]) -> CheckResult:
        if count("b") == 1:
            raise ConnectionError("check b's backend is down (first call only)")
        return CheckResult(True, "b passes the second time")

    tool = Tool(
        name="log",
        description="write a note",
        args_model=NoArgs,
        apply=lambda args, key, timeout: {"id": key, **args},
        confirm=lambda args, key, receipt, timeout: receipt,
    )
    return AgentSpec(
        name="counting",
        tools={"log": tool},
        policy=RulePolicy([Rule("allow", "notes are harmless")]),
        proposer=ScriptedProposer(lambda _input: [Proposal("log", {"note": "hi"})]),
        checks=[Check("a", check_a), Check("b", check_b)],
    )


def test_failed_check_keeps_sibling_results_as_pending_writes(
    database_url: str, tmp_path: Path, sql: psycopg.Connection[Any]
) -> None:
    agent = _counting_agent(tmp_path)
    with Runtime(Settings(database_url=database_url), agents={"counting": agent}) as rt:
        thread_id = rt.start("counting", {}).thread_id
        failed = rt.run(thread_id)
        assert failed.state == "failed"
        assert "check b's backend is down" in failed.reason
        assert (tmp_path / "a").read_text() == "1"
        # a's result is a pending write of the interrupted superstep
        writes = sql.execute(
            "SELECT w.channel FROM checkpoint_writes w WHERE w.thread_id = %s AND w.checkpoint_id"
            " = (SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = %s)",
            (thread_id, thread_id),
        ).fetchall()
        channels = [w[0] for w in writes]
        assert channels.count("checks") == 1  # a's result, saved
        assert "__error__" in channels  # b's failure, recorded against its task
        rt.requeue(thread_id, by="ops", reason="backend is back")
    # resume from a fresh runtime: only the failed check runs again
    with Runtime(Settings(database_url=database_url), agents={"counting": agent}) as rt:
        done = rt.run(thread_id)
    assert done.state == "done", done.reason
    assert (tmp_path / "a").read_text() == "1"
    assert (tmp_path / "b").read_text() == "2"
