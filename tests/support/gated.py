"""A chat graph whose runs a test holds at a gate, for runs made while another is active:
``note`` makes an effect (a file, ``noted-<text>``) and answers ``noted <text>`` (or asks a
person, on a question); ``work`` waits until the file ``<text>`` exists in the gates
folder (``WAYSTONE_TEST_GATES``), then answers ``done <text>``."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import MessagesState, StateGraph
from langgraph.types import interrupt

import waystone
from tests.support.chain import chain

GRAPH = "gated=tests.support.gated:gated_graph"  # WAYSTONE_GRAPHS for a test's processes
GATE_LIMIT_S = 120.0  # a gate never opened lets its run go on after this long


def gates() -> Path:
    return Path(os.environ["WAYSTONE_TEST_GATES"])


@waystone.effect(idempotent_by_key=True, timeout_s=10)
def leave_note(text: str, key: str) -> dict[str, Any]:
    (gates() / f"noted-{text}").write_text(key)
    return {"noted": text}


def _text(state: MessagesState) -> str:
    return str(state["messages"][-1].content)


def _note(state: MessagesState) -> dict[str, list[AnyMessage]]:
    text = _text(state)
    if text.endswith("?"):
        answer = interrupt({"question": text})
        return {"messages": [AIMessage(f"a person says: {answer}")]}
    leave_note(text=text)
    return {"messages": [AIMessage(f"noted {text}")]}


def _work(state: MessagesState) -> dict[str, list[AnyMessage]]:
    asked = [m.content for m in state["messages"] if m.type == "human"][-1]
    deadline = time.monotonic() + GATE_LIMIT_S
    while not (gates() / str(asked)).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return {"messages": [AIMessage(f"done {asked}")]}


def gated_graph() -> StateGraph[Any]:
    return chain(MessagesState, ("note", _note), ("work", _work))
