"""Claiming a run and driving its graph under the claim's lease, sync or on an event loop,
and what a drive that raised leaves behind."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from waystone._db.database import meaning_of
from waystone._runs import leases
from waystone._runs.registry import Run
from waystone._runs.status import not_runnable
from waystone._runtime import driver, options
from waystone._runtime.stopped_calls import answer_stopped_calls
from waystone.errors import (
    BadInput,
    DatabaseUnavailable,
    LeaseLost,
    NeedsHuman,
    TransitionNotAllowed,
    chain,
)

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.runtime import RunControl
    from langgraph.types import StateSnapshot

    from waystone._runtime.catalog import Catalog, Entry
    from waystone._runtime.driver import OnNewRun
    from waystone._runtime.options import RunOptions
    from waystone._runtime.parts import Parts
    from waystone._streams.log import StreamLog

logger = logging.getLogger(__name__)


class Drives:
    def __init__(self, parts: Parts, catalog: Catalog) -> None:
        self._parts = parts
        self._catalog = catalog

    def claim(
        self,
        *,
        thread_id: str | None = None,
        agents: list[str] | None = None,
        owner: str | None = None,
    ) -> Run | None:
        """A runnable run claimed under a new lease: ``thread_id``'s, or the next one of
        ``agents`` (all this runtime drives, by default); ``None`` when there is none."""
        parts = self._parts
        return parts.registry.claim(
            owner=owner or parts.owner,
            lease_seconds=parts.settings.lease_seconds,
            thread_id=thread_id,
            agents=agents if agents is not None else self._catalog.names(),
        )

    def claim_thread(self, thread_id: str) -> Run:
        """``thread_id``'s run, claimed; :class:`TransitionNotAllowed` saying why when it is
        not runnable."""
        claimed = self.claim(thread_id=thread_id)  # an agent this process lacks: left alone
        if claimed is None:
            current = self._parts.registry.get(thread_id)  # an unknown thread: UnknownThread
            self._catalog.known(current.agent)  # an agent this process does not know
            raise TransitionNotAllowed(not_runnable(current))
        return claimed

    def drive(
        self,
        claimed: Run,
        control: RunControl | None = None,
        on_stuck: Callable[[], None] | None = None,
    ) -> Run | None:
        entry = self._entry_of_claimed(claimed)
        if entry.async_only and not _in_loop():
            return asyncio.run(self.adrive(claimed, control, on_stuck))
        with self._leased(claimed, entry, on_stuck):
            log = self._log(claimed)
            try:
                return driver.drive(
                    entry,
                    claimed,
                    self._parts.registry,
                    self._parts.signals,
                    control=control,
                    context=self._context(entry),
                    options=self._options(entry, claimed),
                    on_new_run=self._on_new_run(claimed),
                    log=log,
                )
            except Exception as exc:
                self._stopped(claimed, exc, entry.graph)
            finally:  # a hand-over nothing took under this lease never will
                self._parts.ledger.untaken(claimed.thread_id, claimed.lease_token)
                if log is not None:
                    log.close()
        return None

    async def adrive(
        self,
        claimed: Run,
        control: RunControl | None = None,
        on_stuck: Callable[[], None] | None = None,
    ) -> Run | None:
        entry = await asyncio.to_thread(self._entry_of_claimed, claimed)
        graph = await self._catalog.agraph(claimed.agent)
        with self._leased(claimed, entry, on_stuck):
            log = await asyncio.to_thread(self._log, claimed)
            try:
                return await driver.adrive(
                    entry,
                    graph,
                    claimed,
                    self._parts.registry,
                    self._parts.signals,
                    control=control,
                    context=self._context(entry),
                    options=await asyncio.to_thread(self._options, entry, claimed),
                    on_new_run=self._on_new_run(claimed),
                    log=log,
                )
            except Exception as exc:
                await asyncio.to_thread(self._stopped, claimed, exc, entry.graph)
            finally:
                self._parts.ledger.untaken(claimed.thread_id, claimed.lease_token)
                if log is not None:
                    await asyncio.to_thread(log.close)
        return None

    def release(self, claimed: Run) -> bool:
        return self._parts.registry.release(claimed.thread_id, claimed.lease_token)

    def _log(self, claimed: Run) -> StreamLog | None:
        """The stream log of a run a client streams, begun; ``None`` for any other (driven
        with ``invoke``, nothing logged). A client that starts following a run while it is
        driven gets its live events from its next drive (after a wait or a takeover)."""
        if not claimed.logged or claimed.run_id is None:
            return None
        from waystone._streams.log import StreamLog

        parts = self._parts
        log = StreamLog(
            parts.db,
            parts.protect,
            parts.reveal,
            claimed.thread_id,
            claimed.run_id,
            claimed.lease_token,
        )
        log.begin(resumed=claimed.prev_state == "waiting")
        return log

    def _options(self, entry: Entry, claimed: Run) -> RunOptions | None:
        """What the run was created with besides its input: one read per drive, none for
        the preset's agents (their runs take none)."""
        if entry.one_run or claimed.run_id is None:
            return None
        found = options.load(self._parts, claimed.run_id)
        return None if found.empty else found

    def _on_new_run(self, claimed: Run) -> OnNewRun:
        """Answers the tool calls the run before left without a result (see
        :mod:`waystone._runtime.stopped_calls`)."""
        registry, ledger = self._parts.registry, self._parts.ledger

        def answer(graph: CompiledStateGraph[Any], snapshot: StateSnapshot) -> None:
            answer_stopped_calls(graph, snapshot, claimed, registry, ledger)

        return answer

    def _context(self, entry: Entry) -> object | None:
        return self._parts.effects_context if entry.effects_in_nodes else None

    def _entry_of_claimed(self, claimed: Run) -> Entry:
        """The claimed run's entry; when this process cannot build its graph, the lease goes
        back at once (another process may have a graph that builds) and the error is
        raised."""
        try:
            return self._catalog.entry(claimed.agent)
        except BadInput:
            self.release(claimed)
            raise

    def _leased(
        self, claimed: Run, entry: Entry, on_stuck: Callable[[], None] | None
    ) -> AbstractContextManager[object]:
        """The heartbeat that keeps a drive's lease while it makes progress."""
        return leases.heartbeat(
            self._parts.registry,
            claimed,
            self._parts.settings.lease_seconds,
            budget_s=entry.step_budget_s,
            on_stuck=on_stuck,
        )

    def _stopped(
        self, claimed: Run, exc: Exception, graph: CompiledStateGraph[Any] | None = None
    ) -> None:
        """What a drive that raised ``exc`` leaves: a drained run's lease released, a run
        whose resume value ``interrupt()`` refused waiting again, a run that failed or
        needs a person moved there; raises :class:`LeaseLost` and
        :class:`DatabaseUnavailable`, after which this process writes nothing more."""
        from langgraph.errors import GraphDrained, is_invalid_resume

        registry, ledger = self._parts.registry, self._parts.ledger
        log = {"thread_id": claimed.thread_id, "lease_token": claimed.lease_token}
        if isinstance(exc, GraphDrained):
            # intents ridden with authorize's checkpoint, never called: no attempt
            handed, untaken = ledger.hand_back(claimed.thread_id, claimed.lease_token)
            released = self.release(claimed)
            how = "released" if released else "had already lost"
            msg = "drained: finished the step, %s the lease, handed back %d of %d intents"
            logger.info(msg, how, handed, untaken, extra=log)
            return
        meaning = meaning_of(exc)
        if isinstance(meaning, LeaseLost | DatabaseUnavailable):
            if isinstance(meaning, LeaseLost):
                # receipts that were to commit with a checkpoint the fence refused
                late = ledger.late_receipts(claimed.thread_id, claimed.lease_token)
                logger.warning("stopped driving: %s", meaning, extra={**log, "late": late})
            if meaning is exc:
                raise exc  # never from itself: its chain would be a cycle
            raise meaning from exc
        if isinstance(meaning, NeedsHuman):
            logger.warning("run needs a person: %s", meaning, extra=log)
            registry.transition(
                claimed.thread_id,
                "needs-human",
                reason=str(meaning),
                evidence={"error": repr(exc)},
                from_states=("running",),
                lease_token=claimed.lease_token,
            )
            return
        if graph is not None and any(map(is_invalid_resume, chain(exc))):
            signals = self._parts.signals
            if driver.refuse_resume(graph, claimed, registry, signals, exc) is not None:
                logger.warning("resume value refused: %s", exc, extra=log)
                return
        logger.error("run failed", exc_info=exc, extra=log)
        with registry.db.transaction(fence=claimed.lease_token) as conn:
            registry.transition(
                claimed.thread_id,
                "failed",
                reason=f"error: {type(exc).__name__}: {exc}",
                evidence={"error": repr(exc)},
                from_states=("running",),
                lease_token=claimed.lease_token,
                conn=conn,
            )


def _in_loop() -> bool:
    """Whether this thread runs an event loop (where ``asyncio.run`` cannot start one)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
