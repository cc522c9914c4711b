"""An effect made in a subgraph's node is recorded with that node's writes, which the
subgraph saves in its own checkpoint namespace, not with the parent graph's next save."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import psycopg
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from tests.support.fanout import refund
from waystone.config import Settings
from waystone.examples.provider import ProviderProcess
from waystone.runtime import Runtime


class Paid(TypedDict, total=False):
    order_id: str
    receipts: Annotated[list[dict[str, Any]], operator.add]
    seen: list[str]


def test_a_subgraphs_effects_are_recorded_applied_before_the_subgraph_ends(
    database_url: str, provider: ProviderProcess
) -> None:
    """``first`` is a node of the subgraph, ``branch`` two ``Send`` branches of it: once
    their writes are saved, ``look`` (still in the subgraph) finds each of their effects
    applied in the ledger, as a process resuming the subgraph after a crash would."""

    def first(state: Paid) -> dict[str, Any]:
        return {"receipts": [refund(order_id=f"{state['order_id']}-first", amount="1.00")]}

    def branch(part: dict[str, Any]) -> dict[str, Any]:
        return {"receipts": [refund(order_id=part["order_id"], amount="2.00")]}

    def look(state: Paid) -> dict[str, Any]:
        thread_id = get_config()["configurable"]["thread_id"]
        with psycopg.connect(database_url, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT status FROM waystone.effects WHERE thread_id = %s ORDER BY key",
                (thread_id,),
            ).fetchall()
        return {"seen": [status for (status,) in rows]}

    inner: StateGraph[Paid] = StateGraph(Paid)
    inner.add_node("first", first)
    inner.add_node("branch", branch)
    inner.add_node("look", look)
    inner.add_edge(START, "first")
    inner.add_conditional_edges(
        "first",
        lambda state: [Send("branch", {"order_id": f"{state['order_id']}-{n}"}) for n in (1, 2)],
        ["branch"],
    )
    inner.add_edge("branch", "look")
    inner.add_edge("look", END)
    outer: StateGraph[Paid] = StateGraph(Paid)
    outer.add_node("pay", inner.compile())
    outer.add_edge(START, "pay")
    outer.add_edge("pay", END)

    with Runtime(Settings(database_url=database_url), graphs={"pay": outer}) as rt:
        run = rt.invoke("pay", {"order_id": "o9"})
        assert run.state == "done"
        values = rt.graph("pay").get_state(rt.config(run.thread_id)).values
    assert values["seen"] == ["applied"] * 3
    assert len(provider.ledger()["refunds"]) == 3
