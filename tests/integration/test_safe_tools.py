"""Tool calls of a brought graph's ``ToolNode`` through the effect ledger, by what each tool
declares (docs/tools.md). The agents below make two calls in one turn, one of which asks
a person with ``interrupt()``: on resume LangGraph runs the tools node again from its
start, which calls every tool again on a stock saver."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Annotated, Any

import pytest
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import (
    BaseTool,
    InjectedToolArg,
    InjectedToolCallId,
    StructuredTool,
    tool,
)
from langgraph.prebuilt import ToolNode, create_react_agent
from langgraph.prebuilt.chat_agent_executor import AgentState
from langgraph.types import Command, interrupt

import waystone
from tests.support.chain import chain
from tests.support.chat_models import ConversationModel
from waystone import Runtime, Settings
from waystone.errors import BadInput

pytestmark = pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecatedSinceV10")

ASK = {"name": "ask", "args": {"question": "go on?"}, "id": "call_ask"}
SAID = {"messages": [{"role": "user", "content": "book order 1001"}]}


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": f"call_{name}"}


def agent(tools: list[BaseTool] | ToolNode, *calls: dict[str, Any]) -> Any:
    """``create_react_agent`` whose model makes ``calls`` and asks (``ask``) in one turn,
    all run by one task of its tools node (``version="v1"``; v2 sends each call to a
    task of its own, and only the asking one runs again)."""
    turn = AIMessage(content="", tool_calls=[*calls, ASK])
    model = ConversationModel(responses=[turn, AIMessage("done")])
    return create_react_agent(model, tools, version="v1")


class Tools:
    """The tools of a test, counting their calls."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        calls = self.calls

        @tool
        def ask(question: str) -> str:
            """Ask a person."""
            return str(interrupt({"ask": question}))

        @tool
        def book(order_id: str) -> str:
            """Book an order."""
            calls["book"] += 1
            return f"booked {order_id} ({calls['book']})"

        @tool
        def look(order_id: str) -> str:
            """Look an order up."""
            calls["look"] += 1
            return f"{order_id} is in stock"

        @tool
        def fails(order_id: str) -> str:
            """Fails."""
            calls["fails"] += 1
            raise ValueError(f"no such order {order_id}")

        @waystone.effect
        def note(to: str) -> dict[str, Any]:
            calls["note"] += 1
            return {"sent_to": to}

        @tool
        def tell(to: str) -> str:
            """Tell a customer (an effect inside)."""
            calls["tell"] += 1
            return f"told {note(to=to)['sent_to']}"

        @tool("book")
        def book_keyed(order_id: str, key: Annotated[str, InjectedToolArg]) -> str:
            """Book an order."""
            calls["book"] += 1
            return f"booked {order_id} with {key[:6]}"

        self.ask, self.book, self.look, self.fails, self.tell = ask, book, look, fails, tell
        self.book_keyed = book_keyed

    def mcp(self, **annotations: Any) -> BaseTool:
        """``look`` as ``langchain-mcp-adapters`` makes an MCP tool: the server's annotations
        (``ToolAnnotations.model_dump()``) in its metadata."""
        hints = {"title": None, "readOnlyHint": None, "destructiveHint": None}
        hints |= {"idempotentHint": None, "openWorldHint": None, **annotations}
        calls = self.calls

        def look(order_id: str) -> str:
            calls["look"] += 1
            return f"{order_id} is in stock"

        return StructuredTool.from_function(look, description="Look.", metadata=hints)


def answered(rt: Runtime, name: str, graph: Any) -> tuple[str, dict[str, Any]]:
    """Run ``graph`` until it asks, answer ``yes``, run it to its end: its thread and
    history."""
    rt.register_graph(name, graph)
    waiting = rt.invoke(name, SAID)
    assert waiting.state == "waiting", waiting
    rt.resume(waiting.thread_id, "yes")
    done = rt.run(waiting.thread_id)
    assert done.state == "done", done
    return waiting.thread_id, rt.history(waiting.thread_id)


def results(rt: Runtime, name: str, thread_id: str) -> dict[str, str]:
    messages = rt.graph(name).get_state(rt.config(thread_id)).values["messages"]
    return {m.tool_call_id: str(m.content) for m in messages if isinstance(m, ToolMessage)}


