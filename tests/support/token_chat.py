"""A chat graph whose fake model streams its answer token by token, for the Agent Chat UI
test; ``langgraph dev`` serves the same module (``tests.support.token_chat:graph``).

The model says ``Answer <n> to <text>: one two three four five`` a word at a time, with a
short pause between words; before its last word (or, not streamed, before it answers at
all) it waits until the gate file named after ``<text>`` exists in ``WAYSTONE_TEST_GATES``
(the test opens it once it has seen the partial answer). ``<n>`` counts the answers given
to ``<text>`` (a file beside the gate), so a regenerated answer differs from the first. A
message holding "approve" first asks a person, with the interrupt the UI's own review view
shows (its HITL request shape)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, AnyMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt

WORDS = "one two three four five"
PAUSE_S = 0.15  # between two tokens: a person sees the answer grow
GATE_LIMIT_S = 120.0  # a gate never opened lets the answer end after this long


def gate_name(text: str) -> str:
    """The gate file's name for a message's text."""
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-") or "empty"


def _gates() -> Path:
    return Path(os.environ["WAYSTONE_TEST_GATES"])


def text_of(message: BaseMessage) -> str:
    """A message's text, whether its content is a string or content blocks (the UI's)."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(
        str(part.get("text", "")) for part in content if isinstance(part, dict)
    ) or "".join(part for part in content if isinstance(part, str))


def _wait(gate: Path) -> None:
    deadline = time.monotonic() + GATE_LIMIT_S
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


class TokenModel(BaseChatModel):
    """Answers the last message, a word at a time when streamed (see the module's doc)."""

    @property
    def _llm_type(self) -> str:
        return "token-chat-fake"

    def _answer(self, messages: list[BaseMessage]) -> tuple[str, Path]:
        text = text_of(messages[-1])
        gate = _gates() / gate_name(text)
        counter = gate.with_name(gate.name + ".answers")
        n = len(counter.read_text().splitlines()) + 1 if counter.exists() else 1
        with counter.open("a") as out:
            out.write("answer\n")
        return f"Answer {n} to {text}: {WORDS}", gate

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        answer, gate = self._answer(messages)
        _wait(gate)  # not streamed: the whole answer, once the gate is open
        return ChatResult(generations=[ChatGeneration(message=AIMessage(answer))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        answer, gate = self._answer(messages)
        tokens = re.split(r"(?<= )", answer)
        for i, token in enumerate(tokens):
            if i == len(tokens) - 1:
                _wait(gate)
            elif i:
                time.sleep(PAUSE_S)
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=token))
            if run_manager:
                run_manager.on_llm_new_token(token, chunk=chunk)
            yield chunk


def _review(text: str) -> dict[str, Any]:
    """The interrupt's value: one action for a person to approve or reject."""
    return {
        "action_requests": [
            {"name": "send_reply", "args": {"text": text}, "description": "Send it?"}
        ],
        "review_configs": [
            {"action_name": "send_reply", "allowed_decisions": ["approve", "reject"]}
        ],
    }


def _reply(state: MessagesState) -> dict[str, list[AnyMessage]]:
    messages = list(state["messages"])
    text = text_of(messages[-1])
    if "approve" in text:
        answer = interrupt(_review(text))
        [decision] = answer["decisions"]
        messages.append(AIMessage(f"{decision['type']}d {text}"))
    return {"messages": [TokenModel().invoke(messages)]}


def chat_graph() -> StateGraph[Any]:
    """One node, ``reply``: the model's answer to the last message."""
    builder: StateGraph[Any] = StateGraph(MessagesState)
    builder.add_node("reply", _reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder


graph = chat_graph()
