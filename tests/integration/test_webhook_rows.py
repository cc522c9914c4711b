"""The webhooks' outbox on a real Postgres: a webhook armed after its run already stopped
is due at once, with what the stop's trigger would have recorded; one armed before is
made due by the stop, in its transaction; a resume's webhook waits for the next stop; the
URL is stored sealed like a run's input; a claim is one worker's until its lease lapses."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from tests.support.chat import say
from tests.support.graphs import assist_graph
from waystone import Runtime
from waystone.config import Settings
from waystone.errors import TransitionNotAllowed

URL = "http://127.0.0.1:9/hook?token=ana@example.com"


def test_webhooks_become_due_when_their_run_stops(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    with Runtime(Settings(database_url=database_url), graphs={"assist": assist_graph}) as rt:
        ended = rt.invoke("assist", say("hi"), thread_id="t-ended")
        assert ended.run_number is not None
        late = rt.webhooks.arm("t-ended", ended.run_number, URL, resuming=False)

        started = rt.start("assist", say("refund?"), thread_id="t-asks")
        assert started.run_number is not None
        early = rt.webhooks.arm("t-asks", started.run_number, URL, resuming=False)
        assert _row(sql, early)["status"] == "armed"
        assert rt.run("t-asks").state == "waiting"
        answer = rt.webhooks.arm("t-asks", started.run_number, URL, resuming=True)
        with pytest.raises(TransitionNotAllowed):
            rt.webhooks.arm("t-ended", ended.run_number, URL, resuming=True)

        for hook, state in ((late, "done"), (early, "waiting")):
            row = _row(sql, hook)
            assert (row["status"], row["run_state"]) == ("due", state)
            assert row["checkpoint_id"] is not None and row["due_at"] is not None
        assert _row(sql, answer)["status"] == "armed"  # until the run stops again
        assert "ana@example.com" not in str(_row(sql, late)["url"])

        first = rt.webhooks.claim("worker-1", lease_s=60)
        second = rt.webhooks.claim("worker-2", lease_s=60)
        third = rt.webhooks.claim("worker-3", lease_s=60)
        assert first is not None and second is not None and third is None
        assert {first.id, second.id} == {late, early} and first.url == URL


def _row(sql: psycopg.Connection[Any], hook: int) -> dict[str, Any]:
    with sql.cursor(row_factory=psycopg.rows.dict_row) as cur:
        found = cur.execute("SELECT * FROM waystone.webhooks WHERE id = %s", (hook,)).fetchone()
    assert found is not None
    return found
