"""An effect made in a subgraph's node is recorded with that node's writes, which the
subgraph saves in its own checkpoint namespace, not with the parent graph's next save."""

from __future__ import annotations

import asyncio
import operator
import threading
from typing import Annotated, Any, TypedDict

import psycopg
import pytest
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

import waystone
from tests.support.chain import chain
from tests.support.fanout import find_refund, refund
from tests.support.rows import effects
from waystone.config import Settings
from waystone.effects import http
from waystone.examples.provider import ProviderProcess
from waystone.runtime import Runtime


class Paid(TypedDict, total=False):
    order_id: str
    receipts: Annotated[list[dict[str, Any]], operator.add]
    seen: list[str]


def _statuses(database_url: str) -> list[str]:
    """The status of each effect of the thread of the node that asks, by key."""
    thread_id = get_config()["configurable"]["thread_id"]
    with psycopg.connect(database_url, autocommit=True) as conn:
        return [status for (status,) in effects(conn, thread_id, "status", order="key")]


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
        return {"seen": _statuses(database_url)}

    outer = _in_a_subgraph(first, branch, look)

    with Runtime(Settings(database_url=database_url), graphs={"pay": outer}) as rt:
        run = rt.invoke("pay", {"order_id": "o9"})
        assert run.state == "done"
        values = rt.graph("pay").get_state(rt.config(run.thread_id)).values
    assert values["seen"] == ["applied"] * 3
    assert len(provider.ledger()["refunds"]) == 3


HELD_AT_MOST_S = 5.0  # how long the gate keeps a receipt's save from committing, at most


@pytest.mark.parametrize("drive", ["invoke", "ainvoke"])
def test_a_branchs_receipt_is_committed_before_the_step_after_it_starts(
    database_url: str, provider: ProviderProcess, drive: str
) -> None:
    """The receipt of a ``Send`` branch rides with the save of its writes, which LangGraph
    makes in the background while the step's checkpoint is saved. A lock on the branch's
    ledger row keeps that save from committing: ``look``, the step after, must not start
    before it has, or a crash then would leave a checkpoint past an effect whose receipt
    was never kept. The gate lets go once ``look`` has read the ledger, or after
    ``HELD_AT_MOST_S`` (as it must when ``look`` waits for the save). The graph is driven
    by ``invoke`` (the sync saver) and ``ainvoke`` (the async saver)."""
    looked = threading.Event()
    other_done = threading.Event()
    gates: list[threading.Thread] = []

    def hold_row(key: str) -> None:
        """Lock ``key``'s ledger row (its intent is committed) until ``look`` has read it."""
        locked = threading.Event()

        def hold() -> None:
            with psycopg.connect(database_url) as conn:
                conn.execute("SELECT 1 FROM waystone.effects WHERE key = %s FOR UPDATE", (key,))
                locked.set()
                looked.wait(HELD_AT_MOST_S)
                conn.rollback()

        gates.append(threading.Thread(target=hold))
        gates[-1].start()
        assert locked.wait(30), "could not lock the ledger row"

    @waystone.effect(idempotent_by_key=True, lookup=find_refund, timeout_s=10)
    def gated_refund(order_id: str, *, key: str, timeout_s: float) -> dict[str, Any]:
        made: dict[str, Any] = http.request(
            "POST",
            f"{provider.url}/refunds",
            headers={"Idempotency-Key": key},
            json={"order_id": order_id, "amount": "3.00", "currency": "EUR"},
            timeout=timeout_s,
        )
        if order_id.endswith("-1"):
            # the other branch's effect is done, so only this one's receipt is held
            assert other_done.wait(30), "the other branch never made its effect"
            hold_row(key)
        return made

    def first(state: Paid) -> dict[str, Any]:
        return {"order_id": state["order_id"]}

    def branch(part: dict[str, Any]) -> dict[str, Any]:
        receipt = gated_refund(order_id=part["order_id"])
        if part["order_id"].endswith("-2"):
            other_done.set()
        return {"receipts": [receipt]}

    def look(state: Paid) -> dict[str, Any]:
        seen = _statuses(database_url)
        looked.set()
        return {"seen": seen}

    outer = _in_a_subgraph(first, branch, look)

    try:
        with Runtime(Settings(database_url=database_url), graphs={"pay": outer}) as rt:
            if drive == "invoke":
                run = rt.invoke("pay", {"order_id": "o7"})
            else:
                run = asyncio.run(rt.ainvoke("pay", {"order_id": "o7"}))
            assert run.state == "done"
            values = rt.graph("pay").get_state(rt.config(run.thread_id)).values
    finally:
        looked.set()
        for gate in gates:
            gate.join()
    assert len(gates) == 1, "the gate never held a receipt's save"
    assert values["seen"] == ["applied"] * 2
    assert len(provider.ledger()["refunds"]) == 2


def _in_a_subgraph(first: Any, branch: Any, look: Any) -> StateGraph[Paid]:
    """A graph whose one node is a subgraph: ``first``, then two ``Send`` branches, then
    ``look``."""
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
    return chain(Paid, ("pay", inner.compile()))
