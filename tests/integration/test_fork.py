"""A run forked into a new thread replays without a second effect at the provider."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from tests.conftest import REFUND_INPUT
from waystone import BadInput, Runtime
from waystone.examples.provider import ProviderProcess


def _done_run(runtime: Runtime) -> str:
    thread_id = runtime.start("refund", REFUND_INPUT).thread_id
    runtime.run(thread_id)
    runtime.approve(thread_id, by="ana")
    assert runtime.run(thread_id).state == "done"
    return thread_id


@pytest.mark.parametrize("point", ["execute", "propose", "latest"])
def test_fork_replays_without_a_second_effect(
    point: str, runtime: Runtime, provider: ProviderProcess, sql: psycopg.Connection[Any]
) -> None:
    original = _done_run(runtime)
    checkpoints = runtime.history(original)["checkpoints"]
    at = (
        None
        if point == "latest"
        else next(cp["checkpoint_id"] for cp in checkpoints if cp["next"] == [point])
    )
    fork = runtime.fork(original, at=at, by="experimenter")
    assert fork.state == "queued" and fork.thread_id != original
    final = runtime.run(fork.thread_id)
    if final.state == "waiting":  # forked before the approval was given: a person decides
        runtime.approve(fork.thread_id, by="ana")
        final = runtime.run(fork.thread_id)
    assert final.state == "done", final.reason
    ledger = provider.ledger()
    assert len(ledger["refunds"]) == 1 and len(ledger["notifications"]) == 1
    rows = sql.execute("SELECT thread_id FROM waystone.effects").fetchall()
    assert {r[0] for r in rows} == {original}  # the fork reused the original's effects
    forked_from = sql.execute(
        "SELECT forked_from FROM waystone.runs WHERE thread_id = %s", (fork.thread_id,)
    ).fetchone()
    assert forked_from == (original,)


def test_fork_at_an_unknown_checkpoint_is_bad_input(
    runtime: Runtime, provider: ProviderProcess
) -> None:
    original = _done_run(runtime)
    with pytest.raises(BadInput, match="no checkpoint"):
        runtime.fork(original, at="nope")
