"""The collaborators a :class:`~waystone.runtime.Runtime` is made of, made once per runtime:
the database, the vault, the run registry and the signals at once; the saver, the ledger
and the effects' context on first use, so a command that only reads runs (``status``,
``list``) never imports LangGraph.

The runtime's commands, drives and views share one :class:`Parts`; nothing outside the
core reaches it (the runtime's methods are the way in).
"""

from __future__ import annotations

import asyncio
import threading
from functools import cached_property
from typing import TYPE_CHECKING, Any

from waystone._db.database import Database
from waystone._db.migrations import migrate, require_current
from waystone._identifiers import check_identifier
from waystone._privacy.keys import at_rest_sealer, load_key
from waystone._privacy.readable import refuse_personal_data
from waystone._privacy.seal import open_value
from waystone._privacy.vault import Vault
from waystone._runs.registry import RunRegistry, process_owner
from waystone._runs.signals import SignalBox
from waystone.config import Settings

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore

    from waystone._checkpointing.loops import LoopSavers
    from waystone._checkpointing.saver import WaystoneSaver
    from waystone._store.configured import StoreConfig
    from waystone.effects._ledger import Ledger
    from waystone.effects.context import EffectContext


OWNERS_KEPT = 10_000  # threads' owners remembered, at most


def migrates(settings: Settings, asked: bool | None) -> bool:
    """Whether a runtime migrates its database: when asked, else only the embedded default
    (a database the user gave is migrated by ``waystone migrate``, at a time they choose)."""
    return asked if asked is not None else settings.database_url is None


class Parts:
    """One runtime's database (its schema current), vault, sealer, registry, signals, owner."""

    def __init__(
        self,
        settings: Settings,
        migrate_schema: bool | None = None,
        store: BaseStore | None = None,
    ) -> None:
        self.settings = settings
        self._given_store = store
        self.db = Database.open(settings)
        try:
            if migrates(settings, migrate_schema):
                migrate(self.db)
            else:
                require_current(self.db)
            self.vault = Vault(self.db, load_key(settings.home, settings.encryption_key))
            self.vault.check_key()
            self.sealer = at_rest_sealer(settings.encryption_key)
        except BaseException:
            self.db.close()
            raise
        self.registry = RunRegistry(self.db, redact=self.protect, reveal=self.reveal)
        self._owners: dict[str, str | None] = {}
        self._owners_lock = threading.Lock()
        self.signals = SignalBox(self.db, redact=self.protect, reveal=self.reveal)
        self.owner = process_owner()

    def protect(self, value: Any) -> Any:
        """On the way to Postgres: personal data tokenised, then sealed when encrypting."""
        redacted = self.vault.redact(value)
        return self.sealer.seal(redacted) if self.sealer is not None else redacted

    def reveal(self, value: Any) -> Any:
        return open_value(self.sealer, value)

    def refuse_personal_data(self, kind: str, value: str | None) -> None:
        """Identifiers are stored readable: one holding personal data is refused."""
        refuse_personal_data(kind, value, self.vault.detector)

    def who(self, by: str) -> str:
        """Who acted, as stored: an email or phone given as a name becomes a token."""
        return str(self.vault.redact(check_identifier("by", by)))

    @cached_property
    def saver(self) -> WaystoneSaver:
        from waystone._checkpointing.saver import make_saver

        return make_saver(
            self.db, self.vault.redact, self.sealer, allowed_modules=self.settings.allowed_modules
        )

    @cached_property
    def ledger(self) -> Ledger:
        from waystone.effects._ledger import Ledger

        return Ledger(self.db, redact=self.protect, reveal=self.reveal, ride=self.saver.ride)

    @cached_property
    def effects_context(self) -> EffectContext:
        """What the effects a user's node makes reach the ledger through (see
        :mod:`waystone.effects.context`): keys derive from arguments as the saver redacts
        them, and the provider gets the real values."""
        from waystone.effects.context import EffectContext

        return EffectContext(
            self.ledger,
            self.registry,
            reveal=self.vault.reveal,
            redact=self.vault.redact,
            flush=self.saver.flush,
        )

    @cached_property
    def store_config(self) -> StoreConfig:
        """What ``langgraph.json`` says of the store."""
        from waystone._store.configured import langgraph_json, read_config

        return read_config(langgraph_json(self.settings.langgraph_json))

    @cached_property
    def store(self) -> BaseStore:
        """The store (the one given, or LangGraph's ``PostgresStore`` on this database,
        redacting and sealing), made on first use: a process that never reads or writes
        it never makes its tables."""
        if self._given_store is not None:
            return self._given_store
        from waystone._store.configured import make_store

        return make_store(self.db, self.vault.redact, self.sealer, self.store_config)

    @cached_property
    def graph_store(self) -> BaseStore:
        """The store a graph's nodes get: :attr:`store` confined to the namespaces of the
        owner of the run's thread (all of them for a run with no owner)."""
        from waystone._store.owned import OwnedStore, run_owner

        return OwnedStore(lambda: self.store, run_owner(self.thread_owner))

    def thread_owner(self, thread_id: str) -> str | None:
        """The owner a thread was made for (``None``: the operator's); a thread's owner
        never changes, so it is asked once per process."""
        with self._owners_lock:
            if thread_id in self._owners:
                return self._owners[thread_id]
        row = self.db.fetch_one("thread_owner", thread_id=thread_id)
        owner = None if row is None else row["owner"]
        with self._owners_lock:
            if len(self._owners) >= OWNERS_KEPT:
                self._owners.clear()
            self._owners[thread_id] = owner
        return owner

    @cached_property
    def loop_savers(self) -> LoopSavers:
        from waystone._checkpointing.loops import LoopSavers

        return LoopSavers(self.settings, self.db.url)

    def close(self) -> None:
        if "loop_savers" in self.__dict__:
            self.loop_savers.close()
        self.db.close()

    async def aclose(self) -> None:
        if "loop_savers" in self.__dict__:
            await self.loop_savers.aclose()
        await asyncio.to_thread(self.db.close)
