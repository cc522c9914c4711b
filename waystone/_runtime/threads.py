"""Threads as the LangGraph server API has them: a thread can be made, with metadata,
before its first run. A thread started by a run alone is its runs row; one made first has
a row of its own (``waystone.threads``) until and after its runs begin.

Owners: a thread made for an owner (an API token's) is found by that owner only, and by
the operator (``owner=None``), who finds every thread; for anyone else it does not exist
(:class:`UnknownThread`), whatever is asked of it. The rule is here, in one place, so
every edge (the API, the web pages) applies the same one."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from waystone._identifiers import check_identifier
from waystone.errors import BadInput, TransitionNotAllowed, UnknownThread

if TYPE_CHECKING:
    from waystone._runtime.parts import Parts

IF_EXISTS = ("raise", "do_nothing")
SEARCH_LIMIT = 10_000  # the threads a search looks through (their metadata may be sealed)


@dataclass(frozen=True)
class Thread:
    thread_id: str
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    agent: str | None  # its current run's agent or graph; None before its first run
    state: str | None  # its current run's state
    owner: str | None = None  # the owner it was made for; None: the operator's only


class Threads:
    def __init__(self, parts: Parts) -> None:
        self._parts = parts

    def create(
        self,
        thread_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        if_exists: str = "raise",
        owner: str | None = None,
    ) -> Thread:
        """A new thread with ``metadata`` (redacted, and sealed when encrypting), ``owner``'s
        when given; with an id already taken, :class:`TransitionNotAllowed`, or the thread
        as it is when ``if_exists`` is ``do_nothing`` (and ``owner`` may see it)."""
        parts = self._parts
        if if_exists not in IF_EXISTS:
            raise BadInput(f"if_exists must be one of {', '.join(IF_EXISTS)}, not {if_exists!r}")
        if metadata is not None and not isinstance(metadata, dict):
            raise BadInput("a thread's metadata must be a JSON object")
        if thread_id is None:
            thread_id = str(uuid.uuid4())
        check_identifier("thread id", thread_id)
        parts.refuse_personal_data("thread id", thread_id)
        made = parts.db.fetch_one(
            "create_thread",
            thread_id=thread_id,
            metadata=parts.protect(metadata or {}),
            owner=owner,
        )
        if made is None and if_exists == "raise":
            raise TransitionNotAllowed(f"thread {thread_id} already exists")
        try:
            return self.get(thread_id, owner)
        except UnknownThread:  # taken by another owner's thread: say no more than that
            raise TransitionNotAllowed(f"thread {thread_id} already exists") from None

    def get(self, thread_id: str, owner: str | None = None) -> Thread:
        """The thread, if ``owner`` may see it (the operator, ``None``, sees every one);
        :class:`UnknownThread` if not, as if it did not exist."""
        row = self._parts.db.fetch_one("get_thread", thread_id=thread_id)
        if row is None or (owner is not None and row["owner"] != owner):
            raise UnknownThread(thread_id)
        return self._thread(row)

    def update(self, thread_id: str, metadata: dict[str, Any], owner: str | None = None) -> Thread:
        """The thread with ``metadata``'s keys set in its metadata (the others kept)."""
        if not isinstance(metadata, dict):
            raise BadInput("a thread's metadata must be a JSON object")
        found = self.get(thread_id, owner)
        merged = {**found.metadata, **metadata}
        self._parts.db.fetch_one(
            "set_thread_metadata", thread_id=thread_id, metadata=self._parts.protect(merged)
        )
        return self.get(thread_id, owner)

    def delete(self, thread_id: str, by: str, owner: str | None = None) -> None:
        """Take the thread out of every view and erase its checkpoints; its runs, events
        and effects stay, as evidence. :class:`TransitionNotAllowed` while its run has
        not ended (cancel it first)."""
        found = self.get(thread_id, owner)
        parts = self._parts
        gone = parts.db.fetch_one("delete_thread", thread_id=thread_id, actor=parts.who(by))
        if gone is None:
            raise TransitionNotAllowed(
                f"thread {thread_id}'s run is {found.state}: cancel it (or let it end) "
                "before deleting the thread"
            )
        parts.saver.prune([thread_id], strategy="delete")

    def search(
        self,
        metadata: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        owner: str | None = None,
    ) -> list[Thread]:
        """``owner``'s threads (every one for the operator, ``None``) whose metadata holds
        every key and value of ``metadata``, the latest changed first."""
        if limit < 1 or offset < 0:
            raise BadInput("limit must be at least 1 and offset at least 0")
        wanted = self._parts.vault.redact(metadata or {})
        rows = self._parts.db.fetch_all("list_threads", limit=SEARCH_LIMIT, owner=owner)
        found = [
            t
            for t in map(self._thread, rows)
            if all(t.metadata.get(k) == v for k, v in wanted.items())
        ]
        return found[offset : offset + limit]

    def _thread(self, row: dict[str, Any]) -> Thread:
        metadata = self._parts.reveal(row["metadata"])
        return Thread(
            thread_id=row["thread_id"],
            metadata=metadata if isinstance(metadata, dict) else {},
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            agent=row["agent"],
            state=row["state"],
            owner=row.get("owner"),
        )
