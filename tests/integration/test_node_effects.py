"""Effects inside any node: ``waystone.effect`` and ``waystone.durable_tool`` make each
external effect once, as the provider's own records show, however often LangGraph runs
the node's code again (a crash, ``interrupt()`` and resume)."""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import httpx
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import InjectedToolArg, tool
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode, create_react_agent
from langgraph.types import Command, RetryPolicy, Send, interrupt

import waystone
from tests.support.chain import chain
from tests.support.chat_models import ConversationModel
from tests.support.effect_graphs import (
    Notified,
    interrupting_graph,
    interrupting_on_stock,
    note_effect,
    send_note,
)
from tests.support.inside import created_claimed, parts
from waystone._runs.run_config import graph_config
from waystone.effects import deadline
from waystone.effects.context import CONTEXT_KEY, EffectContext, without_ledger
from waystone.effects.http import request
from waystone.errors import NeedsHuman, NotDurable, PermanentError
from waystone.examples.provider import ProviderProcess
from waystone.runtime import Runtime


class Drive:
    """Drives a user's graph as Waystone's runtime does: a claimed run (its lease token
    fences every write), the runtime's saver, and the EffectContext in the config."""

    def __init__(self, rt: Runtime, thread_id: str) -> None:
        self.rt = rt
        self.thread_id = thread_id
        run = created_claimed(rt, thread_id, "user-graph", "a user's graph")
        self.config = graph_config(thread_id, lease_token=run.lease_token, key_namespace=thread_id)
        self.config["configurable"][CONTEXT_KEY] = EffectContext(
            parts(rt).ledger,
            parts(rt).registry,
            reveal=parts(rt).vault.reveal,
            redact=parts(rt).vault.redact,
        )

    def invoke(self, graph: Any, value: Any) -> Any:
        return graph.invoke(value, self.config, durability="sync")

    async def ainvoke(self, graph: Any, value: Any) -> Any:
        return await graph.ainvoke(value, self.config, durability="sync")

    def keys(self) -> list[str]:
        return [effect.key for effect in parts(self.rt).ledger.for_thread(self.thread_id)]


@pytest.fixture
def url(provider: ProviderProcess) -> str:
    return provider.url


def notes(provider: ProviderProcess) -> list[dict[str, Any]]:
    return list(provider.ledger()["notifications"])


def test_an_effect_before_an_interrupt_is_made_once_and_twice_on_stock_saver(
    runtime: Runtime, provider: ProviderProcess, empty_database_url: str
) -> None:
    graph = interrupting_graph(note_effect(provider.url)).compile(checkpointer=parts(runtime).saver)
    drive = Drive(runtime, "interrupted-1")
    drive.invoke(graph, {"to": "ana@example.com"})
    state = drive.invoke(graph, Command(resume="yes"))

    assert state["answer"] == "yes"
    assert [n["client_ref"] for n in notes(provider)] == drive.keys()  # one, with its key
    assert state["receipts"][0]["id"] == notes(provider)[0]["id"]  # the first one's receipt

    # The same node on the stock saver, calling the provider directly: the resume runs
    # the node's code again, and the customer is told twice.
    with PostgresSaver.from_conn_string(empty_database_url) as stock:
        stock.setup()
        plain = interrupting_on_stock(provider.url, key="stock").compile(checkpointer=stock)
        config = {"configurable": {"thread_id": "stock-1"}}
        plain.invoke({"to": "bo@example.com"}, config, durability="sync")
        plain.invoke(Command(resume="yes"), config, durability="sync")
    stocked = [n for n in notes(provider) if n["client_ref"] == "stock"]
    assert len(stocked) == 2


def test_two_calls_in_a_node_get_two_keys_and_a_reexecution_the_same(
    runtime: Runtime, provider: ProviderProcess
) -> None:
    notify = note_effect(provider.url)
    crashes = ["once"]

    def announce(state: Notified) -> dict[str, Any]:
        first = notify(to=state["to"], body="same text")
        second = notify(to=state["to"], body="same text")  # the same call, made again
        third = notify(state["to"], "other text")
        if crashes:
            crashes.pop()
            raise RuntimeError("the process dies here")
        return {"receipts": [first, second, third]}

    builder = chain(Notified, ("announce", announce))
    graph = builder.compile(checkpointer=parts(runtime).saver)
    drive = Drive(runtime, "twice-1")
    with pytest.raises(RuntimeError, match="dies here"):
        drive.invoke(graph, {"to": "ana@example.com"})
    keys = drive.keys()
    state = drive.invoke(graph, None)  # the node runs again, from its checkpoint

    assert len(set(keys)) == 3
    assert drive.keys() == keys  # the re-executed node made the same three calls
    assert sorted(n["client_ref"] for n in notes(provider)) == sorted(keys)
    assert [r["id"] for r in state["receipts"]] == [n["id"] for n in notes(provider)]


def one_node(node: Any, **options: Any) -> StateGraph[Notified]:
    builder: StateGraph[Notified] = StateGraph(Notified)
    builder.add_node("announce", node, **options)
    builder.add_edge(START, "announce")
    builder.add_edge("announce", END)
    return builder


