"""The pure parts of assistants: config and context kept in step, a new version from the
one in force and an update, what a search finds and in which order, and a run's options
and metadata on an assistant."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from waystone._runs.api_shapes import assistant_id as graph_assistant_id
from waystone._runtime.assistant_rules import (
    Assistant,
    Changes,
    contains,
    matches,
    of_graph,
    ordered,
    patched,
    run_metadata,
    run_options,
    synced,
)
from waystone._runtime.options import RunOptions
from waystone.errors import BadInput
from waystone.web.assistants import shape

SINCE = datetime(2026, 1, 1, tzinfo=UTC)


def made(**given: object) -> Assistant:
    base = Assistant(
        assistant_id="5f0c6a4e-8a3b-4f6c-9d55-1b2a3c4d5e6f",
        graph_id="steps",
        version=1,
        name="Pirate",
        description=None,
        config={"configurable": {"persona": "pirate"}, "recursion_limit": 5},
        context={"persona": "pirate"},
        metadata={"team": "a"},
        created_at=SINCE,
        updated_at=SINCE,
    )
    return replace(base, **given)  # type: ignore[arg-type]


def test_config_and_context_are_kept_in_step() -> None:
    assert synced({"configurable": {"a": 1}}, None) == ({"configurable": {"a": 1}}, {"a": 1})
    assert synced({}, {"b": 2}) == ({"configurable": {"b": 2}}, {"b": 2})
    assert synced({"recursion_limit": 3}, None) == ({"recursion_limit": 3}, {})
    with pytest.raises(BadInput, match="both configurable and context"):
        synced({"configurable": {"a": 1}}, {"b": 2})


def test_a_new_version_keeps_what_the_update_does_not_give() -> None:
    current = made()
    assert patched(current, Changes()) == current
    renamed = patched(current, Changes(name="Robot", metadata={"tier": 2}))
    assert renamed.name == "Robot" and renamed.metadata == {"team": "a", "tier": 2}
    assert renamed.config == current.config and renamed.context == current.context
    # a new context is the config's configurable too, as the reference keeps them
    toned = patched(current, Changes(context={"tone": "dry"}))
    assert toned.context == {"tone": "dry"}
    assert toned.config == {"configurable": {"tone": "dry"}}
    configured = patched(current, Changes(config={"configurable": {"persona": "robot"}}))
    assert configured.context == {"persona": "robot"}
    limited = patched(current, Changes(config={"recursion_limit": 2}))
    assert limited.config == {"recursion_limit": 2} and limited.context == current.context
    assert patched(current, Changes(config={})).config == current.config  # empty: kept


def test_a_search_finds_by_graph_name_and_metadata() -> None:
    found = made(metadata={"team": "a", "deep": {"x": 1, "y": 2}})
    assert matches(found, None, None, {})
    assert matches(found, "steps", "pira", {"team": "a"})
    assert matches(found, None, "PIRATE", {"deep": {"x": 1}})  # any case; nested held
    assert not matches(found, "other", None, {})
    assert not matches(found, None, "robot", {})
    assert not matches(found, None, None, {"team": "b"})
    assert not matches(found, None, None, {"deep": {"z": 1}})
    assert contains({"a": [1, 2]}, {"a": [1, 2]}) and not contains({"a": [1, 2]}, {"a": [1]})


def test_a_search_orders_as_the_reference() -> None:
    old = made(assistant_id="a", name="beta", created_at=SINCE)
    new = made(assistant_id="b", name="Alpha", created_at=SINCE + timedelta(1))
    assert ordered([old, new], "created_at", descending=True) == [new, old]
    assert ordered([old, new], "name", descending=False) == [new, old]  # whatever the case
    with pytest.raises(BadInput, match="sort_by must be one of"):
        ordered([old], "version", descending=True)


def test_a_graphs_own_assistant() -> None:
    own = of_graph("steps", SINCE)
    assert own.system and own.assistant_id == graph_assistant_id("steps")
    assert shape(own)["metadata"] == {"created_by": "system"}
    assert set(shape(own)) - set(shape(own, version=True)) == {"updated_at"}


def test_a_run_on_a_users_assistant_starts_from_its_config() -> None:
    found = made(context={"tone": "dry"}, config={"configurable": {"persona": "pirate"}})
    merged = run_options(found, None)
    assert merged is not None
    assert merged.configurable == {"persona": "pirate"} and merged.context == {"tone": "dry"}
    assert merged.metadata == {"assistant_id": found.assistant_id}
    given = RunOptions(
        metadata={"k": 1, "assistant_id": "someone-else"},
        configurable={"persona": "ninja", "x": 1},
        recursion_limit=9,
        context={"lang": "en"},
    )
    mine = run_options(made(), given)
    assert mine is not None
    assert mine.configurable == {"persona": "ninja", "x": 1}  # the run's over its own
    assert mine.recursion_limit == 9 and mine.context == {"persona": "pirate", "lang": "en"}
    assert mine.metadata == {"k": 1, "assistant_id": made().assistant_id}
    kept_limit = run_options(made(), RunOptions(metadata={"k": 1}))
    assert kept_limit is not None and kept_limit.recursion_limit == 5


def test_a_run_on_a_graphs_own_assistant_is_as_it_was_asked() -> None:
    own = of_graph("steps", SINCE)
    assert run_options(own, None) is None  # nothing kept for a plain run
    given = RunOptions(configurable={"persona": "ninja"})
    assert run_options(own, given) == given
    claimed = run_options(own, RunOptions(metadata={"assistant_id": "other"}))
    assert claimed is not None and claimed.metadata == {"assistant_id": own.assistant_id}
    assert run_metadata({"k": 1}, own.assistant_id, "steps") == {"k": 1}
    assert run_metadata(None, "x", "steps") == {"assistant_id": "x"}