def drive(rt: Runtime, thread_id: str, driven: str) -> Any:
    """``rt.run``, or ``rt.arun`` on an event loop of its own."""
    return rt.run(thread_id) if driven == "sync" else asyncio.run(rt.arun(thread_id))


def effects(history: dict[str, Any]) -> dict[str, tuple[str, int]]:
    return {e["tool"]: (e["status"], e["attempts"]) for e in history["effects"]}


def test_a_tool_that_declares_nothing_is_not_called_again_when_its_node_runs_again(
    rt: Runtime,
) -> None:
    tools = Tools()
    thread_id, history = answered(
        rt, "plain", agent([tools.book, tools.ask], call("book", order_id="1001"))
    )
    assert tools.calls["book"] == 1
    said = results(rt, "plain", thread_id)
    assert said == {"call_book": "booked 1001 (1)", "call_ask": "yes"}  # the ledger's copy
    assert effects(history) == {"book": ("applied", 1), "ask": ("applied", 1)}
    kinds = [e["kind"] for e in history["events"]]
    assert kinds.count("effect-interrupted") == 1
    assert not {"retry", "retries-exhausted", "needs-human"} & set(kinds)


def test_a_read_only_tool_is_called_again(rt: Runtime) -> None:
    tools = Tools()
    read_only = waystone.durable_tool(tools.look, read_only=True)
    assert tools.look.metadata is None  # the user's tool is left as it is
    _, history = answered(rt, "reads", agent([read_only, tools.ask], call("look", order_id="1001")))
    assert tools.calls["look"] == 2
    assert set(effects(history)) == {"ask"}  # no ledger row for a read-only call


def test_a_read_only_tool_is_retried_on_a_transient_error(rt: Runtime) -> None:
    import httpx

    calls: Counter[str] = Counter()

    @tool
    def flaky(order_id: str) -> str:
        """Reads, refused once."""
        calls["flaky"] += 1
        if calls["flaky"] == 1:
            raise httpx.ConnectError("refused")
        return "in stock"

    turn = AIMessage(content="", tool_calls=[call("flaky", order_id="1001")])
    model = ConversationModel(responses=[turn, AIMessage("done")])
    rt.register_graph(
        "flaky", create_react_agent(model, [waystone.durable_tool(flaky, read_only=True)])
    )
    done = rt.invoke("flaky", SAID)
    assert done.state == "done", done
    assert calls["flaky"] == 2
    assert results(rt, "flaky", done.thread_id) == {"call_flaky": "in stock"}


@pytest.mark.parametrize(
    ("hint", "calls", "ledgered"),
    [("readOnlyHint", 2, False), ("idempotentHint", 1, True)],
)
def test_mcp_annotations_are_honoured(rt: Runtime, hint: str, calls: int, ledgered: bool) -> None:
    tools = Tools()
    mcp = tools.mcp(**{hint: True, "destructiveHint": False})
    _, history = answered(rt, "mcp", agent([mcp, tools.ask], call("look", order_id="1001")))
    assert tools.calls["look"] == calls
    assert ("look" in effects(history)) is ledgered


def test_a_tool_with_its_effects_inside_runs_again_and_its_effect_is_made_once(
    rt: Runtime,
) -> None:
    tools = Tools()
    inside = waystone.durable_tool(tools.tell, effects_inside=True)
    thread_id, history = answered(
        rt, "inside", agent([inside, tools.ask], call("tell", to="front desk"))
    )
    assert (tools.calls["tell"], tools.calls["note"]) == (2, 1)
    assert effects(history) == {"note": ("applied", 1), "ask": ("applied", 1)}
    assert results(rt, "inside", thread_id)["call_tell"] == "told front desk"


def test_a_graph_can_opt_out_and_have_its_tools_called_as_they_are(database_url: str) -> None:
    tools = Tools()
    graph = agent([tools.book, tools.ask], call("book", order_id="1001"))
    with Runtime(Settings(database_url=database_url), tools="as-is") as rt:
        _, history = answered(rt, "as_is", graph)
    assert tools.calls["book"] == 2  # LangGraph's own re-execution, as on a stock saver
    assert history["effects"] == []


def test_a_tools_mode_is_checked() -> None:
    with pytest.raises(BadInput, match="'ledger'.*'as-is'"):
        Runtime(Settings(database_url="postgresql://unused"), tools="maybe")


