"""The store a runtime makes: ``langgraph.json``'s ``store`` section, as ``langgraph dev``
reads it (``index``: ``embed``, ``dims``, ``fields``; ``ttl``: ``default_ttl``,
``refresh_on_read``, ``sweep_interval_minutes``), and the tables its ``setup()`` makes,
once per database.

``embed`` is a function or LangChain ``Embeddings`` in a file (``./embed.py:attr``, read
from the file's directory) or a module (``package.module:attr``), or a model's name
(``openai:text-embedding-3-small``, which needs the ``langchain`` package). Semantic
search needs pgvector in the database: a server without it is refused at the store's
first use, saying what to install.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from waystone import sql
from waystone._imports import import_file, import_object
from waystone.errors import BadInput

if TYPE_CHECKING:
    from langgraph.store.base import TTLConfig
    from langgraph.store.postgres.base import PostgresIndexConfig

    from waystone._db.database import Database
    from waystone._privacy.seal import Sealer
    from waystone._store.sealed import Redact, SealedStore

SWEEP_MINUTES = 5.0  # between two sweeps of expired items, without ``sweep_interval_minutes``
TTL_KEYS = {"default_ttl", "refresh_on_read", "sweep_interval_minutes"}
INDEX_KEYS = {"embed", "dims", "fields", "distance_type", "ann_index_config"}


@dataclass(frozen=True)
class StoreConfig:
    """What ``langgraph.json`` says of the store (nothing, by default)."""

    index: dict[str, Any] | None = None
    ttl: dict[str, Any] = field(default_factory=dict)
    base: Path = Path()  # the file's directory: ``./embed.py`` is found there

    @property
    def sweep_seconds(self) -> float:
        return float(self.ttl.get("sweep_interval_minutes") or SWEEP_MINUTES) * 60


def langgraph_json(named: Path | None) -> Path | None:
    """The ``langgraph.json`` in use: the one named, or the current directory's."""
    if named is not None:
        return named
    here = Path("langgraph.json")
    return here if here.is_file() else None


def read_config(path: Path | None) -> StoreConfig:
    """``path``'s ``store`` section; :class:`BadInput` saying what is wrong with it."""
    if path is None:
        return StoreConfig()
    try:
        whole = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BadInput(f"{path}: cannot read it as JSON: {exc}") from exc
    store = whole.get("store") if isinstance(whole, dict) else None
    if store is None:
        return StoreConfig(base=path.resolve().parent)
    if not isinstance(store, dict):
        raise BadInput(f'{path}: "store" must be an object ({{"index": ..., "ttl": ...}})')
    if "path" in store:
        raise BadInput(
            f'{path}: "store.path" (a store of your own) is not supported by the server; '
            "give it to Runtime(store=...) in your own process, or remove it"
        )
    index, ttl = store.get("index"), store.get("ttl") or {}
    if index is not None and (
        not isinstance(index, dict)
        or not isinstance(index.get("dims"), int)
        or "embed" not in index
    ):
        raise BadInput(f'{path}: "store.index" needs "embed" and "dims" (an integer)')
    if not isinstance(ttl, dict) or set(ttl) - TTL_KEYS:
        raise BadInput(f'{path}: "store.ttl" may hold {", ".join(sorted(TTL_KEYS))} only')
    if index is not None and set(index) - INDEX_KEYS:
        raise BadInput(f'{path}: "store.index" may hold {", ".join(sorted(INDEX_KEYS))} only')
    return StoreConfig(index=index, ttl=ttl, base=path.resolve().parent)


def index_config(config: StoreConfig) -> PostgresIndexConfig | None:
    """The index ``PostgresStore`` takes, its ``embed`` loaded."""
    if config.index is None:
        return None
    made: dict[str, Any] = {**config.index, "embed": _embeddings(config.index["embed"], config)}
    return made  # type: ignore[return-value]


def ttl_config(config: StoreConfig) -> TTLConfig:
    """The TTL ``PostgresStore`` takes: an expired item is never read, swept or not."""
    kept = {k: v for k, v in config.ttl.items() if k in ("default_ttl", "refresh_on_read")}
    made: dict[str, Any] = {**kept, "omit_expired": True}
    return made  # type: ignore[return-value]


def _embeddings(embed: Any, config: StoreConfig) -> Any:
    if not isinstance(embed, str):
        return embed  # given in code: a function or an Embeddings
    where, _, attr = embed.rpartition(":")
    if where.endswith(".py"):
        return import_file("store.index.embed", config.base / where, attr, "waystone_store_")
    if "." in where:
        return import_object("store.index.embed", embed)
    return embed  # a model's name: LangGraph makes it with LangChain's init_embeddings


def make_store(
    db: Database, redact: Redact, sealer: Sealer | None, config: StoreConfig
) -> SealedStore:
    """The store on ``db``, its tables made (once: concurrent processes wait their turn)."""
    from waystone._store.sealed import SealedStore

    index = index_config(config)
    if index is not None:
        row = db.fetch_one("pgvector_available")
        if row is None or not row["available"]:
            raise BadInput(
                "the store's semantic search (langgraph.json store.index) needs the pgvector "
                "extension, which this Postgres does not have: install it (Debian/Ubuntu: "
                "apt install postgresql-NN-pgvector; see docs/api.md), or remove store.index"
            )
    try:
        store = SealedStore(db, redact, sealer, index=index, ttl=ttl_config(config))
    except (ValueError, ImportError) as exc:  # LangGraph's word on the index it was given
        raise BadInput(f"langgraph.json store.index: {exc}") from exc
    with db.connection() as conn:
        db.execute("lock_store_setup", conn)
        try:
            store.setup()
        finally:
            db.execute("unlock_store_setup", conn)
    return store


def sweep(db: Database) -> int:
    """Delete the items whose TTL has passed; none before the store's tables exist."""
    found = db.fetch_one("store_exists")
    if found is None or not found["present"]:
        return 0
    with db.connection() as conn:
        cur = conn.execute(sql.query("sweep_store"))
        return cur.rowcount
