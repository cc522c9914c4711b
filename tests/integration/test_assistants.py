"""Assistants on a real Postgres: updates made at once each get a version of their own;
sealed at rest under encryption, yet found by their metadata and name; an owner's are
found by that owner and the operator only."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest

from tests.support.option_graphs import two_steps
from waystone import Runtime
from waystone._runtime.assistant_rules import Changes
from waystone.config import Settings
from waystone.errors import BadInput

GRAPHS = {"steps": two_steps}


@pytest.fixture
def rt(database_url: str) -> Any:
    settings = Settings(database_url=database_url, encryption_key=bytes.fromhex("3c" * 32))
    with Runtime(settings, graphs=GRAPHS) as made:
        yield made


def test_updates_at_once_each_make_a_version(rt: Runtime) -> None:
    made = rt.assistants.create("steps", name="base")
    with ThreadPoolExecutor(4) as pool:
        changes = [Changes(metadata={f"k{n}": n}) for n in range(8)]
        list(pool.map(lambda c: rt.assistants.update(made.assistant_id, c), changes))
    versions = rt.assistants.versions(made.assistant_id)
    assert versions is not None
    assert [v.version for v in versions] == list(range(9, 0, -1))
    found = rt.assistants.get(made.assistant_id)
    assert found is not None and found.version == 9


def test_sealed_at_rest_and_found(rt: Runtime, sql: psycopg.Connection[Any]) -> None:
    made = rt.assistants.create(
        "steps",
        name="Ana's quixotic helper",
        config={"configurable": {"persona": "buccaneer"}},
        metadata={"team": "support-7"},
        owner="alice",
    )
    stored = sql.execute(
        "SELECT name::text, config::text, context::text, metadata::text "
        "FROM waystone.assistant_versions"
    ).fetchall()
    assert len(stored) == 1
    # words long enough (or with a '-') never to turn up in sealed text by chance
    planted = ("buccaneer", "support-7", "quixotic")
    assert not any(word in col for col in stored[0] for word in planted)
    assert [a.assistant_id for a in rt.assistants.search(metadata={"team": "support-7"})] == [
        made.assistant_id
    ]
    found = rt.assistants.search(name="QUIXOTIC", owner="alice")  # whatever the case
    assert [a.name for a in found] == ["Ana's quixotic helper"]
    assert rt.assistants.search(name="helper", owner="bob") == []
    assert rt.assistants.get(made.assistant_id, owner="bob") is None
    assert rt.assistants.update(made.assistant_id, Changes(name="x"), owner="bob") is None
    assert not rt.assistants.delete(made.assistant_id, owner="bob")
    assert rt.assistants.get(made.assistant_id) is not None  # the operator finds every one


def test_what_a_run_cannot_take_is_refused_before_anything_is_written(
    rt: Runtime, sql: psycopg.Connection[Any]
) -> None:
    for bad in (
        {"config": {"configurable": {"thread_id": "mine"}}},
        {"config": {"recursion_limit": 0}},
        {"config": {"configurable": {"a": 1}}, "context": {"b": 2}},
        {"assistant_id": "not-a-uuid"},
    ):
        with pytest.raises(BadInput):
            rt.assistants.create("steps", **bad)
    with pytest.raises(BadInput, match="unknown agent or graph"):
        rt.assistants.create("nope")
    assert sql.execute("SELECT count(*) FROM waystone.assistants").fetchone() == (0,)
