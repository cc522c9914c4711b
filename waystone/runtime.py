"""The facade the CLI, workers, servers and notebooks use: start, drive, answer, inspect.

A :class:`Runtime` holds one connection pool. Every method works from any process: all
that matters lives in Postgres, keyed by ``thread_id``. It is made of a catalog (what it
drives, :mod:`waystone._runtime.catalog`), commands, drives and views (:mod:`waystone.runs`) over
one set of parts (:mod:`waystone._runtime.parts`); its methods are the only way in.
"""

from __future__ import annotations

import asyncio
import builtins
import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from waystone._runs.lease_wait import HeldLease
from waystone._runs.registry import Run
from waystone._runs.run_config import graph_config
from waystone._runs.signals import RESUME
from waystone._runs.status import RunStatus as RunStatus
from waystone._runs.status import past_status
from waystone._runtime import options as run_options
from waystone._runtime.assistants import Assistants
from waystone._runtime.catalog import Catalog
from waystone._runtime.commands import Commands
from waystone._runtime.crons import Crons
from waystone._runtime.drives import Drives
from waystone._runtime.graphs import GraphSource
from waystone._runtime.multitask import Multitask, pending_status
from waystone._runtime.options import RunOptions
from waystone._runtime.parts import Parts
from waystone._runtime.settle import settle
from waystone._runtime.thread_edits import ThreadEdits
from waystone._runtime.threads import Thread, Threads
from waystone._runtime.views import Views
from waystone._webhooks.store import Webhooks
from waystone.config import Settings, check_tools
from waystone.errors import TransitionNotAllowed

if TYPE_CHECKING:
    import logging

    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.serde.base import SerializerProtocol
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.runtime import RunControl
    from langgraph.store.base import BaseStore

    from waystone._db.database import Conn
    from waystone._runtime.catalog import Preset


