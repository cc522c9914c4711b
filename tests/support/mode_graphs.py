"""A graph that makes an event of every stream mode, for the stream modes' tests and
``scripts/modes_diff.py``: a model that streams its answer token by token and calls a
tool, the tool (``ToolNode``), a second answer, then a subgraph whose node writes to the
custom stream. Imports LangGraph and langchain-core only, so the reference server
(``langgraph dev``) loads it as it is."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

CALL = {"name": "lookup", "args": {"q": "answer"}, "id": "call-1", "type": "tool_call"}


class TokenModel(BaseChatModel):
    """Answers by the conversation it is given: a tool call first, then, after the
    tool's answer, the tool's answer in words; each word a token."""

    @property
    def _llm_type(self) -> str:
        return "token-model"

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage(f"The answer is {messages[-1].content}", id="answer")
        return AIMessage("Looking it up", id="asking", tool_calls=[CALL])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._answer(messages))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        answer = self._answer(messages)
        words = str(answer.content).split(" ")
        for k, word in enumerate(words):
            token = word if k == 0 else f" {word}"
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=token, id=answer.id))
            if run_manager:
                run_manager.on_llm_new_token(token, chunk=chunk)
            yield chunk
        if answer.tool_calls:
            calls = [{**c, "type": "tool_call_chunk", "index": 0} for c in answer.tool_calls]
            for call in calls:
                call["args"] = '{"q": "answer"}'
                del call["type"]
            chunk = ChatGenerationChunk(
                message=AIMessageChunk(content="", id=answer.id, tool_call_chunks=calls)
            )
            if run_manager:
                run_manager.on_llm_new_token("", chunk=chunk)
            yield chunk


@tool
def lookup(q: str) -> str:
    """Looks ``q`` up."""
    return "42"


def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
    return {"messages": [TokenModel().invoke(state["messages"])]}


def route(state: MessagesState) -> str:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else "child"


def inner(state: MessagesState) -> dict[str, list[BaseMessage]]:
    get_stream_writer()({"progress": "inner"})
    return {"messages": [AIMessage("done", id="done")]}


child_builder = StateGraph(MessagesState)
child_builder.add_node("inner", inner)
child_builder.add_edge(START, "inner")
child_builder.add_edge("inner", END)

builder = StateGraph(MessagesState)
builder.add_node("agent", agent)
builder.add_node("tools", ToolNode([lookup]))
builder.add_node("child", child_builder.compile())
builder.add_edge(START, "agent")
builder.add_conditional_edges("agent", route, ["tools", "child"])
builder.add_edge("tools", "agent")
builder.add_edge("child", END)
graph = builder.compile()


def modes_graph() -> StateGraph[Any]:
    """The graph, uncompiled, for ``WAYSTONE_GRAPHS``."""
    return builder
