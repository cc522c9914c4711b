"""Threads as the LangGraph server API has them: a thread can be made, with metadata,
before its first run. A thread started by a run alone is its runs row; one made first has
a row of its own (``waystone.threads``) until and after its runs begin."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from waystone._identifiers import check_identifier
from waystone.errors import BadInput, TransitionNotAllowed, UnknownThread

if TYPE_CHECKING:
    from waystone._parts import Parts

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


class Threads:
    def __init__(self, parts: Parts) -> None:
        self._parts = parts

    def create(
        self,
        thread_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        if_exists: str = "raise",
    ) -> Thread:
        """A new thread with ``metadata`` (redacted, and sealed when encrypting); with an id
        already taken, :class:`TransitionNotAllowed`, or the thread as it is when
        ``if_exists`` is ``do_nothing``."""
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
            "create_thread", thread_id=thread_id, metadata=parts.protect(metadata or {})
        )
        if made is None and if_exists == "raise":
            raise TransitionNotAllowed(f"thread {thread_id} already exists")
        return self.get(thread_id)

    def get(self, thread_id: str) -> Thread:
        row = self._parts.db.fetch_one("get_thread", thread_id=thread_id)
        if row is None:
            raise UnknownThread(thread_id)
        return self._thread(row)

    def search(
        self, metadata: dict[str, Any] | None = None, limit: int = 10, offset: int = 0
    ) -> list[Thread]:
        """Threads whose metadata holds every key and value of ``metadata``, the latest
        changed first."""
        if limit < 1 or offset < 0:
            raise BadInput("limit must be at least 1 and offset at least 0")
        wanted = self._parts.vault.redact(metadata or {})
        rows = self._parts.db.fetch_all("list_threads", limit=SEARCH_LIMIT)
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
        )
