"""One round trip per step: a fenced run's pulled-task writes are committed with the next
checkpoint, and nothing is lost on the way (every step's writes are in Postgres at the end,
a reader in the process sees held writes, and writes that must outlive a failed or paused
step are never held)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import psycopg
from langgraph.checkpoint.base import empty_checkpoint

from tests.support.inside import parts
from tests.support.notes import claimed, registered
from waystone import AgentSpec, Check, CheckResult, Runtime
from waystone._checkpointing.saver import WaystoneSaver
from waystone._db.database import jsonify
from waystone._runs.registry import Run
from waystone.effects._ledger import Effect, Note
from waystone.preset._graph.state import REDUCED, AgentState
from waystone.sql import query


def _saver(runtime: Runtime, agent: str) -> WaystoneSaver:
    saver = runtime.graph(agent).checkpointer
    assert isinstance(saver, WaystoneSaver)
    return saver


def _fenced(run: Run) -> Any:
    """The config of a save made under the run's lease."""
    return {
        "configurable": {
            "thread_id": run.thread_id,
            "checkpoint_ns": "",
            "lease_token": run.lease_token,
        }
    }


def test_every_step_of_a_run_keeps_its_writes(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    spec = registered(runtime, 2)
    thread_id = runtime.start(spec.name, {}).thread_id
    assert runtime.run(thread_id).state == "done"

    rows = sql.execute(
        "SELECT c.checkpoint_id, count(w.*) AS writes FROM checkpoints c "
        "LEFT JOIN checkpoint_writes w USING (thread_id, checkpoint_ns, checkpoint_id) "
        "WHERE c.thread_id = %s GROUP BY c.checkpoint_id ORDER BY c.checkpoint_id",
        (thread_id,),
    ).fetchall()
    # every checkpoint but the last had a task run from it, whose writes are stored
    assert len(rows) > 10
    assert all(writes > 0 for _, writes in rows[:-1]), rows
    assert rows[-1][1] == 0
    assert not _saver(runtime, spec.name)._held  # nothing left in memory
    history = list(runtime.graph(spec.name).get_state_history(runtime.config(thread_id)))
    assert [h.metadata["step"] for h in history if h.metadata] == list(
        range(len(history) - 2, -2, -1)
    )


def test_held_writes_are_seen_by_a_reader_and_then_stored(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    run = claimed(runtime)
    thread_id = run.thread_id
    saver = _saver(runtime, run.agent)
    fenced = _fenced(run)
    checkpoint = empty_checkpoint()
    saved = saver.put(fenced, checkpoint, {"source": "input", "step": -1, "parents": {}}, {})
    config: Any = {"configurable": {**saved["configurable"], "lease_token": run.lease_token}}
    saver.put_writes(config, [("evidence", [{"step": "x"}])], "task-x", "~__pregel_pull, x")
    assert saver._held  # held for the next save
    stored = "SELECT count(*) FROM checkpoint_writes WHERE thread_id = %s AND task_id = 'task-x'"
    assert sql.execute(stored, (thread_id,)).fetchone() == (0,)

    seen = saver.get_tuple(config)  # a reader flushes first
    assert seen is not None
    assert [task for task, _, _ in seen.pending_writes or []] == ["task-x"]
    assert sql.execute(stored, (thread_id,)).fetchone() == (1,)
    assert not saver._held


def test_errors_interrupts_and_sends_are_never_held(runtime: Runtime) -> None:
    spec = registered(runtime)
    saver = _saver(runtime, spec.name)
    fenced = {"lease_token": 1}
    pull = "~__pregel_pull, propose"
    assert saver._may_hold(fenced, [("evidence", [])], pull)
    assert not saver._may_hold({}, [("evidence", [])], pull)  # not a Waystone run
    assert not saver._may_hold(fenced, [("__error__", "boom")], pull)
    assert not saver._may_hold(fenced, [("__interrupt__", [])], pull)
    assert not saver._may_hold(fenced, [("__resume__", "yes")], pull)
    push = "~__pregel_push, 0000000000"
    assert not saver._may_hold(fenced, [("checks", [])], push)  # a Send with siblings
    assert saver._may_hold(fenced, [("checks", [])], push, lone=True)  # its step's only task
    assert not saver._may_hold(fenced, [("__error__", "boom")], push, lone=True)


def test_a_lone_checks_writes_commit_with_the_next_checkpoint(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    """An agent with one check runs it as its step's only task: the check's writes are
    held and committed in the next checkpoint's transaction (rows a transaction writes
    carry its id, ``xmin``); with two checks, each check's writes commit on their own."""
    one = registered(runtime, 2)
    assert len(one.checks) == 1
    ok = Check("also", lambda _input, _completed: CheckResult(True, "fine"))
    two = replace(one, name="two-checks", checks=[*one.checks, ok])
    runtime.register(two)

    def with_child(spec: AgentSpec) -> list[bool]:
        thread_id = runtime.start(spec.name, {}).thread_id
        assert runtime.run(thread_id).state == "done"
        rows = sql.execute(
            "SELECT w.xmin::text = c.xmin::text FROM checkpoint_writes w JOIN checkpoints c "
            "ON c.thread_id = w.thread_id AND c.checkpoint_ns = w.checkpoint_ns "
            "AND c.parent_checkpoint_id = w.checkpoint_id "
            "WHERE w.thread_id = %s AND w.channel = 'checks'",
            (thread_id,),
        ).fetchall()
        return [same for (same,) in rows]

    assert with_child(one) == [True, True]  # one check per action, in its child's commit
    assert with_child(two) == [False] * 4  # two per action, each committed on its own


def test_a_new_runs_input_checkpoints_wait_for_its_first_node(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    run = claimed(runtime)
    thread_id = run.thread_id
    saver = _saver(runtime, run.agent)
    fenced = _fenced(run)
    stored = "SELECT count(*) FROM checkpoints WHERE thread_id = %s"
    writes = "SELECT count(*) FROM checkpoint_writes WHERE thread_id = %s"

    def save(parent: Any, step: int) -> Any:
        checkpoint = empty_checkpoint()
        meta: Any = {"source": "input" if step < 0 else "loop", "step": step, "parents": {}}
        saved = saver.put(parent, checkpoint, meta, {})
        config: Any = {"configurable": {**saved["configurable"], "lease_token": run.lease_token}}
        task = f"task{step}"
        saver.put_writes(config, [("evidence", [{"step": step}])], task, f"~__pregel_pull, {task}")
        return config

    with saver.empty(thread_id):
        after_input = save(fenced, -1)
        after_start = save(after_input, 0)
        assert sql.execute(stored, (thread_id,)).fetchone() == (0,)  # both held
        assert sql.execute(writes, (thread_id,)).fetchone() == (0,)
        save(after_start, 1)  # the first node's checkpoint takes them along
        assert sql.execute(stored, (thread_id,)).fetchone() == (3,)
        assert sql.execute(writes, (thread_id,)).fetchone() == (2,)  # its own task's: held
    saver.flush(thread_id)
    assert sql.execute(writes, (thread_id,)).fetchone() == (3,)

    # outside a new run's first invoke, an input checkpoint is saved at once
    save(fenced, -1)
    assert sql.execute(stored, (thread_id,)).fetchone() == (4,)


def test_held_input_checkpoints_are_seen_by_a_reader(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    run = claimed(runtime)
    saver = _saver(runtime, run.agent)
    fenced = _fenced(run)
    with saver.empty(run.thread_id):
        saved = saver.put(fenced, empty_checkpoint(), {"source": "input", "step": -1}, {})
        assert saver.get_tuple(fenced) is not None  # the reader flushes first
        row = sql.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = %s", (run.thread_id,)
        ).fetchone()
        assert row is not None and row[0] == saved["configurable"]["checkpoint_id"]


def test_what_a_stale_lease_left_held_is_never_committed_under_the_new_one(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    # two slots of one worker process on one run: slot A's lease expired mid-step and
    # slot B took the run over; A's ledger change, held for A's next save, must not ride
    # with B's
    first = claimed(runtime, owner="slot-a")
    saver = _saver(runtime, first.agent)
    event = {
        "thread_id": first.thread_id,
        "kind": "stale-rider",
        "reason": "held under the old lease",
        "evidence": {},
        "actor": "waystone",
        "lease_token": first.lease_token,
    }
    saver.ride(first.thread_id, first.lease_token, [(query("insert_event"), jsonify(event), False)])
    sql.execute(
        "UPDATE waystone.runs SET lease_expires_at = now() - interval '1 second' "
        "WHERE thread_id = %s",
        (first.thread_id,),
    )
    second = parts(runtime).registry.claim(
        owner="slot-b", lease_seconds=30, thread_id=first.thread_id
    )
    assert second is not None and second.lease_token == first.lease_token + 1

    saver.put(_fenced(second), empty_checkpoint(), {"source": "loop", "step": 1, "parents": {}}, {})
    assert sql.execute(
        "SELECT count(*) FROM checkpoints WHERE thread_id = %s", (first.thread_id,)
    ).fetchone() == (1,)  # B's save went through
    assert sql.execute(
        "SELECT count(*) FROM waystone.run_events WHERE thread_id = %s AND kind = 'stale-rider'",
        (first.thread_id,),
    ).fetchone() == (0,)  # A's change was tried under A's token, refused and dropped
    assert not saver._held


def test_a_run_writes_only_what_changes(runtime: Runtime) -> None:
    """A node's write that would set a plain key to the value it holds is not made: no
    pending write of a run repeats its checkpoint's value (an absent key holds None), and a
    new run's state starts with its goal and input alone."""
    spec = registered(runtime, 2)
    thread_id = runtime.start(spec.name, {}).thread_id
    assert runtime.run(thread_id).state == "done"

    plain = set(AgentState.__annotations__) - REDUCED
    saved = list(_saver(runtime, spec.name).list(runtime.config(thread_id)))
    first = next(t for t in saved if t.metadata["step"] == 0)
    assert set(first.checkpoint["channel_values"]) & set(AgentState.__annotations__) == {
        "goal",
        "input",
    }
    written = 0
    for tup in saved:
        values = tup.checkpoint["channel_values"]
        for _, channel, value in tup.pending_writes or []:
            if channel in plain:
                written += 1
                assert value != values.get(channel), (tup.metadata["step"], channel, value)
    assert written >= 10  # steps, action, ordinal, decision, receipt, confirmation, ... twice


def test_a_statement_whose_rows_are_wanted_waits_for_the_next_save_with_what_follows_it(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    """Writes that may not be held (an error here; a person's decision in a run) take the
    held statements out with them, in a transaction LangGraph does not wait for. An intent
    whose row execute wants waits for the next save instead, and so does what was ridden
    after it: a receipt for the same key must not commit before the intent it updates."""
    run = claimed(runtime)
    thread_id, token = run.thread_id, run.lease_token
    saver = _saver(runtime, run.agent)
    saved = saver.put(
        _fenced(run), empty_checkpoint(), {"source": "input", "step": 1, "parents": {}}, {}
    )
    config: Any = {"configurable": {**saved["configurable"], "lease_token": token}}
    ledger = parts(runtime).ledger
    ledger.ride_intent(
        key="k-order",
        thread_id=thread_id,
        ordinal=1,
        tool="note",
        args={},
        fence=token,
    )
    intent = Effect("k-order", thread_id, 1, "note", {}, "intent", 1, None, None, None,
                    *[datetime.now(UTC)] * 2)  # fmt: skip
    note = Note(thread_id, "effect-applied", "note applied", {"key": "k-order"})
    ledger.update("k-order", "applied", receipt={"id": "r1"}, fence=token, note=note,
                  current=intent)  # fmt: skip
    saver.put_writes(config, [("__error__", RuntimeError("boom"))], "task-e", "~__pregel_pull, e")
    effect = "SELECT status, receipt FROM waystone.effects WHERE key = 'k-order'"
    assert sql.execute(effect).fetchone() is None  # both wait: the intent, then the receipt
    saver.flush(thread_id)
    assert sql.execute(effect).fetchone() == ("applied", {"id": "r1"})
    events = "SELECT count(*) FROM waystone.run_events WHERE thread_id = %s AND kind = %s"
    assert sql.execute(events, (thread_id, "effect-applied")).fetchone() == (1,)
    assert ledger.opened("k-order", token, thread_id) is not None  # handed over once
    assert ledger.opened("k-order", token, thread_id) is None