def test_a_durable_tool_is_not_wrapped_twice(rt: Runtime) -> None:
    tools = Tools()
    durable = waystone.durable_tool(tools.book_keyed, idempotent_by_key=True)
    _, history = answered(rt, "durable", agent([durable, tools.ask], call("book", order_id="1")))
    assert tools.calls["book"] == 1
    [row] = [e for e in history["effects"] if e["tool"] == "book"]
    assert row["receipt"] == {"output": f"booked 1 with {row['key'][:6]}"}  # durable_tool's
    applied = [e for e in history["events"] if e["kind"] == "effect-applied"]
    assert [e["evidence"]["key"] for e in applied].count(row["key"]) == 1


def test_an_error_a_tool_raises_is_a_known_outcome_never_retried(rt: Runtime) -> None:
    tools = Tools()
    turn = AIMessage(content="", tool_calls=[call("fails", order_id="9")])
    model = ConversationModel(responses=[turn, AIMessage("done")])
    rt.register_graph("fails", create_react_agent(model, [tools.fails]))
    failed = rt.invoke("fails", SAID)
    assert failed.state == "failed"
    assert "ValueError: no such order 9" in str(failed.reason)  # the tool's own error
    history = rt.history(failed.thread_id)
    assert effects(history) == {"fails": ("failed", 1)}

    rt.requeue(failed.thread_id, reason="looked at it", by="ana")
    again = rt.run(failed.thread_id)
    assert again.state == "needs-human"  # its outcome is not known: a person says
    assert tools.calls["fails"] == 1


def test_an_error_handled_by_the_tool_node_is_shown_to_the_model_once(rt: Runtime) -> None:
    tools = Tools()
    node = ToolNode([tools.fails, tools.ask], handle_tool_errors=True)
    thread_id, history = answered(rt, "handled", agent(node, call("fails", order_id="9")))
    assert tools.calls["fails"] == 1
    assert "no such order 9" in results(rt, "handled", thread_id)["call_fails"]
    assert effects(history)["fails"] == ("applied", 1)


def test_an_interrupt_inside_an_effect_waits_and_the_effect_is_made_once(rt: Runtime) -> None:
    from typing import TypedDict

    made: Counter[str] = Counter()

    @waystone.effect
    def pay(order_id: str) -> dict[str, Any]:
        if interrupt({"pay": order_id}) != "yes":
            return {"paid": False}
        made["pay"] += 1
        return {"paid": True}

    class State(TypedDict, total=False):
        order_id: str
        receipt: dict[str, Any]

    def pay_node(state: State) -> dict[str, Any]:
        return {"receipt": pay(order_id=state["order_id"])}

    builder = chain(State, ("pay", pay_node))
    rt.register_graph("pays", builder)
    waiting = rt.invoke("pays", {"order_id": "1"})
    assert waiting.state == "waiting", waiting
    assert effects(rt.history(waiting.thread_id)) == {"pay": ("interrupted", 0)}
    rt.resume(waiting.thread_id, "yes")
    done = rt.run(waiting.thread_id)
    assert done.state == "done", done
    history = rt.history(waiting.thread_id)
    assert made["pay"] == 1
    assert effects(history) == {"pay": ("applied", 1)}
    assert not {"retry", "unknown-outcome"} & {e["kind"] for e in history["events"]}


def test_async_tools_go_through_the_ledger_too(rt: Runtime) -> None:
    calls: Counter[str] = Counter()

    @tool
    async def ask(question: str) -> str:
        """Ask a person."""
        return str(interrupt({"ask": question}))

    @tool
    async def book(order_id: str) -> str:
        """Book an order."""
        calls["book"] += 1
        return f"booked {order_id}"

    rt.register_graph("async_agent", agent([book, ask], call("book", order_id="1001")))

    async def drive() -> str:
        waiting = await rt.ainvoke("async_agent", SAID)
        assert waiting.state == "waiting", waiting
        rt.resume(waiting.thread_id, "yes")
        done = await rt.arun(waiting.thread_id)
        assert done.state == "done", done
        return done.thread_id

    thread_id = asyncio.run(drive())
    assert calls["book"] == 1
    assert effects(rt.history(thread_id)) == {"book": ("applied", 1), "ask": ("applied", 1)}


