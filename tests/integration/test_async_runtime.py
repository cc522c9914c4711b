"""A user's async graph driven on an event loop: ``ainvoke``, ``aresume``, ``arun``. Its
async nodes, its async effect and its async chat model run on the caller's loop, and
the effect is made once at the provider however often the node's code runs."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.graph import StateGraph
from langgraph.types import interrupt

from tests.support.async_graphs import async_note_effect
from tests.support.chain import chain
from tests.support.inside import parts
from waystone import Runtime
from waystone.examples.provider import ProviderProcess


class Told(TypedDict, total=False):
    to: str
    draft: str
    receipts: Annotated[list[dict[str, Any]], operator.add]
    answer: str


def told_graph(url: str) -> StateGraph[Any]:
    """draft (an async chat model) -> tell (an async effect, then an interrupt) -> end."""
    model = GenericFakeChatModel(messages=iter([AIMessage("your refund is on its way")] * 4))

    notify = async_note_effect(url)

    async def draft(state: Told) -> dict[str, Any]:
        reply = await model.ainvoke("draft the message")
        return {"draft": str(reply.content)}

    async def tell(state: Told) -> dict[str, Any]:
        receipt = await notify(to=state["to"], body=state["draft"])
        answer = interrupt({"ask": "was the customer told?"})
        return {"receipts": [receipt], "answer": str(answer)}

    return chain(Told, ("draft", draft), ("tell", tell))


@pytest.fixture
def rt_graphs(provider: ProviderProcess) -> dict[str, Any]:
    return {"told": told_graph(provider.url), "meet": meeting_graph}


def test_an_async_graph_is_driven_by_ainvoke_and_resumed_by_arun(
    rt: Runtime, provider: ProviderProcess
) -> None:
    async def drive() -> tuple[Any, Any, Any]:
        waiting = await rt.ainvoke("told", {"to": "ana@example.com"}, thread_id="told-1")
        answered = await rt.aresume("told-1", "yes", by="bo")
        done = await rt.arun("told-1")
        return waiting, answered, done

    waiting, answered, done = asyncio.run(drive())

    assert (waiting.state, waiting.step) == ("waiting", "tell")
    assert [i["value"] for i in waiting.interrupts] == [{"ask": "was the customer told?"}]
    assert answered.state == "waiting"
    assert (done.state, done.interrupts) == ("done", [])
    values = rt.graph("told").get_state(rt.config("told-1")).values
    assert values["answer"] == "yes"
    assert values["draft"] == "your refund is on its way"
    # the node ran twice (before the interrupt, and on resume): one message was sent
    sent = provider.ledger()["notifications"]
    assert [n["client_ref"] for n in sent] == [e.key for e in parts(rt).ledger.for_thread("told-1")]
    assert values["receipts"][0]["id"] == sent[0]["id"]
    assert asyncio.run(rt.astatus("told-1")).state == "done"


class Meeting(TypedDict, total=False):
    name: str
    met: bool


ARRIVED: dict[str, asyncio.Event] = {}


async def _meet(state: Meeting) -> dict[str, Any]:
    """Each run's node waits until the other's has arrived: two runs meet only if they are
    driven at once on the loop."""
    mine, other = ("a", "b") if state["name"] == "a" else ("b", "a")
    ARRIVED[mine].set()
    await asyncio.wait_for(ARRIVED[other].wait(), timeout=30)
    return {"met": True}


def meeting_graph() -> StateGraph[Any]:
    return chain(Meeting, ("meet", _meet))


def test_two_runs_are_driven_at_once_on_one_event_loop(rt: Runtime) -> None:
    async def both() -> list[Any]:
        ARRIVED.update(a=asyncio.Event(), b=asyncio.Event())
        return list(
            await asyncio.gather(
                rt.ainvoke("meet", {"name": "a"}, thread_id="meet-a"),
                rt.ainvoke("meet", {"name": "b"}, thread_id="meet-b"),
            )
        )

    runs = asyncio.run(both())
    assert [r.state for r in runs] == ["done", "done"]
    assert rt.graph("meet").get_state(rt.config("meet-a")).values["met"] is True


async def _broken(state: Meeting) -> dict[str, Any]:
    await asyncio.sleep(0)
    raise ValueError("the model answered nonsense")


def broken_graph() -> StateGraph[Any]:
    return chain(Meeting, ("broken", _broken))


def test_an_async_node_that_raises_ends_its_run_failed_with_the_error(rt: Runtime) -> None:
    rt.register_graph("broken", broken_graph)
    failed = asyncio.run(rt.ainvoke("broken", {"name": "a"}, thread_id="broken-1"))
    assert failed.state == "failed"
    assert "ValueError: the model answered nonsense" in failed.reason
