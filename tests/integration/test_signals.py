"""A signal answers one wait: a run that waits twice for the same signal name needs two
deliveries, and each wait gets its own payload."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from waystone import AgentSpec, Check, CheckResult, Rule, RulePolicy, Runtime, Settings, Tool
from waystone.nodes.waits import SignalWait
from waystone.proposers import Proposal, ScriptedProposer


class Pay(BaseModel):
    n: int


def _agent() -> AgentSpec:
    tool = Tool(
        name="pay",
        description="a payment confirmed by the provider's webhook",
        args_model=Pay,
        apply=lambda args, key, timeout: {"id": key, "n": args["n"]},
        confirm=lambda args, key, receipt, timeout: receipt,
        idempotent_by_key=True,
        await_signal=SignalWait("payment.settled", timeout_s=3600),
    )

    def both(_input: dict[str, Any], completed: list[dict[str, Any]]) -> CheckResult:
        return CheckResult(len(completed) == 2, f"{len(completed)} of 2 settled")

    return AgentSpec(
        name="twice",
        tools={"pay": tool},
        policy=RulePolicy([Rule("allow", "test payments")]),
        proposer=ScriptedProposer(
            lambda _i: [Proposal("pay", {"n": 1}), Proposal("pay", {"n": 2})]
        ),
        checks=[Check("both", both)],
    )


def test_one_signal_answers_one_wait(database_url: str) -> None:
    with Runtime(Settings(database_url=database_url), agents={"twice": _agent()}) as rt:
        thread_id = rt.start("twice", {}).thread_id
        assert rt.run(thread_id).state == "waiting"
        rt.signal(thread_id, "payment.settled", {"settlement": "S-1"})
        second = rt.run(thread_id)
        assert (second.state, second.waiting_for) == ("waiting", "payment.settled")
        rt.signal(thread_id, "payment.settled", {"settlement": "S-2"})
        assert rt.run(thread_id).state == "done"
        completed = rt.graph("twice").get_state(rt.config(thread_id)).values["completed"]
    assert [c["confirmation"]["signal"]["settlement"] for c in completed] == ["S-1", "S-2"]
