"""A run's messages as its page shows them: an AI message's tool calls, a tool message's
call, tool and status, whether the checkpoint gives messages or their dict forms."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from waystone.web.conversation import shown_messages

CALL = {"name": "book", "args": {"nights": 2, "city": "Lyon"}, "id": "call_1"}


def test_tool_calls_and_results_are_shown() -> None:
    rows = shown_messages(
        [
            HumanMessage("a trip"),
            AIMessage(content="", tool_calls=[CALL]),
            ToolMessage("no room", tool_call_id="call_1", name="book", status="error"),
        ]
    )

    assert rows[0] == {"type": "human", "text": "a trip", "tool_calls": []}
    assert rows[1]["text"] == ""
    assert rows[1]["tool_calls"] == [
        {"name": "book", "args": '{"city": "Lyon", "nights": 2}', "id": "call_1"}
    ]
    assert rows[2]["text"] == "no room"
    assert rows[2]["result"] == {"tool_call_id": "call_1", "name": "book", "status": "error"}


def test_dict_forms_and_content_blocks() -> None:
    rows = shown_messages(
        [
            {"type": "ai", "content": [{"type": "text", "text": "hi"}], "tool_calls": [CALL]},
            {"type": "tool", "content": "ok", "tool_call_id": "call_1"},
        ]
    )

    assert rows[0]["text"] == '[{"text": "hi", "type": "text"}]'
    assert rows[0]["tool_calls"][0]["name"] == "book"
    assert rows[1]["result"] == {"tool_call_id": "call_1", "name": "", "status": "success"}
    assert shown_messages(None) == [] and shown_messages("text") == []
