"""The pure decisions behind a run made on a busy thread (``multitask_strategy``)."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.types import StateSnapshot

from waystone._runtime.multitask import plan, stopped_as
from waystone._runtime.rollback import branches, checkpoint_after
from waystone.errors import BadInput


@pytest.mark.parametrize("strategy", ["reject", "enqueue", "interrupt", "rollback"])
@pytest.mark.parametrize("state", [None, "done", "failed"])
def test_a_thread_whose_run_ended_begins_the_new_run(strategy: str, state: str | None) -> None:
    assert plan(strategy, state, None) == "begin"


@pytest.mark.parametrize("state", ["queued", "running", "needs-human"])
def test_an_active_run_is_refused_queued_interrupted_or_rolled_back(state: str) -> None:
    assert plan("reject", state, None) == "refuse"
    assert plan("enqueue", state, None) == "enqueue"
    assert plan("interrupt", state, None) == "interrupt"
    assert plan("rollback", state, None) == "rollback"


@pytest.mark.parametrize("strategy", ["reject", "enqueue", "interrupt", "rollback"])
def test_a_run_waiting_on_an_interrupt_is_superseded_whatever_the_strategy(strategy: str) -> None:
    assert plan(strategy, "waiting", "resume") == "supersede"


def test_a_run_waiting_on_a_signal_or_an_approval_is_active() -> None:
    assert plan("reject", "waiting", "approval") == "refuse"
    assert plan("enqueue", "waiting", "refund.settled") == "enqueue"


def test_an_unknown_strategy_is_bad_input() -> None:
    with pytest.raises(BadInput, match="one of reject, enqueue, interrupt, rollback"):
        plan("later", "running", None)


def test_how_a_run_was_stopped_is_read_from_its_evidence() -> None:
    assert stopped_as({"multitask": "rollback", "cancelled": True}) == "rollback"
    assert stopped_as({"cancelled": True}) is None


def snap(
    checkpoint_id: str, parent: str | None, restored: bool = False, run: str = "r-1"
) -> StateSnapshot:
    def config(at: str) -> Any:
        return {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": at}}

    metadata = {"waystone_restored": parent} if restored else {"waystone_run": run}
    return StateSnapshot(
        values={},
        next=(),
        config=config(checkpoint_id),
        metadata=metadata,  # type: ignore[arg-type]
        created_at=None,
        parent_config=config(parent) if parent else None,
        tasks=(),
        interrupts=(),
    )


def test_the_history_leaves_out_what_a_rollback_left_behind_and_keeps_branches() -> None:
    # 1 <- 2 <- 3 (the rolled-back run's) and 2 <- 4 (2 restored) <- 5 (the next run's);
    # 1 <- 6: a run from checkpoint 1 (a branch, kept as the reference keeps it)
    history = [
        snap("6", "1", run="r-4"),
        snap("5", "4", run="r-3"),
        snap("4", "2", restored=True),
        snap("3", "2", run="r-2"),
        snap("2", "1"),
        snap("1", None),
    ]
    kept = [s.config["configurable"]["checkpoint_id"] for s in branches(history, {"r-2"})]
    assert kept == ["6", "5", "2", "1"]
    assert branches([], {"r-2"}) == []


def test_a_new_checkpoint_id_sorts_after_the_newest() -> None:
    assert checkpoint_after(None) > "1f0"
    ahead = "ffffffff-ffff-6fff-8fff-fffffffffff0"  # a writer whose clock is far ahead
    assert checkpoint_after(ahead) == "ffffffff-ffff-6fff-8fff-fffffffffff1"
    now = checkpoint_after(None)
    assert checkpoint_after(now) > now
