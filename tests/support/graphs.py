"""Users' own LangGraph graphs, as the tests register them (``WAYSTONE_GRAPHS`` names them
by import path for the CLI and workers)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt

from tests.support.chain import chain


class Ticket(TypedDict, total=False):
    question: str
    answer: str
    steps: Annotated[list[str], operator.add]


def _draft(state: Ticket) -> dict[str, Any]:
    return {"steps": ["draft"]}


def _ask(state: Ticket) -> dict[str, Any]:
    answer = interrupt({"question": state["question"]})
    return {"answer": str(answer), "steps": ["ask"]}


def ask_graph() -> StateGraph[Any]:
    """draft -> ask (an interrupt() a person answers) -> end."""
    return chain(Ticket, ("draft", _draft), ("ask", _ask))


def _two(state: Ticket) -> dict[str, Any]:
    first = interrupt("first?")
    second = interrupt("second?")
    return {"answer": f"{first}+{second}"}


def two_questions_graph() -> StateGraph[Any]:
    """One node asking two questions in turn."""
    return chain(Ticket, ("two", _two))


def _reply(state: MessagesState) -> dict[str, list[AnyMessage]]:
    last = state["messages"][-1]
    return {"messages": [AIMessage(f"echo {last.content} ({len(state['messages'])} so far)")]}


def chat_graph() -> StateGraph[Any]:
    """A MessagesState chat: each run adds the user's message and one reply."""
    return chain(MessagesState, ("reply", _reply))


def _left(state: Ticket) -> dict[str, Any]:
    return {"steps": [f"left:{interrupt('left?')}"]}


def _right(state: Ticket) -> dict[str, Any]:
    return {"steps": [f"right:{interrupt('right?')}"]}


def fan_graph() -> StateGraph[Any]:
    """Two nodes in one step, each waiting on its own interrupt()."""
    builder: StateGraph[Any] = StateGraph(Ticket)
    builder.add_node("left", _left)
    builder.add_node("right", _right)
    builder.add_edge(START, "left")
    builder.add_edge(START, "right")
    builder.add_edge("left", END)
    builder.add_edge("right", END)
    return builder


def _assist(state: MessagesState) -> dict[str, list[AnyMessage]]:
    last = state["messages"][-1]
    if str(last.content).endswith("?"):  # a question: a person answers it first
        answer = interrupt({"question": last.content})
        return {"messages": [AIMessage(f"a person says: {answer}")]}
    return {"messages": [AIMessage(f"echo {last.content}")]}


def assist_graph() -> StateGraph[Any]:
    """A MessagesState chat that hands a question to a person (an interrupt())."""
    return chain(MessagesState, ("assist", _assist))


GRAPHS = (
    "ask=tests.support.graphs:ask_graph,chat=tests.support.graphs:chat_graph,"
    "fan=tests.support.graphs:fan_graph"
)  # WAYSTONE_GRAPHS for a test's processes
ASSIST = "assist=tests.support.graphs:assist_graph"  # the same, for the assistant alone


def functional_workflow() -> Any:
    """A functional-API graph: two tasks, then an interrupt() between them."""
    from langgraph.func import entrypoint, task

    @task
    def shout(text: str) -> str:
        return text.upper()

    @entrypoint()
    def workflow(question: str) -> dict[str, str]:
        loud = shout(question).result()
        answer = interrupt({"approve": loud})
        return {"loud": loud, "answer": str(answer)}

    return workflow


def _look_alikes(state: Ticket) -> dict[str, Any]:
    first = interrupt({"kind": "approval", "what": "not Waystone's approval"})
    second = interrupt({"kind": "signal", "what": "not Waystone's signal wait"})
    return {"answer": f"{first}/{second}"}


def look_alike_graph() -> StateGraph[Any]:
    """interrupt() values that look like Waystone's own waits but are the graph's."""
    return chain(Ticket, ("ask", _look_alikes))


def breakpoint_graph() -> Any:
    """A graph compiled with a static breakpoint (interrupt_before)."""
    return ask_graph().compile(interrupt_before=["ask"])


def broken_builder() -> StateGraph[Any]:
    raise RuntimeError("the user's builder fails")


def refund_graph() -> StateGraph[Any]:
    """One node refunding the order its input names, on the example provider."""
    import os

    import waystone
    from waystone.effects import http

    @waystone.effect(idempotent_by_key=True, timeout_s=10)
    def refund(order_id: str, *, key: str) -> dict[str, Any]:
        made: dict[str, Any] = http.request(
            "POST",
            f"{os.environ['WAYSTONE_PAYMENTS_URL']}/refunds",
            json={"order_id": order_id, "amount": "5.00", "currency": "EUR"},
            headers={"Idempotency-Key": key},
            timeout=10,
        )
        return made

    def pay(state: dict[str, Any]) -> dict[str, Any]:
        return {"receipt": refund(order_id=state["order_id"])}

    class Order(TypedDict, total=False):
        order_id: str
        receipt: dict[str, Any]

    return chain(Order, ("pay", pay))
