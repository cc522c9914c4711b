"""Metadata filters work under encryption at rest: every metadata key but the structural
ones is sealed in Postgres, where no filter can match it, so the saver matches those keys
once it has opened them (as JSONB containment would), and still honours the limit."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg.rows import dict_row

from tests.support.inside import parts
from waystone import Runtime
from waystone._checkpointing.saver import make_saver
from waystone._privacy.keys import parse_key
from waystone._privacy.seal import Sealer


def test_filters_match_sealed_metadata(runtime: Runtime, sql: psycopg.Connection[Any]) -> None:
    saver = make_saver(parts(runtime).db, sealer=Sealer(parse_key("5e" * 32)))
    thread = "sealed-filters"
    parent: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    for step, owner in enumerate(["ana", "bo", "ana", "bo", "ana"]):
        meta: Any = {"source": "loop", "step": step, "parents": {}, "owner": owner}
        meta["tags"] = ["x", owner]
        parent = saver.put(parent, empty_checkpoint(), meta, {})

    stored = sql.execute(
        "SELECT metadata->>'owner', metadata->>'step' FROM checkpoints WHERE thread_id = %s",
        (thread,),
    ).fetchall()
    assert len(stored) == 5
    assert all(owner not in ("ana", "bo") for owner, _ in stored)  # sealed
    assert sorted(int(step) for _, step in stored) == [0, 1, 2, 3, 4]  # structural: readable

    config: Any = {"configurable": {"thread_id": thread}}

    def steps(**how: Any) -> list[int]:
        return [c.metadata["step"] for c in saver.list(config, **how)]

    assert steps(filter={"owner": "ana"}) == [4, 2, 0]
    assert steps(filter={"owner": "bo", "source": "loop"}) == [3, 1]
    assert steps(filter={"owner": "ana", "step": 2}) == [2]
    assert steps(filter={"owner": "ana"}, limit=2) == [4, 2]
    assert steps(filter={"tags": ["bo"]}) == [3, 1]  # arrays: by their elements
    assert steps(filter={"owner": "nobody"}) == []
    assert steps(limit=3) == [4, 3, 2]


@pytest.mark.parametrize("sealed", [False, True], ids=["redacting", "redacting+sealing"])
def test_metadata_loses_its_nul_characters_as_with_the_stock_saver(
    runtime: Runtime, sql: psycopg.Connection[Any], database_url: str, sealed: bool
) -> None:
    """LangGraph strips NUL from metadata's strings as it writes them; sealed, a value
    would keep them, and a NUL inside an email would hide it from redaction."""
    meta: Any = {"source": "loop", "step": 1, "parents": {}, "note": "a\x00b\x00"}
    meta["who"] = "ana@exa\x00mple.com"
    sealer = Sealer(parse_key("5e" * 32)) if sealed else None
    ours = make_saver(parts(runtime).db, redact=parts(runtime).vault.redact, sealer=sealer)
    with psycopg.connect(
        database_url, autocommit=True, prepare_threshold=0, row_factory=dict_row
    ) as conn:
        stock = PostgresSaver(conn)
        expected = _metadata(stock, "stock", meta)
        got = _metadata(ours, "ours", meta)
    assert expected["note"] == "ab"
    assert got["note"] == expected["note"]
    assert expected["who"] == "ana@example.com"
    assert got["who"] == parts(runtime).vault.token_for("email", "ana@example.com")
    stored = sql.execute("SELECT metadata::text FROM checkpoints WHERE thread_id = 'ours'")
    assert "ana@example.com" not in str(stored.fetchall())


def _metadata(saver: Any, thread: str, meta: dict[str, Any]) -> dict[str, Any]:
    config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    saved = saver.put(config, empty_checkpoint(), dict(meta), {})
    found = saver.get_tuple(saved)
    assert found is not None
    return dict(found.metadata)
