"""A graph with a checkpointed subgraph holding a ``Send`` fan-out, each branch making a
refund at the example payments provider through ``waystone.effect``.

intake -> refunds (a compiled subgraph, in a checkpoint namespace of its own:
plan -> one ``branch`` per part, sent -> tally) -> close. Every node body appends its name
to the file ``FANOUT_MARKS`` names, before doing anything else, so a test counts how often
each one ran. ``FANOUT_KILL=branch-N`` makes branch N, once its refund is made, SIGKILL
its process as soon as Postgres holds the writes of every other branch: a fan-out killed
midway, at a point no timing decides.
"""

from __future__ import annotations

import operator
import os
import signal
import time
from typing import Annotated, Any, TypedDict

import psycopg
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

import waystone
from waystone.effects import http

MARKS = "FANOUT_MARKS"
KILL = "FANOUT_KILL"
AMOUNTS = ("10.00", "11.00", "12.00", "13.00")  # one branch per amount
GRAPHS = "fanout=tests.support.fanout:fanout_graph"  # WAYSTONE_GRAPHS for a test's processes


def _mark(name: str) -> None:
    with open(os.environ[MARKS], "a") as marks:  # one short append: whole lines, any thread
        marks.write(name + "\n")


def _payments() -> str:
    return os.environ["WAYSTONE_PAYMENTS_URL"]


def find_refund(*, key: str, timeout_s: float) -> dict[str, Any] | None:
    found = http.request(
        "GET", f"{_payments()}/refunds", params={"idempotency_key": key}, timeout=timeout_s
    )
    return found[0] if found else None


@waystone.effect(idempotent_by_key=True, lookup=find_refund, timeout_s=10)
def refund(order_id: str, amount: str, *, key: str, timeout_s: float) -> dict[str, Any]:
    made: dict[str, Any] = http.request(
        "POST",
        f"{_payments()}/refunds",
        headers={"Idempotency-Key": key},
        json={"order_id": order_id, "amount": amount, "currency": "EUR"},
        timeout=timeout_s,
    )
    return made


class Order(TypedDict, total=False):
    order_id: str
    log: Annotated[list[str], operator.add]
    receipts: list[dict[str, Any]]  # the subgraph's output
    tally: str


class Refunds(TypedDict, total=False):
    order_id: str
    receipts: Annotated[list[dict[str, Any]], operator.add]
    tally: str


class Done(TypedDict, total=False):
    receipts: list[dict[str, Any]]
    tally: str


class Part(TypedDict):
    order_id: str
    part: int
    amount: str


def _intake(state: Order) -> dict[str, Any]:
    _mark("intake")
    return {"log": ["intake"]}


def _plan(state: Refunds) -> dict[str, Any]:
    _mark("plan")
    return {}


def _send_parts(state: Refunds) -> list[Send]:
    return [
        Send("branch", {"order_id": state["order_id"], "part": n, "amount": amount})
        for n, amount in enumerate(AMOUNTS)
    ]


def _branch(part: Part) -> dict[str, Any]:
    name = f"branch-{part['part']}"
    _mark(name)
    receipt = refund(order_id=f"{part['order_id']}-{part['part']}", amount=part["amount"])
    if os.environ.get(KILL) == name:
        _die_once_siblings_saved()
    return {"receipts": [receipt]}


def _die_once_siblings_saved() -> None:
    """SIGKILL this process once the writes of the other branches of this fan-out are
    committed: LangGraph runs the branches in threads and saves each one's writes when it
    returns, so a marker the branch body wrote would not say they are saved."""
    configurable = get_config()["configurable"]
    subgraph_ns = str(configurable["checkpoint_ns"]).rpartition("|")[0]
    query = (
        "SELECT count(DISTINCT task_id) FROM checkpoint_writes WHERE thread_id = %s "
        "AND checkpoint_ns = %s AND task_path LIKE '~__pregel_push%%'"
    )
    deadline = time.monotonic() + 120  # a bound, should they never be saved
    with psycopg.connect(os.environ["WAYSTONE_DATABASE_URL"], autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(query, (configurable["thread_id"], subgraph_ns)).fetchone()
            if row is not None and row[0] >= len(AMOUNTS) - 1:
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(0.05)
    raise AssertionError("the other branches' writes were never saved")


def _tally(state: Refunds) -> dict[str, Any]:
    _mark("tally")
    return {"tally": f"{len(state['receipts'])} refunds"}


def _close(state: Order) -> dict[str, Any]:
    _mark("close")
    return {"log": [f"closed with {state['tally']}"]}


def refunds_subgraph() -> StateGraph[Any]:
    builder: StateGraph[Any] = StateGraph(Refunds, output_schema=Done)
    builder.add_node("plan", _plan)
    builder.add_node("branch", _branch)
    builder.add_node("tally", _tally)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", _send_parts, ["branch"])
    builder.add_edge("branch", "tally")
    builder.add_edge("tally", END)
    return builder


def fanout_graph() -> StateGraph[Any]:
    builder: StateGraph[Any] = StateGraph(Order)
    builder.add_node("intake", _intake)
    builder.add_node("refunds", refunds_subgraph().compile())  # checkpointed: the parent's saver
    builder.add_node("close", _close)
    builder.add_edge(START, "intake")
    builder.add_edge("intake", "refunds")
    builder.add_edge("refunds", "close")
    builder.add_edge("close", END)
    return builder
