"""What an assistant is and the rules of its versions, searches and runs, as the
LangGraph server API has them: pure functions of values (:mod:`waystone._runtime.assistants`
keeps assistants in Postgres)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from waystone._runs.api_shapes import assistant_id as graph_assistant_id
from waystone._runtime.options import RunOptions
from waystone.errors import BadInput

SORTS = ("assistant_id", "graph_id", "name", "created_at", "updated_at")
UNTITLED = "Untitled"  # the reference's name for an assistant made without one


@dataclass(frozen=True)
class Assistant:
    assistant_id: str
    graph_id: str
    version: int
    name: str
    description: str | None
    config: dict[str, Any]
    context: dict[str, Any]
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime  # a version's: when it was made
    owner: str | None = None
    system: bool = False  # a graph's own, not stored

    @property
    def options(self) -> RunOptions:
        """What a run on it starts from (its metadata aside)."""
        return RunOptions(
            configurable=dict(self.config.get("configurable") or {}),
            recursion_limit=self.config.get("recursion_limit"),
            context=self.context or None,
        )


@dataclass(frozen=True)
class Changes:
    """What an update of an assistant gives; ``None``: kept as it is."""

    graph_id: str | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    name: str | None = None
    description: str | None = None


def of_graph(graph_id: str, since: datetime) -> Assistant:
    """A graph's own assistant, as the reference makes one for each graph it serves when
    it starts (``since``): its id derived from the graph's name, everyone's."""
    return Assistant(
        assistant_id=graph_assistant_id(graph_id),
        graph_id=graph_id,
        version=1,
        name=graph_id,
        description=None,
        config={},
        context={},
        metadata={"created_by": "system"},
        created_at=since,
        updated_at=since,
        system=True,
    )


def synced(
    config: dict[str, Any], context: dict[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``config`` and ``context`` kept in step as the reference keeps them: the context is
    the config's ``configurable`` (given either way); both at once is :class:`BadInput`."""
    if config.get("configurable") and context:
        raise BadInput(  # the reference's word
            "Cannot specify both configurable and context. Prefer setting context alone."
        )
    if config.get("configurable"):
        return config, dict(config["configurable"])
    if context:
        return {**config, "configurable": dict(context)}, context
    return config, context or {}


def patched(current: Assistant, changes: Changes) -> Assistant:
    """The next version of ``current``: what ``changes`` gives replaces what it had (its
    metadata's keys are added to the old ones; an empty config keeps the old one). A new
    context is the new config's ``configurable`` too, and the other way round."""
    config, context = synced(dict(changes.config or {}), changes.context)
    config = config or current.config
    if changes.context is None and not (changes.config or {}).get("configurable"):
        context = current.context
    metadata = {**current.metadata, **(changes.metadata or {})}
    return replace(
        current,
        graph_id=current.graph_id if changes.graph_id is None else changes.graph_id,
        name=current.name if changes.name is None else changes.name,
        description=current.description if changes.description is None else changes.description,
        config=config,
        context=context,
        metadata=metadata,
    )


def matches(
    found: Assistant, graph_id: str | None, name: str | None, metadata: dict[str, Any]
) -> bool:
    """Whether ``found`` is what a search asks for: its graph, a name holding ``name``
    (whatever the case), metadata holding ``metadata`` (as Postgres' ``@>``)."""
    if graph_id is not None and found.graph_id != graph_id:
        return False
    if name and name.lower() not in found.name.lower():
        return False
    return contains(found.metadata, metadata)


def contains(whole: Any, part: Any) -> bool:
    if isinstance(whole, dict) and isinstance(part, dict):
        return all(k in whole and contains(whole[k], v) for k, v in part.items())
    return bool(whole == part)


def ordered(found: Iterable[Assistant], sort_by: str, descending: bool) -> list[Assistant]:
    """``found`` in the reference's order: names and graphs whatever their case."""
    if sort_by not in SORTS:
        raise BadInput(f"sort_by must be one of {', '.join(SORTS)}, not {sort_by!r}")

    def key(a: Assistant) -> Any:
        value = getattr(a, sort_by)
        return value.lower() if sort_by in ("name", "graph_id") else value

    return sorted(found, key=key, reverse=descending)


def canonical(assistant_id: str) -> str:
    """An assistant id as stored: a UUID's usual form; :class:`BadInput` if not a UUID."""
    try:
        return str(uuid.UUID(str(assistant_id)))
    except ValueError:
        raise BadInput(f"an assistant id must be a UUID, not {assistant_id!r}") from None


def run_options(found: Assistant, given: RunOptions | None) -> RunOptions | None:
    """A new run's options on ``found``: the run's ``configurable`` keys and context over
    the assistant's, its recursion limit if it has one, and :func:`run_metadata`."""
    metadata = run_metadata(given.metadata if given else None, found.assistant_id, found.graph_id)
    if found.system:
        return given if metadata is None else replace(given or RunOptions(), metadata=metadata)
    own = given or RunOptions()
    base = found.options
    limit = own.recursion_limit if own.recursion_limit is not None else base.recursion_limit
    context = {**(base.context or {}), **(own.context or {})}
    return replace(
        own,
        metadata=metadata or {},
        configurable={**base.configurable, **own.configurable},
        recursion_limit=limit,
        context=context or None,
    )


def run_metadata(
    given: dict[str, Any] | None, assistant_id: str, graph_id: str
) -> dict[str, Any] | None:
    """A run's metadata as kept: a user's assistant's id in it (how its run shows which
    assistant it ran on), and never an id the run's own metadata claims instead."""
    if assistant_id == graph_assistant_id(graph_id) and "assistant_id" not in (given or {}):
        return given
    return {**(given or {}), "assistant_id": assistant_id}
