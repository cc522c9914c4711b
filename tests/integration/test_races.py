"""Races found in review of the one-round-trip work, each pinned on a real Postgres: a run
that fails to end keeps its signals; an intent inserted by another run meanwhile is found,
not lost; a takeover never trusts "no checkpoints" from the claim's snapshot."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from tests.conftest import wait_until
from tests.support.background import Background
from tests.support.inside import parts
from tests.support.notes import claimed
from tests.support.rows import lock_waits
from waystone import Runtime
from waystone.effects._ledger import Effect
from waystone.errors import LeaseLost


def test_a_run_that_fails_to_end_keeps_its_signals(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    run = claimed(runtime)
    thread_id = run.thread_id
    sql.execute(
        "INSERT INTO waystone.signals (thread_id, name, dedupe_key, payload, actor, reserved_for)"
        " VALUES (%s, 'approval', 'i-1', '{}', 'ana', 'i-1')",
        (thread_id,),
    )
    # the token moves on, as a takeover moves it (a cancel would settle the signals itself)
    sql.execute(
        "UPDATE waystone.runs SET lease_token = lease_token + 1 WHERE thread_id = %s",
        (thread_id,),
    )

    with pytest.raises(LeaseLost):
        parts(runtime).registry.transition(
            thread_id,
            "done",
            reason="finished",
            from_states=("running",),
            lease_token=run.lease_token,
            spend_signals=True,
        )
    unspent = sql.execute(
        "SELECT count(*) FROM waystone.signals WHERE thread_id = %s AND consumed_at IS NULL",
        (thread_id,),
    ).fetchone()
    assert unspent == (1,)


def test_an_intent_inserted_meanwhile_by_another_run_is_found(
    runtime: Runtime, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    run = claimed(runtime)
    thread_id = run.thread_id
    token = run.lease_token
    other = psycopg.connect(database_url)  # another writer, mid-transaction on the same key
    other.execute("SELECT set_config('waystone.lease_token', %s, true)", (str(token),))
    other.execute(
        "INSERT INTO waystone.effects (key, thread_id, ordinal, tool, args, status, attempts) "
        "VALUES ('k-shared', %s, 1, 'note', '{}', 'intent', 1)",
        (thread_id,),
    )
    opener = Background(
        lambda: parts(runtime).ledger.open_intent(
            key="k-shared",
            thread_id=thread_id,
            ordinal=1,
            tool="note",
            args={},
            timeout_s=5.0,
            fence=token,
        )
    )
    try:
        wait_until(  # the opener waits on the other transaction's row lock
            lambda: lock_waits(sql, "%INSERT INTO waystone.effects%") == 1,
            "the intent insert to wait on the other run's",
        )
    finally:
        with other:  # commits, then closes
            pass
        opened = opener.join(timeout=30)
    assert not isinstance(opened, BaseException), opened
    effect, fresh = opened
    assert isinstance(effect, Effect) and effect.key == "k-shared"
    assert fresh is False


def test_a_takeover_reads_its_checkpoints_back(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    first = claimed(runtime, owner="a")
    thread_id = first.thread_id
    assert first.started is False  # queued, never run: none
    sql.execute(
        "UPDATE waystone.runs SET lease_expires_at = clock_timestamp() - interval '1 second' "
        "WHERE thread_id = %s",
        (thread_id,),
    )
    second = parts(runtime).registry.claim(owner="b", lease_seconds=30, thread_id=thread_id)
    assert second is not None and second.lease_token == first.lease_token + 1
    assert second.started is None  # unknown: the driver reads the checkpoints back


def _intent(conn: psycopg.Connection[Any], key: str, thread_id: str) -> None:
    conn.execute(
        "INSERT INTO waystone.effects (key, thread_id, ordinal, tool, args, status, attempts) "
        "VALUES (%s, %s, 1, 'note', '{}', 'intent', 1)",
        (key, thread_id),
    )


def test_a_fence_checked_once_per_transaction_still_refuses_a_moved_token(
    runtime: Runtime, database_url: str
) -> None:
    """A run's rows after the first in one transaction skip the check (its lock holds), but
    only for that run and token, and only until the transaction moves a token itself."""
    one, two = claimed(runtime), claimed(runtime)
    with psycopg.connect(database_url) as conn:  # one transaction, as a step's batch is
        conn.execute("SELECT set_config('waystone.lease_token', %s, true)", (str(one.lease_token),))
        _intent(conn, "k-1", one.thread_id)
        _intent(conn, "k-2", one.thread_id)  # passes: checked and locked by the first
        conn.execute(
            "UPDATE waystone.runs SET lease_token = lease_token + 1 WHERE thread_id = %s",
            (one.thread_id,),
        )
        with pytest.raises(psycopg.DatabaseError, match="lease lost"):
            _intent(conn, "k-3", one.thread_id)  # the token moved: asked again, refused
        conn.rollback()
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "UPDATE waystone.runs SET lease_token = 99 WHERE thread_id = %s", (two.thread_id,)
        )
        conn.commit()
        conn.execute("SELECT set_config('waystone.lease_token', %s, true)", (str(one.lease_token),))
        _intent(conn, "k-4", one.thread_id)
        with pytest.raises(psycopg.DatabaseError, match="lease lost"):
            _intent(conn, "k-5", two.thread_id)  # another run: checked on its own
        conn.rollback()