def test_a_tool_node_in_a_subgraph_is_routed_too(rt: Runtime) -> None:
    from langgraph.graph import MessagesState

    tools = Tools()
    inner = agent([tools.book, tools.ask], call("book", order_id="1001"))
    outer = chain(MessagesState, ("inner", inner))
    _, history = answered(rt, "nested", outer)
    assert tools.calls["book"] == 1
    assert effects(history) == {"book": ("applied", 1), "ask": ("applied", 1)}


def test_a_subgraph_a_node_function_calls_is_refused_unless_its_tools_are_safe(
    rt: Runtime,
) -> None:
    from langgraph.graph import END, START, MessagesState, StateGraph

    tools = Tools()

    def outer(inner: Any) -> StateGraph[Any]:
        def node(state: MessagesState) -> dict[str, Any]:
            return {"messages": inner.invoke(state)["messages"]}

        builder = StateGraph(MessagesState)
        builder.add_node("call_inner", node)
        builder.add_edge(START, "call_inner")
        builder.add_edge("call_inner", END)
        return builder

    unsafe = agent([tools.book, tools.ask], call("book", order_id="1001"))
    rt.register_graph("hidden", outer(unsafe))
    with pytest.raises(BadInput, match=r"node hidden/call_inner .*tools ask, book .*as a node"):
        rt.start("hidden", SAID)  # refused when the graph is built: before any run
    assert rt.list() == []
    read_only = waystone.durable_tool(tools.look, read_only=True)
    safe = agent([read_only], call("look", order_id="1001"))
    rt.register_graph("hidden_safe", outer(safe))  # nothing in it needs the ledger
    assert rt.start("hidden_safe", SAID).state == "queued"
    with Runtime(Settings(database_url=rt.database_url), tools="as-is") as as_is:
        as_is.register_graph("hidden", outer(unsafe))  # opted out: called as LangGraph does
        assert as_is.start("hidden", SAID).state == "queued"


@pytest.mark.parametrize("declared", [False, True])
def test_effects_a_tool_made_before_its_interrupt_are_not_made_again(
    rt: Runtime, declared: bool
) -> None:
    calls: Counter[str] = Counter()

    @waystone.effect
    def note(to: str) -> dict[str, Any]:
        calls["note"] += 1
        return {"sent_to": to}

    @tool
    def tell_then_ask(to: str) -> str:
        """Tell a customer, then ask a person."""
        calls["tool"] += 1
        note(to=to)
        return f"asked: {interrupt({'told': to})}"

    told = waystone.durable_tool(tell_then_ask, effects_inside=True) if declared else tell_then_ask
    turn = AIMessage(content="", tool_calls=[call("tell_then_ask", to="front desk")])
    model = ConversationModel(responses=[turn, AIMessage("done")])
    name = f"tells_{int(declared)}"
    rt.register_graph(name, create_react_agent(model, [told]))
    waiting = rt.invoke(name, SAID)
    assert waiting.state == "waiting", waiting
    rt.resume(waiting.thread_id, "yes")
    done = rt.run(waiting.thread_id)

    assert done.state == "done", done
    assert (calls["tool"], calls["note"]) == (2, 1)  # run again; its effect made once
    assert results(rt, name, done.thread_id) == {"call_tell_then_ask": "asked: yes"}
    found = effects(rt.history(done.thread_id))
    assert found["note"] == ("applied", 1)
    assert found.get("tell_then_ask") == (None if declared else ("applied", 1))


@pytest.mark.parametrize("how", ["effect-inside", "durable-tool"])
def test_a_needs_human_inside_a_tool_is_never_handed_to_the_model(rt: Runtime, how: str) -> None:
    """``handle_tool_errors=True`` turns a tool's errors into messages for the model; an
    effect of unknown outcome (no lookup, no key) inside a tool ends the run instead."""
    from waystone.errors import UnknownOutcome

    @waystone.effect
    def charge(order_id: str) -> dict[str, Any]:
        raise UnknownOutcome(f"the charge of {order_id} timed out")

    @tool
    def pay(order_id: str) -> str:
        """Pay for an order."""
        return str(charge(order_id=order_id))

    @tool("pay")
    def pay_directly(order_id: str) -> str:
        """Pay for an order."""
        raise TimeoutError(f"the charge of {order_id} timed out")

    paying = (
        waystone.durable_tool(pay, effects_inside=True)
        if how == "effect-inside"
        else waystone.durable_tool(pay_directly)
    )
    turn = AIMessage(content="", tool_calls=[call("pay", order_id="5")])
    model = ConversationModel(responses=[turn, AIMessage("done")])
    node = ToolNode([paying], handle_tool_errors=True)
    rt.register_graph("pays_once", create_react_agent(model, node))
    stopped = rt.invoke("pays_once", SAID)
    assert stopped.state == "needs-human", stopped
    assert "pay" in str(stopped.reason) or "charge" in str(stopped.reason)