class Runtime:
    """Start, drive, approve and inspect runs. Close it (or use ``with``) when done.

    ``settings``: what the edge that starts read (:class:`~waystone.config.Settings`);
    without them, the runtime reads the environment itself (as in a notebook) through
    :meth:`Settings.from_env <waystone.config.Settings.from_env>`, with ``database_url``.
    ``agents``: the preset's agents (:class:`~waystone.AgentSpec`) by name, or a function
    giving them on first use; none by default (the demo's refund agent is
    ``agents={"refund": refund.build()}``, ``refund`` from ``waystone.examples``; the
    command line passes it, and those ``WAYSTONE_AGENTS`` names). ``graphs``: your own
    graphs by name (by default those ``WAYSTONE_GRAPHS`` names). ``tools``: ``"ledger"``
    (the default, or ``WAYSTONE_TOOLS``) makes every call of your graphs' ``ToolNode`` s go
    through the effect ledger (at most once for a tool that declares nothing,
    docs/tools.md); ``"as-is"`` calls them as LangGraph does. ``migrate``: bring the
    database's schema up to date first (by default only the embedded database is; a
    database behind is refused with an error naming ``waystone migrate``). ``store``: the
    LangGraph store your graphs' nodes and the API use (by default LangGraph's
    ``PostgresStore`` on this database, redacted and sealed: :attr:`store`).
    """

    def __init__(
        self,
        settings: Settings | None = None,
        agents: Mapping[str, Preset] | Callable[[], Mapping[str, Preset]] | None = None,
        *,
        graphs: Mapping[str, GraphSource] | None = None,
        database_url: str | None = None,
        tools: str | None = None,
        migrate: bool | None = None,
        store: BaseStore | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env(database_url=database_url)
        if tools is not None:
            self.settings = dataclasses.replace(self.settings, tools=check_tools(tools))
        self._parts = Parts(self.settings, migrate, store)
        self._catalog = Catalog(self._parts, agents, graphs)
        self._commands = Commands(self._parts, self._catalog)
        self._drives = Drives(self._parts, self._catalog)
        self._views = Views(self._parts, self._catalog)
        self._threads = Threads(self._parts)
        self._crons = Crons(self._parts, self._catalog)
        self._assistants = Assistants(self._parts, self._catalog)
        self._edits = ThreadEdits(self._parts, self._catalog, self._commands, self._threads)

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._parts.close()

    async def aclose(self) -> None:
        """:meth:`close`, from a coroutine: this loop's async pool is closed before it
        returns."""
        await self._parts.aclose()

    # -- what it drives -------------------------------------------------------------------

    def names(self) -> list[str]:
        """Every agent and graph this runtime can drive (what its claims take)."""
        return self._catalog.names()

    def is_graph(self, name: str) -> bool:
        """Whether ``name`` is a user's graph (not an agent of the preset)."""
        return self._catalog.is_graph(name)

    def known(self, name: str) -> str:
        """``name`` if this runtime drives it; :class:`BadInput` saying what it drives if
        not."""
        return self._catalog.known(name)

    def register(self, agent: Preset) -> None:
        """Drive the preset's ``agent`` under its name."""
        self._catalog.register(agent)

    def register_graph(self, name: str, source: GraphSource) -> None:
        """Drive ``source`` (a StateGraph, a function returning one, an ``@entrypoint``)
        under ``name``, as ``Runtime(graphs=...)`` does."""
        self._catalog.register_graph(name, source)

    def graph(self, name: str) -> CompiledStateGraph[Any]:
        """The compiled graph of an agent or a user's graph, checkpointed in this runtime's
        Postgres (read its state with :meth:`config`)."""
        return self._catalog.entry(name).graph

    def config(self, thread_id: str) -> RunnableConfig:
        return graph_config(thread_id)

    # -- starting and driving -------------------------------------------------------------

    def start(
        self,
        agent: str,
        input: Any,
        *,
        goal: str | None = None,
        thread_id: str | None = None,
        key: str | None = None,
        options: RunOptions | None = None,
    ) -> RunStatus:
        """Create a queued run. With ``key`` already used, the existing run comes back.
        ``options`` (metadata, config, context, breakpoints) are kept with the run and
        applied by whichever process drives it."""
        started = self._commands.start(agent, input, goal, thread_id, key, options)
        return self.status(started) if isinstance(started, str) else started

    def start_on_thread(
        self,
        agent: str,
        input: Any,
        *,
        thread_id: str,
        multitask_strategy: str = "enqueue",
        by: str = "api",
        options: RunOptions | None = None,
    ) -> RunStatus:
        """A new run on ``thread_id``, whose run may not have ended: ``reject`` refuses it
        then (:class:`TransitionNotAllowed`), ``enqueue`` queues it behind that run,
        ``interrupt`` and ``rollback`` stop that run (and those queued) as a cancel does
        and begin it, from the thread's latest state or the state before the stopped run
        (see :mod:`waystone._runtime.multitask`). A queued run shows as ``queued``.
        ``options`` as for :meth:`start`."""
        made = self._commands.start_behind(agent, input, thread_id, multitask_strategy, by, options)
        if isinstance(made, RunStatus):
            return made
        if isinstance(made, str):
            return self.status(made)
        return self.run_status(thread_id, made) or self.status(thread_id)

    def check_run(self, agent: str, input: Any, options: RunOptions | None = None) -> None:
        """Refuse, with nothing written, what :meth:`start_on_thread` would refuse of a
        run's agent, input and options: for an edge that makes a thread for the run."""
        self._commands.check(agent, input, options)

    def pending_runs(self, thread_id: str) -> builtins.list[RunStatus]:
        """The runs queued behind the thread's run, in the order they will run."""
        return [pending_status(p) for p in Multitask(self._parts).pending(thread_id)]

    def run_status(self, thread_id: str, number: int) -> RunStatus | None:
        """The thread's run ``number``: current, queued or ended before the current one."""
        current = self.status(thread_id)
        if current.run_number == number:
            return current
        for queued in self.pending_runs(thread_id):
            if queued.run_number == number:
                return queued
        for past in self._parts.registry.past_runs(thread_id):
            if past.number == number:
                return past_status(past)
        return None

    def invoke(
        self,
        agent: str,
        input: Any,
        *,
        goal: str | None = None,
        thread_id: str | None = None,
        key: str | None = None,
    ) -> RunStatus:
        """``start``, then ``run`` (until it waits or ends), with the run created and claimed
        in one transaction: one commit less. With ``key`` already used, that run is driven
        if it is runnable, and its status comes back if not (held elsewhere, waiting,
        ended); another agent or input, or a taken ``thread_id``, is refused as by
        ``start``. A crash while it drives leaves the run under a lease that expires, then
        a worker (or ``run``) takes it up: pass ``thread_id`` or ``key`` to know its id."""
        claimed = self._commands.create_claimed(agent, input, goal, thread_id, key)
        if claimed is not None:
            return self._views.after(claimed, self.drive(claimed))
        existing = self.start(agent, input, goal=goal, thread_id=thread_id, key=key)
        current = self._commands.current_run_id(existing.thread_id)
        if existing.run_id is not None and existing.run_id != current:
            return existing  # the key's run ended before a later one began on its thread
        try:
            return self.run(existing.thread_id)
        except TransitionNotAllowed:
            return self.status(existing.thread_id)

    def run(self, thread_id: str) -> RunStatus:
        """Drive a run in this process until it waits or ends (the same claim as a worker's,
        so it never runs a thread a worker holds)."""
        claimed = self._drives.claim_thread(thread_id)
        return self._views.after(claimed, self.drive(claimed))

    def claim(
        self,
        *,
        agents: list[str] | None = None,
        owner: str | None = None,
        thread_id: str | None = None,
    ) -> Run | None:
        """The next runnable run of ``agents`` (all this runtime drives, by default), or
        ``thread_id``'s (taken at once from a local owner that died), claimed under a new
        lease by ``owner`` (this process), to :meth:`drive`; ``None`` when none is
        runnable. What a worker does."""
        return self._drives.claim(thread_id=thread_id, agents=agents, owner=owner)

    def release(self, claimed: Run) -> bool:
        """Give a claimed run's lease back, so another process takes it up at once."""
        return self._drives.release(claimed)

    def seconds_to_next_wake(self, agents: list[str]) -> float | None:
        """Until the next wait of ``agents``' runs is due, by the database's clock."""
        return self._parts.registry.seconds_to_next_wake(agents)

    def held_leases(self, agents: list[str], limit: int) -> builtins.list[HeldLease]:
        """Unexpired leases on ``agents``' running runs, those of gone local owners first
        (see :meth:`RunRegistry.held_leases`): what ``worker --until-idle`` waits for."""
        return self._parts.registry.held_leases(agents, limit)

    def database_ok(self, wait_s: float = 2.0) -> bool:
        """Whether Postgres answers within ``wait_s`` (a health check's question)."""
        return self._parts.registry.database_ok(wait_s)

    def drive(
        self,
        claimed: Run,
        control: RunControl | None = None,
        on_stuck: Callable[[], None] | None = None,
    ) -> Run | None:
        """Drive a run this process has claimed; return it as settled on its graph's outcome
        (``None`` when it was drained, or failed on an error). Raises :class:`LeaseLost` when
        another process took it over (nothing more is written), :class:`DatabaseUnavailable`
        when Postgres went away (the lease expires and the run is picked up again). A drive
        that makes no progress for its agent's step budget is stuck: its lease is left to
        lapse and ``on_stuck`` is called, from another thread. A graph with async nodes is
        driven by :meth:`adrive` on an event loop of its own, unless this thread runs one."""
        return self._drives.drive(claimed, control, on_stuck)

    async def adrive(
        self,
        claimed: Run,
        control: RunControl | None = None,
        on_stuck: Callable[[], None] | None = None,
    ) -> Run | None:
        """:meth:`drive` on this event loop: the graph runs with ``ainvoke``, so its async
        nodes, effects and models run here; what the drive records between its steps runs
        in a worker thread. Its checkpoints are saved on this loop's async pool."""
        return await self._drives.adrive(claimed, control, on_stuck)

    # -- on an event loop: the graph's async nodes, effects and models run on it ----------

    async def ainvoke(
        self,
        agent: str,
        input: Any,
        *,
        goal: str | None = None,
        thread_id: str | None = None,
        key: str | None = None,
    ) -> RunStatus:
        """:meth:`invoke`, with the graph driven by ``ainvoke`` on this event loop (see
        :meth:`adrive`)."""
        create = self._commands.create_claimed
        claimed = await asyncio.to_thread(create, agent, input, goal, thread_id, key)
        if claimed is not None:
            return await self._asettle(claimed)
        existing = await self.astart(agent, input, goal=goal, thread_id=thread_id, key=key)
        current = await asyncio.to_thread(self._commands.current_run_id, existing.thread_id)
        if existing.run_id is not None and existing.run_id != current:
            return existing  # the key's run ended before a later one began on its thread
        try:
            return await self.arun(existing.thread_id)
        except TransitionNotAllowed:
            return await self.astatus(existing.thread_id)

    async def arun(self, thread_id: str) -> RunStatus:
        """:meth:`run`, with the graph driven by ``ainvoke`` on this event loop."""
        return await self._asettle(await asyncio.to_thread(self._drives.claim_thread, thread_id))

    async def _asettle(self, claimed: Run) -> RunStatus:
        settled = await self.adrive(claimed)
        return await asyncio.to_thread(self._views.after, claimed, settled)

    async def astart(
        self,
        agent: str,
        input: Any,
        *,
        goal: str | None = None,
        thread_id: str | None = None,
        key: str | None = None,
    ) -> RunStatus:
        """:meth:`start`, without blocking this event loop."""
        return await asyncio.to_thread(
            functools.partial(self.start, goal=goal, thread_id=thread_id, key=key), agent, input
        )

    async def aresume(
        self,
        thread_id: str,
        value: Any,
        *,
        interrupt_id: str | None = None,
        by: str = "waystone",
    ) -> RunStatus:
        """:meth:`resume`, without blocking this event loop."""
        return await asyncio.to_thread(
            functools.partial(self.resume, interrupt_id=interrupt_id, by=by), thread_id, value
        )

    async def astatus(self, thread_id: str) -> RunStatus:
        """:meth:`status`, without blocking this event loop."""
        return await asyncio.to_thread(self.status, thread_id)

    # -- a person's or a program's commands -----------------------------------------------

    def fork(
        self,
        thread_id: str,
        *,
        at: str | None = None,
        new_thread_id: str | None = None,
        by: str = "waystone",
    ) -> RunStatus:
        """Copy a run into a new queued run, at its latest checkpoint or at ``at``.

        The fork derives its idempotency keys from the original's root thread, so any
        action the original already applied is found in the ledger and reused, never
        applied again; a different action (other arguments) is a new effect.
        """
        return self.status(self._commands.fork(thread_id, at, new_thread_id, by))

    def cancel(self, thread_id: str, *, by: str, reason: str, roll_back: bool = False) -> RunStatus:
        """Move a run to ``failed`` with reason ``cancelled``. The lease token moves on, so
        a process driving it stops at its next write, and starts no effect after it.
        ``roll_back``: the thread's state goes back to before the run (a user's graph's)."""
        self._commands.cancel(thread_id, by, reason, roll_back)
        return self.status(thread_id)

    def signal(
        self,
        thread_id: str,
        name: str,
        payload: dict[str, Any] | None = None,
        *,
        key: str | None = None,
        actor: str = "waystone",
    ) -> RunStatus:
        """Deliver an external event. It wakes the run if it waits for ``name``, and is kept
        for it otherwise (a signal that arrives before the wait begins is not lost).
        ``key`` deduplicates deliveries (a webhook's event id)."""
        self._commands.signal(thread_id, name, payload, key, actor)
        return self.status(thread_id)

    def resume(
        self,
        thread_id: str,
        value: Any,
        *,
        interrupt_id: str | None = None,
        by: str = "waystone",
    ) -> RunStatus:
        """Answer a graph's pending ``interrupt()`` with ``value``: the node that called it
        gets ``value`` back (``Command(resume=...)``) when the run is next driven, by
        ``run`` or an idle worker, from any process. ``interrupt_id`` chooses one of
        several pending interrupts. Giving the same value again changes nothing."""
        self._commands.resume(thread_id, value, interrupt_id, by)
        return self.status(thread_id)

    def requeue(self, thread_id: str, *, by: str, reason: str) -> RunStatus:
        """Put a ``failed`` or ``needs-human`` run back in the queue, saying who and why."""
        self._commands.requeue(thread_id, by, reason)
        return self.status(thread_id)

    def settle(
        self,
        thread_id: str,
        key: str,
        *,
        applied: bool,
        by: str,
        reason: str,
        receipt: dict[str, Any] | None = None,
    ) -> RunStatus:
        """Record what a person found at the provider for the open effect ``key`` of a
        ``failed`` or ``needs-human`` run: ``applied=True``, the call was made (``receipt``:
        what the provider shows), so it is not made again and its receipt is given back;
        ``applied=False``, it was not, so it is made again under its key. The run stays
        where it is: :meth:`requeue` it next."""
        settle(
            self._parts,
            thread_id,
            key,
            applied=applied,
            receipt=receipt,
            by=by,
            reason=reason,
        )
        return self.status(thread_id)

    def approve(
        self,
        thread_id: str,
        *,
        by: str,
        comment: str | None = None,
        args: dict[str, Any] | None = None,
    ) -> RunStatus:
        """Record an approval (or an edit, with ``args``) for the action the run waits on."""
        self._commands.decide(thread_id, "edit" if args else "approve", by, comment, args)
        return self.status(thread_id)

    def reject(self, thread_id: str, *, by: str, reason: str) -> RunStatus:
        """Reject the action the run waits on: the run ends ``failed`` with the reason, at
        once (no worker resumes it for that)."""
        self._commands.decide(thread_id, "reject", by, reason, None)
        return self.status(thread_id)

    def erase(self, subject: str) -> list[str]:
        """Destroy every value the vault holds equal to ``subject`` (a person's email, a
        phone number): the tokens that stood for it, now revealing nothing."""
        return self._parts.vault.erase(subject)

    def prune(
        self, older_than: timedelta, *, dry_run: bool = False, limit: int = 1000
    ) -> dict[str, Any]:
        """Delete the checkpoints of runs that ended more than ``older_than`` ago, keeping
        each run's record, events, effects and a summary of its last state."""
        from waystone._runtime.retention import prune

        return prune(self._parts, self._catalog, older_than, dry_run=dry_run, limit=limit)

    # -- what it shows --------------------------------------------------------------------

    def status(self, thread_id: str) -> RunStatus:
        """A run's state, the node it resumes at and the approval it waits for, from its row
        and its latest checkpoint's: the graph is loaded only when they cannot tell."""
        return self._views.status(thread_id)

    def revealed(self, status: RunStatus) -> RunStatus:
        """``status`` with its pending approval's arguments and its pending interrupts'
        values holding the real values, for an authenticated approver who must see whom
        an action reaches or what a question asks. Display only: the result must not be
        stored or logged."""
        return self._views.revealed(status)

    def list(self, state: str | None = None, limit: int = 100) -> list[RunStatus]:
        return self._views.list(state, limit)

    def log_stream(self, thread_id: str, number: int) -> None:
        """The thread's run ``number`` is logged from its next drive on: its worker keeps
        its live events (tokens, custom writes) in Postgres (see :mod:`waystone._streams`)."""
        from waystone._runs.registry import run_id_of
        from waystone._streams import log

        log.mark_logged(self._parts.db, thread_id, number, run_id_of(thread_id, number))

    def stream_log(
        self, thread_id: str, run_id: str, after: str
    ) -> tuple[int | None, builtins.list[Any]]:
        """The run's current lease token and its live events after key ``after``
        (:func:`waystone._streams.log.read_after`)."""
        from waystone._streams import log

        return log.read_after(self._parts.db, self._parts.reveal, thread_id, run_id, after)

    def sweep_stream_logs(self) -> int:
        """Delete the stream logs of runs that ended longer ago than the retention."""
        from waystone._streams import log

        return log.sweep(self._parts.db, self.settings.stream_retention_s)

    def run_metadata(self, thread_id: str) -> dict[str, dict[str, Any]]:
        """The metadata each of the thread's runs was created with, by run id."""
        return run_options.metadata_of(self._parts, thread_id)

    def answered_interrupts(self, thread_id: str) -> dict[str, str]:
        """Who answered each of the thread's interrupts whose answer no run has taken up
        yet (a ``resume`` signal not consumed), by interrupt id."""
        pending = self._parts.signals.pending(thread_id)
        return {s.dedupe_key: s.actor for s in pending if s.name == RESUME}

    def history(self, thread_id: str) -> dict[str, Any]:
        """Events, node checkpoints and effects of a run, in order."""
        return self._views.history(thread_id)

    # -- threads made before their runs (the LangGraph server API's) ------------------
    # ``owner``: whose threads these are (an API token's owner, a web session's). A thread
    # made with an owner is found by that owner only and by the operator (``owner=None``,
    # who finds every thread); for any other owner it does not exist (UnknownThread).

    def create_thread(
        self,
        thread_id: str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        if_exists: str = "raise",
        owner: str | None = None,
    ) -> Thread:
        """A new thread, with no run yet (a new id when ``thread_id`` is not given); runs
        start on it with :meth:`start`. With the id taken (by a thread or a run):
        :class:`TransitionNotAllowed`, or the thread as it is with ``if_exists="do_nothing"``."""
        return self._threads.create(thread_id, metadata, if_exists, owner)

    def thread(self, thread_id: str, *, owner: str | None = None) -> Thread:
        """A thread, made by :meth:`create_thread` or by a run, if ``owner`` may see it
        (:class:`UnknownThread` if not, or if there is none)."""
        return self._threads.get(thread_id, owner)

    def check_owner(self, thread_id: str, owner: str | None) -> None:
        """Nothing if ``owner`` may see the thread; :class:`UnknownThread` if not: what an
        edge asks before it shows or changes anything of a thread for an owner."""
        self._threads.get(thread_id, owner)

    def redacted(self, value: Any) -> Any:
        """``value`` as Waystone keeps it (personal data as tokens): what an edge compares
        with a thread's or a cron's stored metadata."""
        return self._parts.vault.redact(value)

    def search_threads(
        self,
        *,
        metadata: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        owner: str | None = None,
    ) -> builtins.list[Thread]:
        """``owner``'s threads (all, for the operator) whose metadata holds every key and
        value of ``metadata``, the latest changed first."""
        return self._threads.search(metadata, limit, offset, owner)

    def update_thread(
        self, thread_id: str, metadata: dict[str, Any], *, owner: str | None = None
    ) -> Thread:
        """Set ``metadata``'s keys in the thread's metadata, keeping its others."""
        return self._threads.update(thread_id, metadata, owner)

    def delete_thread(self, thread_id: str, *, by: str, owner: str | None = None) -> None:
        """Take the thread out of every thread view and erase its checkpoints, once its run
        has ended (:class:`TransitionNotAllowed` before); its runs, events and effects are
        kept, as evidence, and its id stays taken."""
        self._threads.delete(thread_id, by, owner)

    def copy_thread(self, thread_id: str, *, by: str, owner: str | None = None) -> Thread:
        """A new thread with the thread's metadata and its run forked (see :meth:`fork`)."""
        return self._edits.copy(thread_id, by, owner)

    def update_state(
        self,
        thread_id: str,
        values: Any,
        *,
        as_node: str | None = None,
        checkpoint_id: str | None = None,
        owner: str | None = None,
    ) -> RunnableConfig:
        """LangGraph's ``update_state`` on the thread, fenced by its run's lease token, once
        its run has ended or stopped at a breakpoint (:class:`TransitionNotAllowed`
        before); the new checkpoint's config."""
        return self._edits.update_state(
            thread_id, values, as_node=as_node, checkpoint_id=checkpoint_id, owner=owner
        )

    @property
    def crons(self) -> Crons:
        """The crons (schedules that start runs; workers tick them): create, search,
        update, delete, and a worker's ``tick``."""
        return self._crons

    @property
    def assistants(self) -> Assistants:
        """The assistants users make (a graph with its config, context and metadata, in
        versions): create, get, update, search, delete."""
        return self._assistants

    @functools.cached_property
    def webhooks(self) -> Webhooks:
        """The runs' webhooks (the LangGraph server API's): armed, claimed, recorded."""
        return Webhooks(self._parts)

    # -- the store (long-term memory, apart from the runs' checkpoints) ------------------

    @property
    def store(self) -> BaseStore:
        """The LangGraph store your graphs' nodes get (``get_store()``), every namespace of
        it: values redacted, and sealed when encrypting; made on first use."""
        return self._parts.store

    def store_for(self, owner: str | None) -> BaseStore:
        """The store as ``owner`` sees it: its own namespaces only (``None``: all)."""
        from waystone._store.owned import OwnedStore

        return OwnedStore(lambda: self._parts.store, lambda: owner)

    def sweep_store(self) -> int:
        """Delete the store's items whose TTL has passed (a worker does it every
        ``store.ttl.sweep_interval_minutes``); how many were deleted."""
        from waystone._store.configured import sweep

        return sweep(self._parts.db)

    @property
    def store_sweep_seconds(self) -> float:
        """Between two sweeps of the store's expired items."""
        return self._parts.store_config.sweep_seconds

    # -- for the edges: the runtime's Postgres and its logging ---------------------------

    @property
    def database_url(self) -> str:
        return self._parts.db.url

    @contextmanager
    def connection(self) -> Iterator[Conn]:
        """A connection of the runtime's pool, for an edge's own reads (a dashboard's
        picture) and its own tables (web sessions); runs change only through the
        runtime's methods."""
        with self._parts.db.connection() as conn:
            yield conn

    def checkpoint_serde(self) -> SerializerProtocol:
        """How the runtime's saver reads checkpoint values (unsealed, its allowed types):
        every graph it drives is compiled with that saver, so this reads any graph's."""
        return self._parts.saver.serde

    def log_filter(self) -> logging.Filter:
        """A logging filter that replaces personal data in log records with tokens."""
        return self._parts.vault.log_filter()
