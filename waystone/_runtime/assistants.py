"""Assistants users make, as the LangGraph server API has them: a graph with the config,
context and metadata its runs start from, in numbered versions of which one is in force.
Each change is a new version; an older one can be put back in force.

A graph's own assistant (everyone's, the graph's name as its name) is not stored here: the
caller passes those it serves to :meth:`Assistants.search` to be found among the stored.
An assistant made for an owner (an API token's) is found by that owner, and by the
operator (``owner=None``), who finds every one; for anyone else it does not exist. Its
name, description, config, context and metadata are redacted and sealed as a run's input.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from psycopg.types.json import Jsonb

from waystone._runtime.assistant_rules import (
    UNTITLED,
    Assistant,
    Changes,
    canonical,
    contains,
    matches,
    ordered,
    patched,
    synced,
)
from waystone._runtime.options import RunOptions
from waystone._runtime.threads import SEARCH_LIMIT
from waystone.errors import BadInput, TransitionNotAllowed

if TYPE_CHECKING:
    from waystone._runtime.catalog import Catalog
    from waystone._runtime.parts import Parts

IF_EXISTS = ("raise", "do_nothing")


class Assistants:
    def __init__(self, parts: Parts, catalog: Catalog) -> None:
        self._parts = parts
        self._catalog = catalog

    def create(
        self,
        graph_id: str,
        *,
        assistant_id: str | None = None,
        config: dict[str, Any] | None = None,
        context: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        name: str | None = None,
        description: str | None = None,
        if_exists: str = "raise",
        owner: str | None = None,
    ) -> Assistant:
        """A new assistant of ``graph_id``, ``owner``'s when given. With an id already
        taken, :class:`TransitionNotAllowed`, or the assistant as it is when ``if_exists``
        is ``do_nothing`` (and ``owner`` may see it). Checked before anything is written."""
        if if_exists not in IF_EXISTS:
            raise BadInput(f"if_exists must be one of {', '.join(IF_EXISTS)}, not {if_exists!r}")
        the_id = str(uuid.uuid4()) if assistant_id is None else canonical(assistant_id)
        config, context = synced(_object(config, "config"), _object(context, "context"))
        made = self._checked(
            graph_id,
            config,
            context,
            _object(metadata, "metadata"),
            name or UNTITLED,
            description,
        )
        row = self._parts.db.fetch_one(
            "create_assistant", assistant_id=the_id, owner=owner, **self._stored(made)
        )
        if row is None:
            found = self.get(the_id, owner)
            if if_exists == "raise" or found is None:  # another owner's: say no more
                raise TransitionNotAllowed(f"assistant {the_id} already exists")
            return found
        created = self.get(the_id, owner)
        assert created is not None
        return created

    def get(self, assistant_id: str, owner: str | None = None) -> Assistant | None:
        """The assistant as its version in force has it; None if ``owner`` may not see it."""
        row = self._parts.db.fetch_one("get_assistant", assistant_id=_id(assistant_id))
        return self._visible(row, owner)

    def update(
        self, assistant_id: str, changes: Changes, owner: str | None = None
    ) -> Assistant | None:
        """A new version of the assistant, from the one in force and ``changes``, put in
        force; None if there is no such assistant for ``owner``."""
        db = self._parts.db
        with db.transaction() as conn:  # the assistant locked: one new number at a time
            locked = db.execute("lock_assistant", conn, assistant_id=_id(assistant_id))
            if not locked or not _sees(owner, locked[0]):
                return None
            rows = db.execute("get_assistant", conn, assistant_id=locked[0]["assistant_id"])
            current = self._assistant(rows[0])
            new = patched(current, changes)
            made = self._checked(
                new.graph_id, new.config, new.context, new.metadata, new.name, new.description
            )
            db.execute(
                "add_assistant_version",
                conn,
                assistant_id=current.assistant_id,
                **self._stored(made),
            )
        return self.get(current.assistant_id, owner)

    def set_version(
        self, assistant_id: str, version: int, owner: str | None = None
    ) -> Assistant | None:
        """The assistant with its ``version`` in force; None if it has no such version, or
        there is no such assistant for ``owner``."""
        if self.get(assistant_id, owner) is None:
            return None
        the_id = _id(assistant_id)
        if self._parts.db.fetch_one("set_assistant_version", assistant_id=the_id, version=version):
            return self.get(the_id, owner)
        return None

    def delete(self, assistant_id: str, owner: str | None = None) -> bool:
        """Whether there was such an assistant for ``owner`` (now deleted, every version)."""
        if self.get(assistant_id, owner) is None:
            return False
        return (
            self._parts.db.fetch_one("delete_assistant", assistant_id=_id(assistant_id)) is not None
        )

    def versions(
        self,
        assistant_id: str,
        metadata: dict[str, Any] | None = None,
        owner: str | None = None,
    ) -> list[Assistant] | None:
        """The assistant's versions whose metadata holds ``metadata``, the newest first;
        None if ``owner`` has no such assistant."""
        if self.get(assistant_id, owner) is None:
            return None
        wanted = self._parts.vault.redact(_object(metadata, "metadata"))
        rows = self._parts.db.fetch_all("assistant_versions", assistant_id=_id(assistant_id))
        every = map(self._assistant, rows)
        return [a for a in every if contains(a.metadata, wanted)]

    def search(
        self,
        *,
        graph_id: str | None = None,
        name: str | None = None,
        metadata: dict[str, Any] | None = None,
        sort_by: str = "created_at",
        descending: bool = True,
        owner: str | None = None,
        among: Sequence[Assistant] = (),
    ) -> list[Assistant]:
        """``owner``'s assistants and those of ``among`` that :func:`matches` finds, in
        the order asked for."""
        wanted = self._parts.vault.redact(_object(metadata, "metadata"))
        rows = self._parts.db.fetch_all("list_assistants", owner=owner, limit=SEARCH_LIMIT)
        every = [*among, *map(self._assistant, rows)]
        return ordered(
            [a for a in every if matches(a, graph_id, name, wanted)], sort_by, descending
        )

    # -- stored and read back --------------------------------------------------------------

    def _checked(
        self,
        graph_id: str,
        config: dict[str, Any],
        context: dict[str, Any],
        metadata: dict[str, Any],
        name: str,
        description: str | None,
    ) -> dict[str, Any]:
        """What a version holds, once its graph takes its config (as a run's options)."""
        entry = self._catalog.entry(self._catalog.known(graph_id))
        if not isinstance(name, str) or not (description is None or isinstance(description, str)):
            raise BadInput("an assistant's name and description must be strings")
        options = RunOptions(
            configurable=config.get("configurable") or {},
            recursion_limit=config.get("recursion_limit"),
        )
        options.check(set(entry.graph.nodes))
        return {
            "graph_id": graph_id,
            "config": config,
            "context": context,
            "metadata": metadata,
            "name": name,
            "description": description,
        }

    def _stored(self, made: dict[str, Any]) -> dict[str, Any]:
        protect = self._parts.protect
        sealed = {k: Jsonb(protect(v)) for k, v in made.items() if k != "graph_id"}
        return {**sealed, "graph_id": made["graph_id"]}

    def _visible(self, row: dict[str, Any] | None, owner: str | None) -> Assistant | None:
        return self._assistant(row) if row is not None and _sees(owner, row) else None

    def _assistant(self, row: dict[str, Any]) -> Assistant:
        reveal = self._parts.reveal
        return Assistant(
            assistant_id=row["assistant_id"],
            graph_id=row["graph_id"],
            version=row["version"],
            name=reveal(row["name"]),
            description=reveal(row["description"]),
            config=reveal(row["config"]),
            context=reveal(row["context"]),
            metadata=reveal(row["metadata"]),
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            owner=row["owner"],
        )


def _sees(owner: str | None, row: dict[str, Any]) -> bool:
    """Whether ``owner`` finds the assistant of ``row``: the operator (None) every one."""
    return owner is None or row["owner"] == owner


def _id(assistant_id: str) -> str:
    """The stored form of an id to look up; one that is not a UUID finds nothing."""
    try:
        return str(uuid.UUID(str(assistant_id)))
    except ValueError:
        return str(assistant_id)


def _object(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadInput(f"an assistant's {what} must be a JSON object")
    return value
