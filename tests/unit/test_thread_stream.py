"""A thread's stream: the modes it takes (the reference's), which run it streams when
the thread moves, and the ids it reads back from the events it sends."""

from __future__ import annotations

from typing import Any

import pytest

from waystone.runtime import RunStatus
from waystone.web.follow import sse_line
from waystone.web.replies import HttpError
from waystone.web.thread_stream import due, event_id, modes_of, wanted


def status(state: str, run_id: str | None = "r-1") -> Any:
    return RunStatus(
        thread_id="t-1",
        state=state,
        step=None,
        pending_approval=None,
        agent="chat",
        attempts=0,
        updated_at="",
        reason="",
        decision_recorded=False,
        run_id=run_id,
    )


def test_the_modes_of_a_thread_s_stream() -> None:
    assert modes_of(None) == ("run_modes",)
    assert modes_of("run_modes, lifecycle") == ("run_modes", "lifecycle")
    for wrong in ("values", "state_update"):
        with pytest.raises(HttpError) as refused:
            modes_of(wrong)
        assert refused.value.status == 422


def test_a_run_is_streamed_while_it_moves_or_once_it_has_new_checkpoints() -> None:
    assert due(status("running"), None, None) and due(status("queued"), None, "c-1.2v")
    assert not due(status("done"), "c-9", None)  # joined after it: behind the client
    assert not due(status("done"), "c-1", "c-1.2v")  # sent up to its last checkpoint
    assert due(status("done"), "c-2", "c-1.2v")  # ended between two looks
    assert not due(status("running", run_id=None), None, None)


def test_the_id_and_the_kind_of_an_event_sent() -> None:
    line = sse_line("values", {"a": 1}, "c-1.2v")
    assert event_id(line) == "c-1.2v" and event_id(sse_line("metadata", {})) is None
    assert wanted(line, ("run_modes",)) and not wanted(line, ("lifecycle",))
    assert wanted(sse_line("metadata", {"run_id": "r"}), ("lifecycle",))
