"""Every model call has its own budget: a model that hangs is an event in the history,
retried a bounded number of times, then a person is asked; the process never hangs."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import psycopg

from waystone import Runtime, Settings
from waystone.effects.tools import Tool
from waystone.examples import refund
from waystone.preset.proposers import Proposal, ProposalContext


class HangingModel:
    """Stands in for a model provider that never answers."""

    def __init__(self) -> None:
        self.calls = 0
        self.release = threading.Event()

    def propose(self, ctx: ProposalContext, tools: Sequence[Tool]) -> Proposal | None:
        self.calls += 1
        self.release.wait(30)
        return None


def test_a_hanging_model_is_timed_out_retried_and_handed_to_a_person(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    model = HangingModel()
    agent = refund.build(proposer=model)
    settings = Settings(database_url=database_url, model_timeout_s=0.3)
    try:
        with Runtime(settings, agents={"refund": agent}) as rt:
            thread_id = rt.start(
                "refund", {"order_id": "1", "amount": "40.00", "currency": "EUR", "email": "a@b.co"}
            ).thread_id
            final = rt.run(thread_id)
            kinds = [e["kind"] for e in rt.history(thread_id)["events"]]
    finally:
        model.release.set()
    assert final.state == "needs-human"
    assert "the model failed 3 times" in final.reason
    assert kinds.count("model-timeout") == 3
    assert model.calls == 3
