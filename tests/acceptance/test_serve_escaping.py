"""Every value a run holds is shown as text on the pages, never run as markup: a goal, an
approval's comment, an interrupt's payload, a message, a tool call and its result, and a
node's name holding ``<script>``, ``<img onerror>`` and quotes, read in headless Chromium.
The text must be on the page literally and no element of it may exist (the check holds
whatever the CSP would block)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TypedDict
from urllib.parse import quote

import pytest
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt

from tests.conftest import REFUND_INPUT
from tests.support.browser import chromium, log_in
from tests.support.chain import chain
from tests.support.graphs import chat_graph
from tests.support.served import TOKEN, Served
from waystone import Runtime, Settings
from waystone.cli.agents import default_agents
from waystone.examples.provider import ProviderProcess

MARKUP = (
    "<script>document.title='owned'</script>"
    "<img src=x onerror=\"document.title='owned'\"> \"quoted\" & 'single'"
)
AS_JSON = json.dumps(MARKUP)  # an interrupt's value is shown as JSON
NODE = '<img src=x onerror="document.title=1">ask'


class Question(TypedDict, total=False):
    question: str
    answer: str


def _ask(state: Question) -> dict[str, Any]:
    return {"answer": str(interrupt({"question": state["question"]}))}


def marked_graph() -> StateGraph[Any]:
    """One node, named with markup, that asks an interrupt() of its question."""
    builder: StateGraph[Any] = StateGraph(Question)
    builder.add_node(NODE, _ask)
    builder.add_edge(START, NODE)
    builder.add_edge(NODE, END)
    return builder


def _called(state: MessagesState) -> dict[str, list[AnyMessage]]:
    call = {"name": MARKUP, "args": {"q": MARKUP}, "id": "call-1"}
    return {
        "messages": [
            AIMessage(content="", tool_calls=[call]),
            ToolMessage(MARKUP, tool_call_id="call-1", name=MARKUP),
        ]
    }


def called_graph() -> StateGraph[Any]:
    """One node that adds a tool call and its result, each holding markup."""
    return chain(MessagesState, ("called", _called))


@pytest.fixture
def marked(
    database_url: str, provider: ProviderProcess
) -> Iterator[tuple[Runtime, dict[str, str]]]:
    """A runtime with the graphs, and a run of each kind whose text holds MARKUP."""
    del provider
    graphs = {"marked": marked_graph(), "chat": chat_graph(), "called": called_graph()}
    with Runtime(Settings(database_url=database_url), default_agents, graphs=graphs) as rt:
        asked = rt.start("marked", {"question": MARKUP}, goal=MARKUP).thread_id
        assert rt.run(asked).state == "waiting"
        chat = rt.invoke("chat", {"messages": [{"role": "user", "content": MARKUP}]})
        assert chat.state == "done"
        called = rt.invoke("called", {"messages": [{"role": "user", "content": "go"}]})
        assert called.state == "done"
        refund = rt.start("refund", REFUND_INPUT).thread_id
        assert rt.run(refund).state == "waiting"
        rt.approve(refund, by="ana", comment=MARKUP)
        yield (
            rt,
            {
                "asked": asked,
                "chat": chat.thread_id,
                "called": called.thread_id,
                "refund": refund,
            },
        )


def test_markup_in_a_runs_values_is_shown_as_text(
    marked: tuple[Runtime, dict[str, str]],
) -> None:
    from playwright.sync_api import Page

    rt, runs = marked
    served = Served(rt, TOKEN)

    def visit(page: Page, path: str) -> None:
        reply = page.goto(served.url + path)
        assert reply is not None and reply.status == 200, path
        # no element made of the values, and nothing of theirs ran
        assert page.locator("main script, main img, main [onerror]").count() == 0, path
        assert page.title().endswith("- waystone") and "owned" not in page.title(), path
        assert "<script>document.title" not in page.content(), path

    def shown(page: Page, selector: str, literal: str = MARKUP) -> str:
        text = page.locator(selector).inner_text()
        assert literal in text, (selector, text)
        return text

    try:
        with chromium() as browser:
            page = browser.new_context().new_page()
            log_in(page, served.url, TOKEN)

            visit(page, "/")
            shown(page, "#pending-interrupts", AS_JSON)

            visit(page, f"/runs/{quote(runs['asked'], safe='')}")
            shown(page, "#goal")
            shown(page, "#interrupts", AS_JSON)
            current = page.locator("#graph g.node.current")
            assert current.count() == 1 and current.text_content() == NODE
            assert page.locator("#graph-current").inner_text() == f"current: {NODE}"

            visit(page, f"/runs/{quote(runs['chat'], safe='')}")
            messages = shown(page, "#messages")
            assert f"echo {MARKUP}" in messages

            visit(page, f"/runs/{quote(runs['called'], safe='')}")
            assert page.locator("#interrupts textarea").count() == 0
            call = shown(page, '.tool-call[data-tool-call-id="call-1"]')
            assert json.dumps({"q": MARKUP}) in call
            shown(page, '.tool-result[data-tool-call-id="call-1"]')
            assert MARKUP in page.locator("#messages pre").last.inner_text()

            visit(page, f"/runs/{quote(runs['refund'], safe='')}")
            assert f"approve by ana: {MARKUP}" in shown(page, "#events")
    finally:
        served.close()
