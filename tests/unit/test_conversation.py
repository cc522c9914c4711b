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


def test_a_users_own_message_dicts_never_fail_the_page() -> None:
    rows = shown_messages(
        [
            {"role": "user", "content": {1: "a", "b": 2}},
            {"role": "assistant", "content": "", "tool_calls": "book"},
            {"role": "assistant", "content": "", "tool_calls": [{"args": {1: "x", "y": 2}}]},
            {"type": "ai", "content": "", "tool_calls": [None]},
        ]
    )

    assert rows[0] == {"type": "user", "text": '{"1": "a", "b": 2}', "tool_calls": []}
    assert rows[1] == {"type": "assistant", "text": "", "tool_calls": []}
    assert rows[2]["tool_calls"] == [{"name": "", "args": '{"1": "x", "y": 2}', "id": ""}]
    assert rows[3]["type"] == "ai" and rows[3]["tool_calls"] == [
        {"name": "", "args": "{}", "id": ""}
    ]


class _Unreadable(dict[str, str]):
    """A message whose fields cannot be read: the page shows its JSON text."""

    def get(self, *args: object, **kwargs: object) -> str:
        raise RuntimeError("unreadable")


def test_a_message_that_cannot_be_read_is_shown_as_its_json() -> None:
    rows = shown_messages([_Unreadable(role="user"), {"role": "user", "content": "hi"}])

    assert rows == [
        {"type": "message", "text": '{"role": "user"}', "tool_calls": []},
        {"type": "user", "text": "hi", "tool_calls": []},
    ]