def test_a_node_retried_by_langgraph_makes_its_effect_once(
    runtime: Runtime, provider: ProviderProcess
) -> None:
    notify = note_effect(provider.url)
    fails = ["once"]

    def announce(state: Notified) -> dict[str, Any]:
        receipt = notify(to=state["to"], body="hello")
        if fails:
            fails.pop()
            raise RuntimeError("flaky after the effect")
        return {"receipts": [receipt]}

    retry = RetryPolicy(max_attempts=2, initial_interval=0.01, retry_on=RuntimeError)
    graph = one_node(announce, retry_policy=retry).compile(checkpointer=parts(runtime).saver)
    drive = Drive(runtime, "retried-1")
    state = drive.invoke(graph, {"to": "ana@example.com"})

    assert [n["client_ref"] for n in notes(provider)] == drive.keys()  # one
    assert state["receipts"][0]["id"] == notes(provider)[0]["id"]


def test_an_effect_the_provider_refuses_raises_permanent_error(
    runtime: Runtime, provider: ProviderProcess
) -> None:
    notify = note_effect(provider.url)
    provider.inject("notifications", "permanent")

    def announce(state: Notified) -> dict[str, Any]:
        return {"receipts": [notify(to=state["to"], body="hello")]}

    graph = one_node(announce).compile(checkpointer=parts(runtime).saver)
    drive = Drive(runtime, "refused-1")
    with pytest.raises(PermanentError, match="HTTP 422"):
        drive.invoke(graph, {"to": "ana@example.com"})
    (effect,) = parts(runtime).ledger.for_thread("refused-1")
    assert effect.status == "failed" and notes(provider) == []


class Fanned(TypedDict, total=False):
    to: str
    receipts: Annotated[list[dict[str, Any]], operator.add]


def test_send_branches_and_a_subgraph_get_keys_of_their_own(
    runtime: Runtime, provider: ProviderProcess
) -> None:
    notify = note_effect(provider.url)

    def branch(state: Fanned) -> dict[str, Any]:
        return {"receipts": [notify(to=state["to"], body="same text")]}

    inner = chain(Fanned, ("branch", branch))

    builder: StateGraph[Fanned] = StateGraph(Fanned)
    builder.add_node("branch", branch)
    builder.add_node("sub", inner.compile())
    builder.add_conditional_edges(
        START, lambda state: [Send("branch", state), Send("branch", state), "sub"]
    )
    graph = builder.compile(checkpointer=parts(runtime).saver)
    drive = Drive(runtime, "fanned-1")
    state = drive.invoke(graph, {"to": "ana@example.com"})

    assert len(state["receipts"]) == 3
    assert len(set(drive.keys())) == 3
    assert len(notes(provider)) == 3


def test_an_async_node_awaits_an_async_effect_made_once(
    runtime: Runtime, provider: ProviderProcess
) -> None:
    url = provider.url

    async def find(key: str) -> dict[str, Any] | None:
        async with httpx.AsyncClient(timeout=10) as client:
            answer = await client.get(f"{url}/notifications", params={"client_ref": key})
        found = answer.json()
        return found[0] if found else None

    @waystone.effect(lookup=find, confirm=lambda key, receipt: receipt, timeout_s=10)
    async def notify(to: str, body: str, *, key: str) -> dict[str, Any]:
        async with httpx.AsyncClient(timeout=10) as client:
            answer = await client.post(
                f"{url}/notifications",
                json={"to": to, "body": body, "client_ref": key},
                headers=deadline.before_send(),  # this call's deadline reaches the coroutine
            )
        answer.raise_for_status()
        sent: dict[str, Any] = answer.json()
        return sent

    async def announce(state: Notified) -> dict[str, Any]:
        receipt = await notify(to=state["to"], body="your refund is on its way")
        answer = interrupt({"ask": "was the customer told?"})
        return {"receipts": [receipt], "answer": answer}

    builder = chain(Notified, ("announce", announce))
    graph = builder.compile(checkpointer=parts(runtime).saver)
    drive = Drive(runtime, "async-1")

    async def both() -> Any:
        await drive.ainvoke(graph, {"to": "ana@example.com"})
        return await drive.ainvoke(graph, Command(resume="yes"))

    state = asyncio.run(both())
    assert state["answer"] == "yes"
    assert [n["client_ref"] for n in notes(provider)] == drive.keys()
    assert provider.ledger()["refused"] == []  # it carried a deadline, and made it
    (effect,) = parts(runtime).ledger.for_thread("async-1")
    assert effect.status == "confirmed"


