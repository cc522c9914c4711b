"""Runs that begin from a checkpoint of their thread (``checkpoint`` / ``checkpoint_id``),
as a chat UI regenerates an answer and edits a message, through the official client
against a real ``waystone api`` and ``waystone worker``: the thread goes on from there,
an effect made before the fork point is never made again (the provider's own records
say so), and one made after it in the old branch is the fork's to make anew."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langgraph_sdk.client import SyncLangGraphClient

from tests.acceptance.conftest import Workers
from tests.support.api import ApiSetup
from tests.support.chat import say, texts
from waystone.examples.provider import ProviderProcess

pytestmark = pytest.mark.slow


GRAPHS = {"WAYSTONE_GRAPHS": "paid=tests.support.option_graphs:paid_chat"}


@pytest.fixture
def api_setup(request: pytest.FixtureRequest) -> ApiSetup:
    # the crash test starts its own workers, one at a time
    own = request.node.name.startswith("test_a_worker_killed")
    return ApiSetup(GRAPHS, worker=None if own else ())


def notes(provider: ProviderProcess) -> list[str]:
    return [n["body"] for n in provider.ledger()["notifications"]]


def checkpoint_before(lg: SyncLangGraphClient, tid: str, node: str, turn: str) -> str:
    """The checkpoint where ``node`` is next, in the turn whose question is ``turn``."""
    for state in lg.threads.get_history(tid, limit=50):
        asked = [m["content"] for m in state["values"].get("messages", []) if m["type"] == "human"]
        if state["next"] == [node] and asked and asked[-1] == turn:
            return str(state["checkpoint"]["checkpoint_id"])
    raise AssertionError(f"no checkpoint before {node} in the turn {turn!r}")


def test_regenerate_an_answer_and_edit_a_message(
    lg: SyncLangGraphClient, provider: ProviderProcess
) -> None:
    tid = lg.threads.create()["thread_id"]
    lg.runs.wait(tid, "paid", input=say("hi"))
    first = lg.threads.get_state(tid)["values"]["messages"]
    assert notes(provider) == ["asked: hi"]

    # regenerate: no input, from the checkpoint before the answer
    at = checkpoint_before(lg, tid, "answer", "hi")
    again = lg.runs.wait(tid, "paid", input=None, checkpoint_id=at)
    assert texts(again) == ["hi", "echo hi"]
    assert again["messages"][1]["id"] != first[1]["id"]  # a new answer, in place of the old
    assert notes(provider) == ["asked: hi"]  # made before the fork point: not again

    # a second turn, then its question edited: from the checkpoint the turn began on
    lg.runs.wait(tid, "paid", input=say("how"))
    turn_start = next(
        s["checkpoint"]["checkpoint_id"]
        for s in lg.threads.get_history(tid, limit=50)
        if texts(s["values"]) == ["hi", "echo hi"] and s["next"] == []
    )
    edited = lg.runs.wait(tid, "paid", input=say("what"), checkpoint={"checkpoint_id": turn_start})
    assert texts(edited) == ["hi", "echo hi", "what", "echo what"]
    assert texts(lg.threads.get_state(tid)["values"]) == texts(edited)
    history = lg.threads.get_history(tid, limit=50)
    assert texts(history[0]["values"]) == texts(edited)  # the newest: the branch's
    # every branch is listed, as the reference lists it: the edited turn's too
    assert any(texts(s["values"]) == ["hi", "echo hi", "how", "echo how"] for s in history)
    assert notes(provider) == ["asked: hi", "asked: how", "asked: what"]
    assert len(lg.runs.list(tid)) == 4


def test_an_effect_after_the_fork_point_is_the_fork_s_own(
    lg: SyncLangGraphClient, provider: ProviderProcess
) -> None:
    tid = lg.threads.create()["thread_id"]
    lg.runs.wait(tid, "paid", input=say("hi"))
    at = checkpoint_before(lg, tid, "pay", "hi")
    lg.runs.wait(tid, "paid", input=None, checkpoint_id=at)
    sent = provider.ledger()["notifications"]
    # the fork made its own call (another key): not the old branch's receipt reused
    assert [n["body"] for n in sent] == ["asked: hi", "asked: hi"]
    assert sent[0]["client_ref"] != sent[1]["client_ref"]
    receipts = lg.threads.get_state(tid)["values"]["receipts"]
    assert [r["client_ref"] for r in receipts] == [sent[1]["client_ref"]]


def test_a_checkpoint_the_thread_has_not_is_refused(lg: SyncLangGraphClient) -> None:
    tid = lg.threads.create()["thread_id"]
    lg.runs.wait(tid, "paid", input=say("hi"))
    asks: dict[str, tuple[int, dict[str, Any]]] = {
        "unknown": (400, {"checkpoint_id": "1f0a0000-0000-6000-8000-000000000000"}),
        "a subgraph's": (422, {"checkpoint": {"checkpoint_id": "x", "checkpoint_ns": "a:b"}}),
        "async durability": (422, {"durability": "async"}),
        "exit durability": (422, {"durability": "exit"}),
    }
    for what, (code, extra) in asks.items():
        with pytest.raises(httpx.HTTPStatusError) as refused:
            lg.runs.create(tid, "paid", input=None, **extra)
        assert refused.value.response.status_code == code, what
    assert len(lg.runs.list(tid)) == 1
    assert lg.runs.wait(tid, "paid", input=say("ok"), durability="sync")["messages"]


def test_a_worker_killed_in_a_fork_leaves_its_effect_made_once(
    lg: SyncLangGraphClient, provider: ProviderProcess, workers: Workers
) -> None:
    """The fork's effect is applied, then its worker is SIGKILLed before the receipt is
    recorded: the worker that takes the run over goes on along the fork's branch (not a
    second branch from the checkpoint), finds the effect by its key, and sends nothing
    again."""
    quick = {**GRAPHS, "WAYSTONE_LEASE_SECONDS": "2"}
    workers.spawn(env=quick)
    tid = lg.threads.create()["thread_id"]
    lg.runs.wait(tid, "paid", input=say("hi"))
    workers.stop_all()
    at = checkpoint_before(lg, tid, "pay", "hi")
    fork = lg.runs.create(tid, "paid", input=None, checkpoint_id=at)
    killed = workers.spawn(env={**quick, "WAYSTONE_CRASH_AT": "execute:after-apply@notify"})
    assert killed.wait(timeout=120) == -9, workers.output(killed)
    assert notes(provider) == ["asked: hi", "asked: hi"]  # the fork's, applied
    workers.spawn(env=quick)
    done = lg.runs.join(tid, fork["run_id"])
    assert texts(done) == ["hi", "echo hi"]
    assert notes(provider) == ["asked: hi", "asked: hi"]  # not a third time
    assert lg.runs.get(tid, fork["run_id"])["status"] == "success"
