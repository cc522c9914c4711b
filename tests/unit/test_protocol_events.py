"""The thread protocol's events made from a run's stream, its subscriptions' filters, which
phase of a thread's run to stream next, and the stream modes of a join's query."""

from __future__ import annotations

from typing import Any

import pytest

from waystone._runs.status import RunStatus
from waystone.web.api import _queried_modes
from waystone.web.protocol import _fork
from waystone.web.protocol_events import Filter, Messages, bad_channels, event, translated
from waystone.web.replies import HttpError
from waystone.web.thread_events import _parsed, next_phase


def kinds(made: list[dict[str, Any]]) -> list[str]:
    return [e["params"]["data"].get("event", e["method"]) for e in made]


def test_a_whole_ai_message_is_told_as_the_message_lifecycle() -> None:
    made = Messages().add("c1.0m0", [], {"type": "ai", "id": "m1", "content": "hi there"})
    assert kinds(made) == [
        "message-start",
        "content-block-start",
        "content-block-delta",
        "content-block-finish",
        "message-finish",
    ]
    assert made[2]["params"]["data"]["delta"] == {"type": "text-delta", "text": "hi there"}
    assert len({e["event_id"] for e in made}) == 5


def test_a_tool_call_is_a_block_of_its_own() -> None:
    call = {"id": "c", "name": "lookup", "args": {"topic": "cats"}}
    made = Messages().add("e", [], {"type": "ai", "id": "m", "content": "", "tool_calls": [call]})
    assert kinds(made) == [
        "message-start",
        "content-block-start",
        "content-block-delta",
        "content-block-finish",
        "message-finish",
    ]
    assert made[3]["params"]["data"]["content"] == {"type": "tool_call", **call}


def test_chunks_stream_until_their_last_and_the_whole_message_is_not_told_again() -> None:
    messages = Messages()
    first = messages.add("e1", [], {"type": "AIMessageChunk", "id": "m", "content": "a "})
    second = messages.add("e2", [], {"type": "AIMessageChunk", "id": "m", "content": "b"})
    last = messages.add(
        "e3", [], {"type": "AIMessageChunk", "id": "m", "content": "", "chunk_position": "last"}
    )
    assert kinds(first) == ["message-start", "content-block-start", "content-block-delta"]
    assert kinds(second) == ["content-block-delta"]
    assert kinds(last) == ["content-block-finish", "message-finish"]
    assert last[0]["params"]["data"]["content"]["text"] == "a b"
    assert messages.add("e4", [], {"type": "ai", "id": "m", "content": "a b"}) == []


def test_a_values_event_finishes_the_messages_left_open() -> None:
    messages = Messages()
    messages.add("e1", [], {"type": "AIMessageChunk", "id": "m", "content": "a"})
    made = translated(messages, "e2", "values", {"messages": [], "__interrupt__": [{"id": "i"}]})
    assert kinds(made) == ["content-block-finish", "message-finish", "values"]
    assert made[-1]["params"]["data"] == {"messages": []}  # interrupts: input.requested


def test_only_the_models_messages_are_streamed() -> None:
    messages = Messages()
    assert messages.add("e", [], {"type": "human", "id": "h", "content": "hi"}) == []
    assert messages.add("e", [], {"type": "tool", "id": "t", "content": "x"}) == []


def test_updates_name_their_node_and_leave_interrupts_to_input_requested() -> None:
    data = {"model": {"messages": []}, "__interrupt__": [{"id": "i"}]}
    [made] = translated(Messages(), "e", "updates|child:1", data)
    assert made["params"] == {**made["params"], "namespace": ["child:1"]}
    assert made["params"]["data"] == {"node": "model", "values": {"messages": []}}
    assert translated(Messages(), "e", "debug", {}) == []


def test_a_filter_takes_its_channels_and_namespaces() -> None:
    values, root = event("1", "values", ["child:1f"], {}), event("2", "lifecycle", [], {})
    asked = event("3", "input.requested", [], {})
    named = event("4", "custom", [], {"name": "a"})
    assert Filter(frozenset({"values"})).matches(values)
    assert not Filter(frozenset({"values"})).matches(root)
    assert Filter(frozenset({"input"})).matches(asked)
    assert Filter(frozenset({"custom:a"})).matches(named)
    assert not Filter(frozenset({"custom:b"})).matches(named)
    assert Filter(frozenset({"values"}), (("child",),)).matches(values)
    assert not Filter(frozenset({"values"}), (("other",),)).matches(values)
    assert not Filter(frozenset({"values"}), ((),), depth=0).matches(values)


def test_unknown_channels_are_named() -> None:
    assert bad_channels(["values", "custom:x"]) == []
    assert bad_channels(["debug", 3]) == ["'debug'", "3"]
    assert bad_channels([]) == ["(none)"]


def status(state: str, run_id: str = "r1", interrupts: tuple[str, ...] = ()) -> RunStatus:
    return RunStatus(
        thread_id="t",
        state=state,
        step=None,
        pending_approval=None,
        agent="hooks",
        attempts=1,
        updated_at="",
        reason="",
        decision_recorded=False,
        interrupts=[{"id": i, "value": None} for i in interrupts],
        run_id=run_id,
    )


def test_the_next_phase_of_a_thread() -> None:
    assert next_phase(None, None, None, None) is None
    assert next_phase(status("queued"), None, None, None) is None
    assert next_phase(status("done"), None, None, None) == "start"  # its run from its start
    assert next_phase(status("running"), "r1", "e9", None) is None  # streamed already
    assert next_phase(status("running", "r2"), "r1", "e9", None) == "start"
    stopped = frozenset({"i1"})
    assert next_phase(status("waiting", interrupts=("i1",)), "r1", "e9", stopped) is None
    assert next_phase(status("running"), "r1", "e9", stopped) == "e9"  # answered
    assert next_phase(status("waiting", interrupts=("i2",)), "r1", "e9", stopped) == "e9"


def test_a_run_stream_event_is_read_back() -> None:
    assert _parsed('event: values\ndata: {"a": 1}\nid: c.2v\n\n') == ("values", {"a": 1}, "c.2v")
    assert _parsed('event: metadata\ndata: {"run_id": "r"}\n\n')[2] is None


def test_a_joins_stream_modes_come_repeated_or_as_one_json_array() -> None:
    assert _queried_modes(["values", "updates"]) == ["values", "updates"]
    assert _queried_modes(['["values","messages-tuple"]']) == ["values", "messages-tuple"]
    assert _queried_modes([""]) == []
    with pytest.raises(HttpError):
        _queried_modes(["[values"])


def test_a_fork_is_taken_out_of_the_config() -> None:
    given = {"configurable": {"checkpoint_id": "c1", "user": "u"}, "recursion_limit": 5}
    assert _fork(given) == ({"recursion_limit": 5, "configurable": {"user": "u"}}, "c1")
    assert _fork({"configurable": {"checkpoint_id": "c1"}}) == ({}, "c1")
    assert _fork({"configurable": {"thread_id": "t"}}) == ({}, None)  # the command's thread
    assert _fork({"recursion_limit": 5}) == ({"recursion_limit": 5}, None)
    assert _fork(None) == (None, None)
