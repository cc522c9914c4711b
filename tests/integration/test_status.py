"""``status`` reads where a run stands from its row and its latest checkpoint's row, without
loading the graph: it must say what the graph says (the node it resumes at, the approval
it waits for), in every state a run can be in, with and without encryption at rest. Every
checkpoint of those runs is read both ways too: the checkpoint row answers, or (a ``Send``
waiting, the input checkpoint, an update's) leaves the answer to the graph, never a
different one."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tests.conftest import REFUND_INPUT
from tests.support.inside import parts
from waystone import AgentSpec, PolicyDecision, Runtime
from waystone._checkpointing.position import next_nodes
from waystone.examples import refund, settlement
from waystone.examples.provider import ProviderProcess
from waystone.preset._nodes.verify import CHECK_NODE


class Boom:
    """A policy that raises: the run fails on an error inside ``authorize``."""

    def decide(self, tool: str, risk: str, args: dict[str, Any]) -> PolicyDecision:
        raise RuntimeError("the policy service is down")


@pytest.fixture(params=[False, True], ids=["plain", "sealed"])
def rt_agents(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Each test twice: as is, and with encryption at rest on."""
    if request.param:
        monkeypatch.setenv("WAYSTONE_ENCRYPTION_KEY", "3c" * 32)
    boom: AgentSpec = replace(refund.build(), name="boom", policy=Boom())
    return {"refund": refund.build(), "settled": settlement.settled(), "boom": boom}


def runs_in_every_state(rt: Runtime, provider: ProviderProcess) -> dict[str, str]:
    """Thread ids by what they show: queued, waiting (with and without a decision), done,
    needs-human, failed (on its outcome, on an error, cancelled), requeued, waiting for a
    signal."""
    runs: dict[str, str] = {}

    def new(name: str, agent: str = "refund") -> str:
        runs[name] = rt.start(agent, REFUND_INPUT).thread_id
        return runs[name]

    new("queued")
    rt.run(new("waiting"))
    rt.run(new("decided"))
    rt.approve(runs["decided"], by="ana")
    rt.run(new("done"))
    rt.approve(runs["done"], by="ana")
    rt.run(runs["done"])
    rt.run(new("needs-human"))
    rt.approve(runs["needs-human"], by="ana")
    provider.inject("refunds", "transient", times=10)
    rt.run(runs["needs-human"])
    provider.clear_faults()
    rt.run(new("requeued"))
    rt.approve(runs["requeued"], by="ana")
    provider.inject("refunds", "transient", times=10)
    rt.run(runs["requeued"])
    provider.clear_faults()
    rt.requeue(runs["requeued"], by="ana", reason="provider fixed")
    rt.run(new("failed"))
    rt.approve(runs["failed"], by="ana")
    provider.inject("refunds", "permanent")
    rt.run(runs["failed"])
    rt.run(new("cancelled"))
    rt.cancel(runs["cancelled"], by="ana", reason="duplicate order")
    rt.run(new("error", agent="boom"))
    rt.run(new("signal", agent="settled"))
    rt.approve(runs["signal"], by="ana")
    rt.run(runs["signal"])
    return runs


def test_status_from_the_checkpoint_row_is_what_the_graph_says(
    rt: Runtime, provider: ProviderProcess
) -> None:
    runs = runs_in_every_state(rt, provider)
    states = {name: parts(rt).registry.get(thread_id).state for name, thread_id in runs.items()}
    assert states == {
        "queued": "queued",
        "waiting": "waiting",
        "decided": "waiting",
        "done": "done",
        "needs-human": "needs-human",
        "requeued": "queued",
        "failed": "failed",
        "cancelled": "failed",
        "error": "failed",
        "signal": "waiting",
    }
    for name, thread_id in runs.items():
        run = parts(rt).registry.get(thread_id)
        row = parts(rt).db.fetch_one("graph_position", thread_id=thread_id, checkpoint_id=None)
        # answered without the graph, but for a requeued run (its checkpoint is an update,
        # which does not list the channels it wrote)
        assert (next_nodes(row) is None) == (name == "requeued"), name
        assert rt.status(thread_id) == rt._views._status_from_graph(run), name
    steps = {name: rt.status(thread_id).step for name, thread_id in runs.items()}
    assert steps["waiting"] == steps["error"] == "authorize"
    assert steps["signal"] == "confirm" and steps["queued"] is None
    assert rt.status(runs["waiting"]).pending_approval is not None


def test_every_checkpoint_reads_as_the_graph_reads_it(
    rt: Runtime, provider: ProviderProcess
) -> None:
    answered, left = 0, 0
    for thread_id in runs_in_every_state(rt, provider).values():
        graph = rt.graph(parts(rt).registry.get(thread_id).agent)
        for snapshot in graph.get_state_history(rt.config(thread_id)):
            checkpoint_id = snapshot.config["configurable"]["checkpoint_id"]
            row = parts(rt).db.fetch_one(
                "graph_position", thread_id=thread_id, checkpoint_id=checkpoint_id
            )
            found = next_nodes(row)
            if CHECK_NODE in snapshot.next or snapshot.metadata["source"] in ("input", "update"):
                assert found is None, (thread_id, snapshot.next)  # only the graph knows
                left += 1
            else:
                assert found == snapshot.next, (thread_id, checkpoint_id)
                answered += 1
    assert answered > 30 and left > 5  # both kinds were met
