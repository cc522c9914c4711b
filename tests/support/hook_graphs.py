"""The chat graph the React hooks' node tests drive, on Waystone and on ``langgraph dev``
alike (so it imports nothing of the tests or of Waystone): a fake model that streams its
answer a word at a time with a pause between words, a ``get_stream_writer()`` event, a
tool, and a question a person answers (an ``interrupt()``).

What the model answers depends on the user's last message only: ``tool ...`` calls the
``lookup`` tool first; ``... ?`` asks a person; ``slow ...`` answers at length (a run to
cancel or to join mid-answer); anything else is echoed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt

PAUSE_S = 0.05  # between two words of an answer: a client sees it grow
SLOW_WORDS = 120


@tool
def lookup(topic: str) -> str:
    """What is known about ``topic``."""
    return f"{topic} is known"


class WordModel(BaseChatModel):
    """Answers by the conversation, streaming a word at a time."""

    @property
    def _llm_type(self) -> str:
        return "word-model"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, BaseMessage]:
        del tools, kwargs
        return self

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            return AIMessage(f"the tool says {last.content}")
        text = str(last.content)
        if text.startswith("tool "):
            call = {"name": "lookup", "args": {"topic": text[5:]}, "id": "call_lookup"}
            return AIMessage("", tool_calls=[call])
        if text.startswith("slow "):
            return AIMessage(" ".join(f"word{n}" for n in range(SLOW_WORDS)))
        return AIMessage(f"echo {text} from the word model")

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        answer = self._answer(messages)
        time.sleep(PAUSE_S * str(answer.content).count(" "))  # as long as when it streams
        return ChatResult(generations=[ChatGeneration(message=answer)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        answer = self._answer(messages)
        if answer.tool_calls:
            chunk = AIMessageChunk(
                content="",
                tool_call_chunks=[
                    {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": 0}
                    for c in answer.tool_calls
                ],
            )
            yield ChatGenerationChunk(message=chunk)
            return
        words = str(answer.content).split(" ")
        for n, word in enumerate(words):
            if n:
                time.sleep(PAUSE_S)
            piece = word if n == len(words) - 1 else word + " "
            if run_manager is not None:
                run_manager.on_llm_new_token(piece)
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))


MODEL = WordModel()


def _model(state: MessagesState) -> dict[str, list[BaseMessage]]:
    last = state["messages"][-1]
    get_stream_writer()({"progress": "answering", "after": len(state["messages"])})
    if not isinstance(last, ToolMessage) and str(last.content).endswith("?"):
        answer = interrupt({"question": last.content})
        return {"messages": [AIMessage(f"a person says {answer}")]}
    return {"messages": [MODEL.invoke(state["messages"])]}


def _route(state: MessagesState) -> str:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else END


def hooks_graph() -> StateGraph[Any]:
    """model -> (tools -> model) -> end."""
    builder: StateGraph[Any] = StateGraph(MessagesState)
    builder.add_node("model", _model)
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", _route, ["tools", END])
    builder.add_edge("tools", "model")
    return builder


graph = hooks_graph().compile()  # what langgraph.json names for ``langgraph dev``