def react_tools(url: str, fail_once: list[str]) -> list[Any]:
    """Two durable tools (one the provider deduplicates by key, one it does not) and a
    plain one that fails once, after the others' effects were made: the node re-runs."""

    @tool
    def refund(order_id: str, amount: str, key: Annotated[str, InjectedToolArg]) -> dict[str, Any]:
        """Refund an order."""
        payload = {"order_id": order_id, "amount": amount, "currency": "EUR"}
        headers = {"Idempotency-Key": key}
        made: dict[str, Any] = request(
            "POST", f"{url}/refunds", timeout=10, json=payload, headers=headers
        )
        return made

    @tool
    def notify_customer(to: str, key: Annotated[str, InjectedToolArg]) -> str:
        """Tell the customer."""
        return f"sent {send_note(url, to, 'refunded', key, 10)['id']}"

    @tool
    def check_stock(order_id: str) -> str:
        """Look at the stock (no effect)."""
        if fail_once:
            fail_once.pop()
            raise RuntimeError("the process dies before the step is saved")
        return "in stock"

    def find_note(key: str) -> str | None:
        found = request("GET", f"{url}/notifications", timeout=10, params={"client_ref": key})
        return f"sent {found[0]['id']}" if found else None

    return [
        waystone.durable_tool(refund, idempotent_by_key=True),
        waystone.durable_tool(notify_customer, lookup=find_note),
        check_stock,
    ]


def three_calls() -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[
            {"name": "refund", "args": {"order_id": "1001", "amount": "12.00"}, "id": "c1"},
            {"name": "notify_customer", "args": {"to": "ana@example.com"}, "id": "c2"},
            {"name": "check_stock", "args": {"order_id": "1001"}, "id": "c3"},
        ],
    )


# the issue asks for LangGraph's own prebuilt agent, deprecated in favour of langchain's
@pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecatedSinceV10")
def test_durable_tools_under_create_react_agent_apply_once_across_a_reexecution(
    runtime: Runtime, provider: ProviderProcess
) -> None:
    fail_once = ["once"]
    model = ConversationModel(responses=[three_calls(), AIMessage(content="done")])
    agent = create_react_agent(
        model, react_tools(provider.url, fail_once), checkpointer=parts(runtime).saver
    )
    drive = Drive(runtime, "react-1")
    with pytest.raises(RuntimeError, match="dies before"):
        drive.invoke(agent, {"messages": [HumanMessage("refund order 1001")]})
    made = provider.ledger()
    assert len(made["refunds"]) == 1 and len(made["notifications"]) == 1
    state = drive.invoke(agent, None)  # the tools node runs again: all three calls

    assert state["messages"][-1].content == "done"
    assert provider.ledger() == made  # nothing applied again
    keys = {made["refunds"][0]["idempotency_key"], made["notifications"][0]["client_ref"]}
    assert keys == set(drive.keys())
    results = {m.tool_call_id: m.content for m in state["messages"] if m.type == "tool"}
    assert results["c2"] == f"sent {made['notifications'][0]['id']}"
    assert results["c3"] == "in stock"


def test_durable_tools_under_a_tool_node_with_the_same_arguments_get_two_keys(
    runtime: Runtime, provider: ProviderProcess
) -> None:
    tools = react_tools(provider.url, [])[:2]
    twice = AIMessage(
        content="",
        tool_calls=[
            {"name": "notify_customer", "args": {"to": "ana@example.com"}, "id": "a"},
            {"name": "notify_customer", "args": {"to": "ana@example.com"}, "id": "b"},
        ],
    )
    graph = _tool_graph(tools).compile(checkpointer=parts(runtime).saver)
    drive = Drive(runtime, "toolnode-1")
    drive.invoke(graph, {"messages": [twice]})
    assert len(set(drive.keys())) == 2
    assert len(notes(provider)) == 2


def _tool_graph(tools: list[Any]) -> StateGraph[Any]:
    from langgraph.graph import MessagesState

    return chain(MessagesState, ("tools", ToolNode(tools)))


def test_an_effect_outside_a_waystone_drive_is_refused_unless_opted_out(
    provider: ProviderProcess,
) -> None:
    graph = interrupting_graph(note_effect(provider.url)).compile()
    config = {"configurable": {"thread_id": "plain"}}
    with pytest.raises(NotDurable, match="without_ledger"):
        graph.invoke({"to": "ana@example.com"}, config)
    assert notes(provider) == []
    with without_ledger():
        graph.invoke({"to": "ana@example.com"}, config)
    assert len(notes(provider)) == 1


def test_an_effect_whose_outcome_is_unknowable_raises_needs_human(
    runtime: Runtime, provider: ProviderProcess
) -> None:
    @waystone.effect(timeout_s=1)
    def notify(to: str, *, key: str) -> dict[str, Any]:
        return send_note(provider.url, to, "hello", key, 1)  # held past its timeout

    provider.inject("notifications", "timeout_after_apply", delay_s=3)

    def announce(state: Notified) -> dict[str, Any]:
        return {"receipts": [notify(to=state["to"])]}

    builder = chain(Notified, ("announce", announce))
    graph = builder.compile(checkpointer=parts(runtime).saver)
    with pytest.raises(NeedsHuman, match="neither a lookup nor key deduplication"):
        Drive(runtime, "unknowable-1").invoke(graph, {"to": "ana@example.com"})
    assert len(notes(provider)) == 1


@pytest.fixture(autouse=True)
def _no_leftover_faults(provider: ProviderProcess) -> Iterator[None]:
    yield
    provider.clear_faults()
