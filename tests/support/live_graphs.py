"""A chat graph whose fake model streams its answer token by token and holds after its
first tokens until the test opens a gate (the file ``go`` in ``WAYSTONE_TEST_GATES``),
for the live streams' tests. Its node first writes a ``custom`` event."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage
from langchain_core.outputs import ChatGenerationChunk
from langgraph.config import get_stream_writer
from langgraph.graph import MessagesState, StateGraph

from tests.support.chain import chain
from tests.support.gated import GATE_LIMIT_S, gates

GRAPH = "live=tests.support.live_graphs:live_graph"  # WAYSTONE_GRAPHS for a test's processes
ANSWER = "tokens arrive one by one"
HELD_AFTER = 2  # the model holds after this many tokens until the gate opens
GATE = "go"
CUSTOM = {"status": "thinking"}
MODES = ["values", "messages-tuple", "custom"]  # what the tests' clients stream
ASKED = {"messages": [{"role": "user", "content": "hello"}]}


def tokens(parts: list[Any]) -> list[Any]:
    """The token chunks among a stream's parts (``StreamPart``)."""
    return [p for p in parts if p.event == "messages" and p.data[0]["type"] == "AIMessageChunk"]


class HeldModel(GenericFakeChatModel):
    """Streams its answer, holding after :data:`HELD_AFTER` tokens until the gate opens."""

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for k, chunk in enumerate(super()._stream(messages, stop, run_manager, **kwargs)):
            yield chunk
            if k + 1 == HELD_AFTER:
                deadline = time.monotonic() + GATE_LIMIT_S
                while not (gates() / GATE).exists() and time.monotonic() < deadline:
                    time.sleep(0.02)


def _chat(state: MessagesState) -> dict[str, list[AnyMessage]]:
    get_stream_writer()(CUSTOM)
    model = HeldModel(messages=iter([AIMessage(ANSWER)]))
    return {"messages": [model.invoke(state["messages"])]}


def live_graph() -> StateGraph[Any]:
    return chain(MessagesState, ("chat", _chat))
