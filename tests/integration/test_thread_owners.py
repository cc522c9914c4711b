"""The core's ownership rule, on a real Postgres: a thread made for an owner is found by
that owner and the operator only; for another owner every lookup, change and search acts
as if it did not exist. Deleting and updating a thread's state keep the run's evidence."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from tests.support.chat import say
from tests.support.graphs import assist_graph
from waystone import Runtime
from waystone.errors import TransitionNotAllowed, UnknownThread


@pytest.fixture
def rt_graphs() -> dict[str, Any]:
    return {"assist": assist_graph}


def test_another_owner_finds_nothing(rt: Runtime) -> None:
    made = rt.create_thread(metadata={"team": "a"}, owner="alice")
    tid = made.thread_id
    assert made.owner == "alice"
    assert rt.thread(tid, owner="alice").metadata == {"team": "a"}
    assert rt.thread(tid).owner == "alice"  # the operator finds every thread
    rt.check_owner(tid, "alice")
    rt.check_owner(tid, None)
    for ask in (
        lambda: rt.thread(tid, owner="bob"),
        lambda: rt.check_owner(tid, "bob"),
        lambda: rt.update_thread(tid, {"team": "b"}, owner="bob"),
        lambda: rt.delete_thread(tid, by="bob", owner="bob"),
        lambda: rt.copy_thread(tid, by="bob", owner="bob"),
        lambda: rt.update_state(tid, say("x"), owner="bob"),
    ):
        with pytest.raises(UnknownThread):
            ask()
    assert rt.thread(tid).metadata == {"team": "a"}
    with pytest.raises(TransitionNotAllowed):  # the id is taken, whoever asks
        rt.create_thread(tid, owner="bob", if_exists="do_nothing")


def test_searches_see_the_owners_threads(rt: Runtime) -> None:
    a = rt.create_thread(owner="alice").thread_id
    b = rt.create_thread(owner="bob").thread_id
    started = rt.start("assist", say("hi")).thread_id  # a run alone: no owner's

    def ids(owner: str | None) -> set[str]:
        return {t.thread_id for t in rt.search_threads(limit=1000, owner=owner)}

    assert ids("alice") == {a} and ids("bob") == {b}
    assert {a, b, started} <= ids(None)
    with pytest.raises(UnknownThread):
        rt.thread(started, owner="alice")


def test_delete_keeps_the_evidence(rt: Runtime, sql: psycopg.Connection[Any]) -> None:
    tid = rt.create_thread(owner="alice").thread_id
    rt.invoke("assist", say("hi"), thread_id=tid)
    rt.invoke("assist", say("refund?"), thread_id=tid)  # waits on a person
    with pytest.raises(TransitionNotAllowed):
        rt.delete_thread(tid, by="alice", owner="alice")
    with pytest.raises(TransitionNotAllowed):
        rt.update_state(tid, say("x"), owner="alice")
    rt.resume(tid, "yes")
    assert rt.run(tid).state == "done"
    rt.delete_thread(tid, by="alice", owner="alice")
    with pytest.raises(UnknownThread):
        rt.thread(tid)
    assert tid not in {t.thread_id for t in rt.search_threads(limit=1000)}
    checkpoints = sql.execute("SELECT count(*) FROM checkpoints WHERE thread_id = %s", (tid,))
    assert checkpoints.fetchone() == (0,)
    assert [r["state"] for r in rt.history(tid)["runs"]] == ["done", "done"]
    with pytest.raises(TransitionNotAllowed):  # no run begins on a deleted thread
        rt.start("assist", say("again"), thread_id=tid)


def test_state_update_is_the_next_runs_start(rt: Runtime) -> None:
    tid = rt.create_thread(owner="alice").thread_id
    rt.invoke("assist", say("hi"), thread_id=tid)
    rt.update_state(tid, {"messages": [{"role": "user", "content": "edited"}]}, owner="alice")
    values = rt.graph("assist").get_state(rt.config(tid)).values
    assert [m.content for m in values["messages"]] == ["hi", "echo hi", "edited"]
    copy = rt.copy_thread(tid, by="alice", owner="alice")
    assert copy.owner == "alice" and rt.run(copy.thread_id).state == "done"
    copied = rt.graph("assist").get_state(rt.config(copy.thread_id)).values
    assert [m.content for m in copied["messages"]] == ["hi", "echo hi", "edited"]
    again = rt.invoke("assist", say("bye"), thread_id=tid)
    assert again.state == "done"
    last = rt.graph("assist").get_state(rt.config(tid)).values
    assert [m.content for m in last["messages"]][-2:] == ["bye", "echo bye"]
    assert len(last["messages"]) == 5