def test_a_graph_with_an_async_only_tool_is_driven_on_an_event_loop(rt: Runtime) -> None:
    """An MCP server's tools are coroutines alone: ``invoke`` cannot call them."""
    calls: Counter[str] = Counter()

    async def look(order_id: str) -> str:
        calls["look"] += 1
        return f"{order_id} is in stock"

    mcp_like = StructuredTool.from_function(
        coroutine=look, name="look", description="Look.", metadata={"readOnlyHint": True}
    )
    turn = AIMessage(content="", tool_calls=[call("look", order_id="1001")])
    model = ConversationModel(responses=[turn, AIMessage("done")])
    rt.register_graph("mcp_async", create_react_agent(model, [mcp_like]))
    done = rt.invoke("mcp_async", SAID)
    assert done.state == "done", done
    assert calls["look"] == 1
    assert results(rt, "mcp_async", done.thread_id) == {"call_look": "1001 is in stock"}


def test_a_command_a_tool_returned_is_given_back_when_its_node_runs_again(rt: Runtime) -> None:
    calls: Counter[str] = Counter()

    @tool
    def hand_off(to: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        """Hand the conversation to someone."""
        calls["hand_off"] += 1
        said = ToolMessage(f"handed to {to}", tool_call_id=tool_call_id, name="hand_off")
        return Command(update={"messages": [said]})

    tools = Tools()
    thread_id, history = answered(
        rt, "hands", agent([hand_off, tools.ask], call("hand_off", to="billing"))
    )
    assert calls["hand_off"] == 1
    assert results(rt, "hands", thread_id)["call_hand_off"] == "handed to billing"
    [row] = [e for e in history["effects"] if e["tool"] == "hand_off"]
    assert "command" in row["receipt"]


@pytest.mark.timeout(60)  # the hang it guards against fails the test
@pytest.mark.parametrize("inner", ["sync-tool", "async-effect"])
def test_many_parallel_calls_on_an_event_loop_do_not_exhaust_its_threads(
    rt: Runtime, inner: str
) -> None:
    """Each call's ledger work holds a thread while the tool runs; the tool needs one of
    the loop's threads too (a sync tool; an async ``@effect``'s ledger work)."""
    calls: Counter[str] = Counter()

    @waystone.effect
    async def note(order_id: str) -> dict[str, Any]:
        calls["note"] += 1
        return {"noted": order_id}

    @tool
    def book(order_id: str) -> str:
        """Book an order."""
        calls["book"] += 1
        return f"booked {order_id}"

    @tool("book")
    async def abook(order_id: str) -> str:
        """Book an order."""
        calls["book"] += 1
        return f"booked {(await note(order_id=order_id))['noted']}"

    @tool
    async def look(order_id: str) -> str:
        """Look an order up (async alone, as an MCP tool)."""
        return f"{order_id} is in stock"

    many = 12
    turn = AIMessage(
        content="",
        tool_calls=[
            {"name": "book", "args": {"order_id": str(n)}, "id": f"call_{n}"} for n in range(many)
        ],
    )
    model = ConversationModel(responses=[turn, AIMessage("done")])
    booking = book if inner == "sync-tool" else abook
    rt.register_graph("many", create_react_agent(model, [booking, look], version="v1"))
    done = rt.invoke("many", SAID)
    assert done.state == "done", done
    assert calls["book"] == many
    assert calls["note"] == (many if inner == "async-effect" else 0)
    assert len(results(rt, "many", done.thread_id)) == many


def test_a_command_with_any_state_value_is_given_back_as_it_was(rt: Runtime) -> None:
    """The kept ``Command`` goes through the saver's serializer, as the state it updates:
    what a checkpoint can hold, the replay gives back (here a ``Document``)."""

    class State(AgentState):
        found: list[Document]

    calls: Counter[str] = Counter()

    @tool
    def search(query: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        """Search the documents."""
        calls["search"] += 1
        said = ToolMessage("found one", tool_call_id=tool_call_id, name="search")
        return Command(update={"messages": [said], "found": [Document(page_content=query)]})

    tools = Tools()
    turn = AIMessage(content="", tool_calls=[call("search", query="refunds"), ASK])
    model = ConversationModel(responses=[turn, AIMessage("done")])
    graph = create_react_agent(model, [search, tools.ask], state_schema=State, version="v1")
    thread_id, history = answered(rt, "documents", graph)
    assert calls["search"] == 1
    values = rt.graph("documents").get_state(rt.config(thread_id)).values
    assert values["found"] == [Document(page_content="refunds")]
    assert results(rt, "documents", thread_id)["call_search"] == "found one"


@pytest.mark.parametrize("driven", ["sync", "async"])
def test_a_catch_all_wrapper_of_the_users_does_not_swallow_a_needs_human(
    rt: Runtime, driven: str
) -> None:
    """A ``wrap_tool_call`` that turns every exception into a message for the model would
    let it call the tool again under a new call id: the run stops all the same."""
    from waystone.errors import UnknownOutcome

    calls: Counter[str] = Counter()

    @waystone.effect
    def charge(order_id: str) -> dict[str, Any]:
        calls["charge"] += 1
        raise UnknownOutcome(f"the charge of {order_id} timed out")

    @tool
    def pay(order_id: str) -> str:
        """Pay for an order."""
        return str(charge(order_id=order_id))

    def told(request: Any, error: Exception) -> ToolMessage:
        return ToolMessage(f"error: {error}", tool_call_id=request.tool_call["id"], status="error")

    def catch_all(request: Any, execute: Any) -> Any:
        try:
            return execute(request)
        except Exception as exc:
            return told(request, exc)

    async def acatch_all(request: Any, execute: Any) -> Any:
        try:
            return await execute(request)
        except Exception as exc:
            return told(request, exc)

    paying = waystone.durable_tool(pay, effects_inside=True)
    turn = AIMessage(content="", tool_calls=[call("pay", order_id="5")])
    again = AIMessage(content="", tool_calls=[{**call("pay", order_id="5"), "id": "call_pay_2"}])
    model = ConversationModel(responses=[turn, again, AIMessage("done")])
    if driven == "sync":
        node = ToolNode([paying], wrap_tool_call=catch_all)
    else:
        node = ToolNode([paying], awrap_tool_call=acatch_all)
    rt.register_graph("pays_caught", create_react_agent(model, node))
    if driven == "sync":
        stopped = rt.invoke("pays_caught", SAID)
    else:
        stopped = asyncio.run(rt.ainvoke("pays_caught", SAID))
    assert stopped.state == "needs-human", stopped
    assert "charge" in str(stopped.reason)
    assert calls["charge"] == 1


def test_a_tool_that_acts_between_two_interrupts_is_not_made_again(rt: Runtime) -> None:
    """Code before an ``interrupt()`` runs again on resume: after an answered interrupt it
    may have acted, so the call's intent stays open and a person looks."""
    calls: Counter[str] = Counter()

    @tool
    def book_twice_asked(order_id: str) -> str:
        """Ask, book, ask again."""
        interrupt({"book": order_id})
        calls["book"] += 1
        return f"told: {interrupt({'booked': order_id})}"

    turn = AIMessage(content="", tool_calls=[call("book_twice_asked", order_id="7")])
    model = ConversationModel(responses=[turn, AIMessage("done")])
    rt.register_graph("asks_twice", create_react_agent(model, [book_twice_asked]))
    waiting = rt.invoke("asks_twice", SAID)
    assert waiting.state == "waiting", waiting
    rt.resume(waiting.thread_id, "yes")
    again = rt.run(waiting.thread_id)
    assert again.state == "waiting", again  # the second interrupt
    rt.resume(again.thread_id, "yes")
    stopped = rt.run(again.thread_id)
    assert stopped.state == "needs-human", stopped
    assert calls["book"] == 1
    history = rt.history(stopped.thread_id)
    assert [e["status"] for e in history["effects"]] == ["intent"]
    assert "effect-left-open" in {e["kind"] for e in history["events"]}


def test_a_tool_that_sent_a_request_before_its_interrupt_is_not_made_again(
    rt: Runtime, provider: Any
) -> None:
    from waystone.effects import http

    calls: Counter[str] = Counter()

    @tool
    def send_then_ask(order_id: str) -> str:
        """Send a request, then ask."""
        calls["send"] += 1
        http.request("GET", f"{provider.url}/nowhere/{order_id}", timeout=5, not_found_ok=True)
        return f"asked: {interrupt({'sent': order_id})}"

    turn = AIMessage(content="", tool_calls=[call("send_then_ask", order_id="8")])
    model = ConversationModel(responses=[turn, AIMessage("done")])
    rt.register_graph("sends", create_react_agent(model, [send_then_ask]))
    waiting = rt.invoke("sends", SAID)
    assert waiting.state == "waiting", waiting
    rt.resume(waiting.thread_id, "yes")
    stopped = rt.run(waiting.thread_id)
    assert stopped.state == "needs-human", stopped
    assert calls["send"] == 1


@pytest.mark.parametrize("hints", [{"readOnlyHint": True}, {"idempotentHint": True}])
def test_a_transport_error_is_retried_when_the_tool_node_handles_errors(
    rt: Runtime, hints: dict[str, bool]
) -> None:
    """``handle_tool_errors=True`` makes an error a message inside ``ToolNode``: the retry
    a read-only or idempotent tool gets happens before that."""
    import httpx

    calls: Counter[str] = Counter()

    def look(order_id: str) -> str:
        calls["look"] += 1
        if calls["look"] == 1:
            raise httpx.ConnectError("refused")
        return f"{order_id} is in stock"

    flaky = StructuredTool.from_function(look, description="Look.", metadata=hints)
    turn = AIMessage(content="", tool_calls=[call("look", order_id="1001")])
    model = ConversationModel(responses=[turn, AIMessage("done")])
    node = ToolNode([flaky], handle_tool_errors=True)
    rt.register_graph("handled_flaky", create_react_agent(model, node))
    done = rt.invoke("handled_flaky", SAID)
    assert done.state == "done", done
    assert calls["look"] == 2
    assert results(rt, "handled_flaky", done.thread_id) == {"call_look": "1001 is in stock"}


@pytest.mark.parametrize("driven", ["sync", "async"])
def test_a_retry_wrapper_of_the_users_gets_the_tools_own_error_again(
    rt: Runtime, driven: str
) -> None:
    """A ``wrap_tool_call`` that calls again on the tool's own error class gets that class
    back from the ledger (the call is not made again), so its ``except`` still works."""
    tools = Tools()
    caught: list[str] = []

    def again(request: Any, execute: Any) -> Any:
        try:
            return execute(request)
        except ValueError:
            caught.append("first")
        try:
            return execute(request)
        except ValueError as exc:
            caught.append("second")
            return ToolMessage(f"gave up: {exc}", tool_call_id=request.tool_call["id"])

    async def aagain(request: Any, execute: Any) -> Any:
        try:
            return await execute(request)
        except ValueError:
            caught.append("first")
        try:
            return await execute(request)
        except ValueError as exc:
            caught.append("second")
            return ToolMessage(f"gave up: {exc}", tool_call_id=request.tool_call["id"])

    if driven == "sync":
        node = ToolNode([tools.fails], wrap_tool_call=again)
    else:
        node = ToolNode([tools.fails], awrap_tool_call=aagain)
    turn = AIMessage(content="", tool_calls=[call("fails", order_id="9")])
    model = ConversationModel(responses=[turn, AIMessage("done")])
    rt.register_graph("retried", create_react_agent(model, node))
    if driven == "sync":
        done = rt.invoke("retried", SAID)
    else:
        done = asyncio.run(rt.ainvoke("retried", SAID))
    assert done.state == "done", done
    assert caught == ["first", "second"]
    assert tools.calls["fails"] == 1
    said = results(rt, "retried", done.thread_id)["call_fails"]
    assert said == "gave up: no such order 9"
    assert effects(rt.history(done.thread_id)) == {"fails": ("failed", 1)}


@pytest.mark.parametrize("driven", ["sync", "async"])
def test_an_invalid_resume_value_is_an_interrupt_and_the_call_is_made_on_a_good_one(
    rt: Runtime, driven: str
) -> None:
    """A resume value that does not match ``interrupt()``'s ``response_schema`` leaves the
    interrupt to be answered again: the call is recorded interrupted, never failed."""
    from pydantic import BaseModel

    class Approval(BaseModel):
        approved: bool

    calls: Counter[str] = Counter()

    @tool
    def book_approved(order_id: str) -> str:
        """Ask for approval, then book."""
        answer = interrupt({"approve": order_id}, response_schema=Approval)
        calls["book"] += 1
        return f"booked {order_id}: {answer.approved}"

    turn = AIMessage(content="", tool_calls=[call("book_approved", order_id="3")])
    model = ConversationModel(responses=[turn, AIMessage("done")])
    rt.register_graph("approves", create_react_agent(model, [book_approved]))
    waiting = rt.invoke("approves", SAID)
    assert waiting.state == "waiting", waiting
    rt.resume(waiting.thread_id, {"approved": "maybe"})
    refused = drive(rt, waiting.thread_id, driven)
    assert refused.state == "waiting", refused  # asked again: nothing of the value was saved
    assert calls["book"] == 0
    history = rt.history(refused.thread_id)
    assert effects(history) == {"book_approved": ("interrupted", 0)}
    [said] = [e for e in history["events"] if e["kind"] == "resume-refused"]
    assert "Approval" in said["reason"]
    rt.resume(refused.thread_id, {"approved": True})
    done = drive(rt, refused.thread_id, driven)
    assert done.state == "done", done
    assert calls["book"] == 1
    history = rt.history(done.thread_id)
    assert effects(history) == {"book_approved": ("applied", 1)}
    assert results(rt, "approves", done.thread_id)["call_book_approved"] == "booked 3: True"


def test_the_history_shows_a_long_output_once_in_the_ledger_not_again_in_its_event(
    rt: Runtime,
) -> None:
    page = "lorem ipsum " * 2000

    @tool
    def fetch(order_id: str) -> str:
        """Fetch a long page."""
        return page

    turn = AIMessage(content="", tool_calls=[call("fetch", order_id="4")])
    model = ConversationModel(responses=[turn, AIMessage("done")])
    rt.register_graph("long", create_react_agent(model, [fetch]))
    done = rt.invoke("long", SAID)
    assert done.state == "done", done
    assert results(rt, "long", done.thread_id)["call_fetch"] == page  # the model sees it all
    history = rt.history(done.thread_id)
    [row] = history["effects"]
    assert row["receipt"]["message"]["content"] == page  # the ledger keeps it
    [applied] = [e for e in history["events"] if e["kind"] == "effect-applied"]
    assert applied["evidence"]["key"] == row["key"]
    assert page not in str(applied["evidence"])
    assert applied["evidence"]["receipt"]["summary"]["keys"] == ["message"]


def test_an_invalid_resume_value_inside_an_effect_is_an_interrupt_too(rt: Runtime) -> None:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph
    from pydantic import BaseModel

    class Approval(BaseModel):
        approved: bool

    made: Counter[str] = Counter()

    @waystone.effect
    def pay(order_id: str) -> dict[str, Any]:
        answer = interrupt({"pay": order_id}, response_schema=Approval)
        made["pay"] += 1
        return {"paid": answer.approved}

    class State(TypedDict, total=False):
        order_id: str
        receipt: dict[str, Any]

    builder = StateGraph(State)
    builder.add_node("pay", lambda state: {"receipt": pay(order_id=state["order_id"])})
    builder.add_edge(START, "pay")
    builder.add_edge("pay", END)
    rt.register_graph("pays_approved", builder)
    waiting = rt.invoke("pays_approved", {"order_id": "1"})
    rt.resume(waiting.thread_id, {"approved": "perhaps"})
    refused = rt.run(waiting.thread_id)
    assert refused.state == "waiting", refused
    assert effects(rt.history(refused.thread_id)) == {"pay": ("interrupted", 0)}
    rt.resume(refused.thread_id, {"approved": True})
    done = rt.run(refused.thread_id)
    assert done.state == "done", done
    assert made["pay"] == 1
    assert effects(rt.history(done.thread_id)) == {"pay": ("applied", 1)}
