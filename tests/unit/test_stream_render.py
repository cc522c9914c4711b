"""LangGraph's native stream chunks rendered as the reference server's events: every mode,
with and without subgraphs, against what ``langgraph dev`` sent for the same graph
(recorded by ``scripts/modes_diff.py --record``), and the rules one by one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk
from langgraph.types import Interrupt, Send

from tests.support.stream_shapes import MODES, rendered, shapes
from waystone._streams import render

RECORDED = Path(__file__).parent / "data" / "reference_stream_modes.json"
META = {"langgraph_node": "agent", "langgraph_step": 1}


@pytest.mark.parametrize("subgraphs", [True, False])
@pytest.mark.parametrize("mode", MODES)
def test_each_mode_renders_as_the_reference_sent_it(mode: str, subgraphs: bool) -> None:
    reference = json.loads(RECORDED.read_text())[f"{mode}|{subgraphs}"]
    made = shapes(rendered(mode, subgraphs))
    assert [name for name, _ in made] == [name for name, _ in reference]
    assert made == reference


def test_the_live_modes_need_their_native_modes_and_no_more() -> None:
    asked = ["values", "messages-tuple", "custom", "updates"]
    assert render.native_modes(asked) == ["custom", "messages"]
    assert render.native_modes(["messages", "messages-tuple"]) == ["messages"]
    assert render.native_modes(["events", "tools"]) == [render.EVENTS, "tools"]
    assert render.native_modes(["values", "updates", "debug", "checkpoints", "tasks"]) == []
    live = {"messages-tuple", "messages", "custom", "events", "tools"}
    assert live == render.LIVE_MODES


def test_a_subgraphs_chunk_is_named_by_its_namespace_or_left_out() -> None:
    ns = ("child:1", "inner:2")
    assert render.render(ns, "custom", {"a": 1}, subgraphs=True) == [
        ("custom|child:1|inner:2", {"a": 1})
    ]
    assert render.render(ns, "custom", {"a": 1}, subgraphs=False) == []
    assert render.render((), "custom", "text", subgraphs=False) == [("custom", "text")]
    event = {"event": "on_chain_start", "name": "inner", "data": {}}
    assert render.render(ns, render.EVENTS, event, subgraphs=True) == [("events", event)]


def test_a_token_is_a_message_tuple_with_its_metadata() -> None:
    [(name, (message, meta))] = render.render(
        ("child:1",), "messages", (AIMessageChunk(content="He", id="m"), META), subgraphs=True
    )
    assert name == "messages|child:1"
    assert (message["type"], message["content"], message["id"]) == ("AIMessageChunk", "He", "m")
    assert meta == META
    json.dumps([message, meta])


def test_the_legacy_mode_sends_a_message_growing_then_a_whole_one() -> None:
    legacy = render.LegacyMessages()
    said = [
        *legacy.add((AIMessageChunk(content="The", id="m"), META)),
        *legacy.add((AIMessageChunk(content=" answer", id="m"), META)),
        *legacy.add((AIMessage(content="done", id="d"), META)),
    ]
    assert [name for name, _ in said] == [
        "messages/metadata",
        "messages/partial",
        "messages/partial",
        "messages/metadata",
        "messages/complete",
    ]
    assert said[0][1] == {"m": {"metadata": META}}
    assert [said[k][1][0]["content"] for k in (1, 2, 4)] == ["The", "The answer", "done"]
    assert said[2][1][0]["type"] == "ai"  # made whole, as the reference shows a partial


def test_a_committed_message_is_its_metadata_then_complete() -> None:
    message = {"type": "ai", "content": "hi", "id": "m"}
    assert render.complete(message, META) == [
        ("messages/metadata", {"m": {"metadata": META}}),
        ("messages/complete", [message]),
    ]


def test_an_event_carries_the_graphs_own_chunks_and_hides_the_hidden() -> None:
    own = {"event": "on_chain_stream", "run_id": "r", "data": {"chunk": (("c:1",), "custom", 1)}}
    assert render.from_event(own, "r", subgraphs=True) == (("c:1",), "custom", 1)
    flat = {"event": "on_chain_stream", "run_id": "r", "data": {"chunk": ("values", {})}}
    assert render.from_event(flat, "r", subgraphs=False) == ((), "values", {})
    other = {"event": "on_chain_stream", "run_id": "node", "data": {"chunk": {}}}
    assert render.from_event(other, "r", subgraphs=False) == ((), render.EVENTS, other)
    hidden = {"event": "on_chain_start", "run_id": "x", "tags": ["langsmith:hidden"]}
    assert render.from_event(hidden, "r", subgraphs=False) is None


def test_values_hold_sends_errors_and_interrupts_as_the_reference_serializes_them() -> None:
    chunk = {
        "__interrupt__": (Interrupt(value={"q": 1}, id="i"),),
        "sent": [Send("node", {"x": 1})],
        "error": ValueError("bad"),
    }
    [(_, data)] = render.render((), "updates", chunk, subgraphs=False)
    assert data == {
        "__interrupt__": [{"value": {"q": 1}, "id": "i", "response_schema": None}],
        "sent": [{"node": "node", "args": {"x": 1}}],
        "error": {"error": "ValueError", "message": "bad"},
    }


def test_a_debug_checkpoint_names_its_checkpoints_and_a_subgraphs() -> None:
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c2"}}
    payload: dict[str, Any] = {
        "config": config,
        "parent_config": None,
        "tasks": [
            {"id": "1", "name": "child", "state": {"configurable": {"checkpoint_ns": "child:1"}}},
            {"id": "2", "name": "plain", "state": None},
        ],
    }
    chunk = {"type": "checkpoint", "step": 1, "payload": payload}
    [(_, shown)] = render.render((), "debug", chunk, subgraphs=False)
    assert shown["payload"]["checkpoint"] == {
        "checkpoint_id": "c2",
        "thread_id": "t",
        "checkpoint_ns": "",
    }
    assert shown["payload"]["parent_checkpoint"] is None
    assert shown["payload"]["tasks"] == [
        {"id": "1", "name": "child", "checkpoint": {"checkpoint_ns": "child:1"}},
        {"id": "2", "name": "plain", "state": None},
    ]
    assert "checkpoint" not in payload  # the native chunk is left as it was
    [(_, plain)] = render.render((), "checkpoints", payload, subgraphs=False)
    assert plain["tasks"][0]["state"] == {"configurable": {"checkpoint_ns": "child:1"}}


def test_a_tool_calls_start_and_end_are_tools_events() -> None:
    """``tools``, which the reference's run streams refuse, as its code would send it: the
    native payload, named ``tools``."""
    from langgraph.checkpoint.memory import InMemorySaver

    from tests.support import mode_graphs

    graph = mode_graphs.builder.compile(checkpointer=InMemorySaver())
    config: dict[str, Any] = {"configurable": {"thread_id": "tools"}}
    natives = render.native_modes(["tools"])
    made = [
        pair
        for ns, mode, chunk in graph.stream(
            {"messages": [("user", "what?")]}, config, stream_mode=natives, subgraphs=True
        )
        for pair in render.render(ns, mode, chunk, subgraphs=True)
    ]
    assert [(name, data["event"], data["tool_call_id"]) for name, data in made] == [
        ("tools", "tool-started", "call-1"),
        ("tools", "tool-finished", "call-1"),
    ]
    assert made[0][1]["input"] == {"q": "answer"}
    assert made[1][1]["output"]["content"] == "42"
    json.dumps(made)
