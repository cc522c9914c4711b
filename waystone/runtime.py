"""The facade the CLI, notebooks and servers use: start, run, approve, inspect.

A :class:`Runtime` holds one connection pool. Every method works from any process: all
that matters lives in Postgres, keyed by ``thread_id``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import uuid
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

from waystone.checkpointing.database import FENCE_SQL, Database, meaning_of
from waystone.checkpointing.migrations import migrate
from waystone.checkpointing.position import next_nodes
from waystone.config import Settings
from waystone.errors import (
    BadInput,
    DatabaseUnavailable,
    LeaseLost,
    NeedsHuman,
    TransitionNotAllowed,
)
from waystone.graphs import GraphSource, check_names
from waystone.hints import command
from waystone.identifiers import check_identifier
from waystone.privacy.keys import at_rest_sealer, load_key
from waystone.privacy.readable import refuse_personal_data
from waystone.privacy.seal import open_value
from waystone.privacy.vault import Vault
from waystone.runs import driver, leases
from waystone.runs.registry import PastRun, Run, RunRegistry, process_owner
from waystone.runs.signals import APPROVAL, RESUME, SignalBox
from waystone.status import RunStatus as RunStatus
from waystone.status import not_runnable, past_status, status_of

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.runtime import RunControl

    from waystone.checkpointing.loops import LoopSavers
    from waystone.checkpointing.saver import WaystoneSaver
    from waystone.effects.context import EffectContext
    from waystone.effects.ledger import Ledger
    from waystone.preset.decisions import Decisions
    from waystone.preset.spec import AgentSpec

logger = logging.getLogger(__name__)

REQUEUABLE = ("failed", "needs-human")


class Runtime:
    """Start, drive, approve and inspect runs. Close it (or use ``with``) when done."""

    def __init__(
        self,
        settings: Settings | None = None,
        agents: Mapping[str, AgentSpec] | None = None,
        *,
        graphs: Mapping[str, GraphSource] | None = None,
        database_url: str | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env(database_url=database_url)
        self._agents: dict[str, AgentSpec] | None = dict(agents) if agents else None
        self._sources: dict[str, GraphSource] | None = dict(graphs) if graphs else None
        if agents is not None and graphs is not None:
            check_names(agents, graphs)
        self.db = Database.open(self.settings)
        try:
            migrate(self.db)
        except BaseException:
            self.db.close()
            raise
        try:
            self.vault = Vault(self.db, load_key(self.settings.home))
            self.vault.check_key()
            self.sealer = at_rest_sealer()
        except BaseException:
            self.db.close()
            raise
        protect, reveal = self._protect, self._reveal
        self.registry = RunRegistry(self.db, redact=protect, reveal=reveal)
        self.signals = SignalBox(self.db, redact=protect, reveal=reveal)
        self._graphs: dict[str, CompiledStateGraph[Any]] = {}
        self._budgets: dict[str, float] = {}  # agent -> its step budget (see `leases`)
        self._async_only: set[str] = set()  # graphs with async-only nodes (see `drive`)
        self.owner = process_owner()

    # The agents, the saver and the ledger are made on first use: a command that only reads
    # runs (``status``, ``list``) never imports LangGraph, the agents' tools or pydantic.

    @property
    def agents(self) -> dict[str, AgentSpec]:
        """The agents this runtime drives: those given, or the examples and those
        ``WAYSTONE_AGENTS`` names."""
        if self._agents is None:
            from waystone.preset.agents import default_agents

            self._agents = default_agents()
            if self._sources is not None:
                check_names(self._agents, self._sources)
        return self._agents

    @property
    def graph_sources(self) -> dict[str, GraphSource]:
        """The user's graphs this runtime drives: those given, or those
        ``WAYSTONE_GRAPHS`` names."""
        if self._sources is None:
            from waystone.graphs import graphs_from_env

            self._sources = graphs_from_env()
            check_names(self.agents, self._sources)
        return self._sources

    def names(self) -> list[str]:
        """Every agent and graph this runtime can drive (what its claims take)."""
        return sorted({*self.agents, *self.graph_sources})

    def is_graph(self, name: str) -> bool:
        """Whether ``name`` is a user's graph (not an agent of the preset)."""
        return name not in self.agents and name in self.graph_sources

    @cached_property
    def saver(self) -> WaystoneSaver:
        from waystone.checkpointing.saver import make_saver

        return make_saver(
            self.db, self.vault.redact, self.sealer, allowed_modules=self.settings.allowed_modules
        )

    @cached_property
    def ledger(self) -> Ledger:
        from waystone.effects.ledger import Ledger

        return Ledger(self.db, redact=self._protect, reveal=self._reveal, ride=self.saver.ride)

    def _protect(self, value: Any) -> Any:
        """On the way to Postgres: personal data tokenised, then sealed when encrypting."""
        redacted = self.vault.redact(value)
        return self.sealer.seal(redacted) if self.sealer is not None else redacted

    def _reveal(self, value: Any) -> Any:
        return open_value(self.sealer, value)

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if "_loop_savers" in self.__dict__:
            self._loop_savers.close()
        self.db.close()

    async def aclose(self) -> None:
        """:meth:`close`, from a coroutine: this loop's async pool is closed before it
        returns."""
        if "_loop_savers" in self.__dict__:
            await self._loop_savers.aclose()
        await asyncio.to_thread(self.db.close)

    @cached_property
    def _loop_savers(self) -> LoopSavers:
        from waystone.checkpointing.loops import LoopSavers

        return LoopSavers(self.settings, self.db.url)

    async def agraph(self, agent: str) -> CompiledStateGraph[Any]:
        """:meth:`graph`, saving natively on the running loop's async pool (one per loop:
        see :mod:`waystone.checkpointing.loops`)."""
        from waystone.checkpointing.saver import WaystoneSaver

        graph = self.graph(agent)
        here = await self._loop_savers.current()
        made = here.graphs.get(agent)
        if made is None or made[0] is not graph:  # new, or registered again since
            saver = graph.checkpointer
            twin = (
                graph.copy(update={"checkpointer": here.twin(saver)})
                if isinstance(saver, WaystoneSaver)
                else graph
            )
            made = here.graphs[agent] = (graph, twin)
        found: CompiledStateGraph[Any] = made[1]
        return found

    # -- agents and graphs -------------------------------------------------------------

    def register(self, agent: AgentSpec) -> None:
        self.agents[agent.name] = agent
        self._graphs.pop(agent.name, None)
        self._budgets.pop(agent.name, None)

    def register_graph(self, name: str, source: GraphSource) -> None:
        """Drive ``source`` (a StateGraph, a function returning one, an ``@entrypoint``)
        under ``name``, as ``Runtime(graphs=...)`` does."""
        check_names(self.agents, {name: source})
        self.graph_sources[check_identifier("agent name", name)] = source
        self._graphs.pop(name, None)
        self._async_only.discard(name)

    def agent(self, name: str) -> AgentSpec:
        try:
            return self.agents[name]
        except KeyError:
            if name in self.graph_sources:
                raise BadInput(f"{name!r} is a graph, not an agent of the preset") from None
            raise self._unknown(name) from None

    def _unknown(self, name: str) -> BadInput:
        known = ", ".join(self.names()) or "none"
        return BadInput(f"unknown agent or graph {name!r} (registered: {known})")

    def known(self, name: str) -> str:
        """``name`` if this runtime drives it (an agent or a graph); :class:`BadInput` if
        not."""
        if name not in self.agents and name not in self.graph_sources:
            raise self._unknown(name)
        return name

    def graph(self, agent: str) -> CompiledStateGraph[Any]:
        """The compiled graph of an agent or a user's graph, checkpointed in this runtime's
        Postgres."""
        if agent not in self._graphs and self.is_graph(agent):
            from waystone.graphs import compile_graph, needs_async

            # a Pregel (an @entrypoint's) has what the runtime uses of a compiled StateGraph
            compiled = compile_graph(agent, self.graph_sources[agent], self.saver)
            self._graphs[agent] = cast("CompiledStateGraph[Any]", compiled)
            if needs_async(compiled):
                self._async_only.add(agent)
            # its nodes' longest wait is unknown: that of a model call, as for the preset's
            self._budgets[agent] = self.settings.model_timeout_s + self.settings.step_margin_s
        if agent not in self._graphs:
            from waystone.preset.graph.builder import build_graph
            from waystone.preset.graph.ports import Ports

            ports = Ports(
                agent=self.agent(agent),
                ledger=self.ledger,
                registry=self.registry,
                reveal=self.vault.reveal,
                model_timeout_s=self.settings.model_timeout_s,
                tool_timeouts=self.settings.tool_timeouts,
                tool_settle=self.settings.tool_settle,
            )
            self._graphs[agent] = build_graph(ports, self.saver)
            self._budgets[agent] = ports.step_budget(self.settings.step_margin_s)
        return self._graphs[agent]

    def config(self, thread_id: str) -> RunnableConfig:
        return driver.graph_config(thread_id)

    # -- commands ----------------------------------------------------------------------

    def start(
        self,
        agent: str,
        input: dict[str, Any],
        *,
        goal: str | None = None,
        thread_id: str | None = None,
        key: str | None = None,
    ) -> RunStatus:
        """Create a queued run. With ``key`` already used, the existing run comes back."""
        thread_id, goal, clean = self._new(agent, input, goal, thread_id, key)
        run, created = self.registry.create(
            thread_id=thread_id,
            agent=agent,
            goal=goal,
            input=clean,
            start_key=key,
            next_run=self.is_graph(agent),  # the preset's thread ends with its outcome
        )
        if not created and (run.agent, run.input) != (agent, clean):
            raise TransitionNotAllowed(
                f"start key {key!r} was used by run {run.thread_id} with another agent or "
                "input; a key starts one run (choose another key)"
            )
        if isinstance(run, PastRun):  # a later run followed it on its thread
            return past_status(run)
        if created:  # nothing has run yet: no step, no approval, no signal to read
            return status_of(run, None, None)
        return self.status(run.thread_id)

    def _new(
        self,
        agent: str,
        input: dict[str, Any],
        goal: str | None,
        thread_id: str | None,
        key: str | None,
    ) -> tuple[str, str, dict[str, Any]]:
        """A new run's thread id, goal and input, checked (before anything is written, the
        vault's values included) and redacted. A graph's input is passed to it as it is."""
        self.known(check_identifier("agent name", agent))
        if thread_id is not None:
            check_identifier("thread id", thread_id)
        if key is not None:
            check_identifier("start key", key)
        self._refuse_personal_data("thread id", thread_id)
        self._refuse_personal_data("start key", key)
        if self.is_graph(agent):
            self.graph(agent)  # a source that is no graph is refused before anything is kept
            if input is None:  # LangGraph's resume, not an input: a new run needs one
                raise BadInput("a graph's run needs an input (--input), not null")
            clean = self.vault.redact(input)
            described = f"a run of the graph {agent}"
        else:
            if not isinstance(input, dict):
                raise BadInput("--input must be a JSON object")
            spec = self.agent(agent)
            clean = self.vault.redact(spec.validate_input(input))
            described = spec.describe_goal(clean)
        return (
            thread_id or f"{agent}-{uuid.uuid4().hex[:12]}",
            self.vault.redact(goal) if goal else described,
            clean,
        )

    def invoke(
        self,
        agent: str,
        input: dict[str, Any],
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
        claimed = self._create_claimed(agent, input, goal, thread_id, key)
        if claimed is not None:
            return self._settle(claimed)
        existing = self.start(agent, input, goal=goal, thread_id=thread_id, key=key)
        if existing.run_id is not None and existing.run_id != self._current_run_id(existing):
            return existing  # the key's run ended before a later one began on its thread
        try:
            return self.run(existing.thread_id)
        except TransitionNotAllowed:
            return self.status(existing.thread_id)

    def _create_claimed(
        self,
        agent: str,
        input: dict[str, Any],
        goal: str | None,
        thread_id: str | None,
        key: str | None,
    ) -> Run | None:
        """A new run, created claimed by this process; ``None`` when its start key or
        thread id is taken."""
        new_id, text, clean = self._new(agent, input, goal, thread_id, key)
        return self.registry.create_claimed(
            thread_id=new_id,
            agent=agent,
            goal=text,
            input=clean,
            start_key=key,
            owner=self.owner,
            lease_seconds=self.settings.lease_seconds,
            next_run=self.is_graph(agent),
        )

    def _current_run_id(self, status: RunStatus) -> str | None:
        return self.registry.get(status.thread_id).run_id

    def run(self, thread_id: str) -> RunStatus:
        """Drive a run in this process until it waits or ends (the same claim as a worker's,
        so it never runs a thread a worker holds)."""
        return self._settle(self._claim(thread_id))

    def _claim(self, thread_id: str) -> Run:
        claimed = self.registry.claim(
            owner=self.owner,
            lease_seconds=self.settings.lease_seconds,
            thread_id=thread_id,
            agents=self.names(),  # one this process does not know is left alone
        )
        if claimed is None:
            current = self.registry.get(thread_id)  # an unknown thread id: UnknownThread
            self.known(current.agent)  # an agent this process does not know: BadInput
            raise TransitionNotAllowed(not_runnable(current))
        return claimed

    def _settle(self, claimed: Run) -> RunStatus:
        """Drive a claimed run; its status once it waits or ends."""
        return self._status_after(claimed, self.drive(claimed))

    def _status_after(self, claimed: Run, settled: Run | None) -> RunStatus:
        if settled is not None and settled.state == "done":
            # the graph ended on its goal: no next step, nothing to approve, and the
            # approvals it left were consumed as stale
            return status_of(
                dataclasses.replace(settled, run_number=claimed.run_number), None, None
            )
        return self.status(claimed.thread_id)

    # -- on an event loop: the graph's async nodes, effects and models run on it -------

    async def ainvoke(
        self,
        agent: str,
        input: dict[str, Any],
        *,
        goal: str | None = None,
        thread_id: str | None = None,
        key: str | None = None,
    ) -> RunStatus:
        """:meth:`invoke`, with the graph driven by ``ainvoke`` on this event loop (see
        :meth:`adrive`)."""
        claimed = await asyncio.to_thread(self._create_claimed, agent, input, goal, thread_id, key)
        if claimed is not None:
            return await self._asettle(claimed)
        existing = await self.astart(agent, input, goal=goal, thread_id=thread_id, key=key)
        current = await asyncio.to_thread(self._current_run_id, existing)
        if existing.run_id is not None and existing.run_id != current:
            return existing  # the key's run ended before a later one began on its thread
        try:
            return await self.arun(existing.thread_id)
        except TransitionNotAllowed:
            return await self.astatus(existing.thread_id)

    async def arun(self, thread_id: str) -> RunStatus:
        """:meth:`run`, with the graph driven by ``ainvoke`` on this event loop."""
        return await self._asettle(await asyncio.to_thread(self._claim, thread_id))

    async def _asettle(self, claimed: Run) -> RunStatus:
        settled = await self.adrive(claimed)
        return await asyncio.to_thread(self._status_after, claimed, settled)

    async def astart(
        self,
        agent: str,
        input: dict[str, Any],
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
        graph = self._graph_of_claimed(claimed)
        if claimed.agent in self._async_only and not _in_loop():
            return asyncio.run(self.adrive(claimed, control, on_stuck))
        with self._leased(claimed, on_stuck):
            try:
                return driver.drive(
                    graph,
                    claimed,
                    self.registry,
                    self.signals,
                    control=control,
                    **self._drive_options(claimed),
                )
            except Exception as exc:
                self._stopped(claimed, exc)
            finally:  # a hand-over nothing took under this lease never will
                self.ledger.untaken(claimed.thread_id, claimed.lease_token)
        return None

    def _graph_of_claimed(self, claimed: Run) -> CompiledStateGraph[Any]:
        """The claimed run's graph; when this process cannot build it, the lease goes back
        at once (another process may have a graph that builds) and the error is raised."""
        try:
            return self.graph(claimed.agent)
        except BadInput:
            self.registry.release(claimed.thread_id, claimed.lease_token)
            raise

    async def adrive(
        self,
        claimed: Run,
        control: RunControl | None = None,
        on_stuck: Callable[[], None] | None = None,
    ) -> Run | None:
        """:meth:`drive` on this event loop: the graph runs with ``ainvoke``, so its async
        nodes, effects and models run here; what the drive records between its steps runs
        in a worker thread. Its checkpoints are saved on this loop's async pool."""
        await asyncio.to_thread(self._graph_of_claimed, claimed)  # builds, or gives it back
        graph = await self.agraph(claimed.agent)
        with self._leased(claimed, on_stuck):
            try:
                return await driver.adrive(
                    graph,
                    claimed,
                    self.registry,
                    self.signals,
                    control=control,
                    **self._drive_options(claimed),
                )
            except Exception as exc:
                await asyncio.to_thread(self._stopped, claimed, exc)
            finally:
                self.ledger.untaken(claimed.thread_id, claimed.lease_token)
        return None

    def _leased(
        self, claimed: Run, on_stuck: Callable[[], None] | None
    ) -> AbstractContextManager[object]:
        """The heartbeat that keeps a drive's lease while it makes progress."""
        return leases.heartbeat(
            self.registry,
            claimed,
            self.settings.lease_seconds,
            budget_s=self._budgets[claimed.agent],
            on_stuck=on_stuck,
        )

    def _drive_options(self, claimed: Run) -> dict[str, Any]:
        if self.is_graph(claimed.agent):
            return {"recursion_limit": None, "preset": False, "context": self.effects_context}
        from waystone.preset.graph.state import initial_state

        return {
            "recursion_limit": self._recursion_limit(claimed.agent),
            "preset": True,
            "context": None,
            "start": lambda run: initial_state(run.goal, run.input),
        }

    def _stopped(self, claimed: Run, exc: Exception) -> None:
        """What a drive that raised ``exc`` leaves: a drained run's lease released, a run
        that failed or needs a person moved there; raises :class:`LeaseLost` and
        :class:`DatabaseUnavailable`, after which this process writes nothing more."""
        from langgraph.errors import GraphDrained

        log = {"thread_id": claimed.thread_id, "lease_token": claimed.lease_token}
        if isinstance(exc, GraphDrained):
            # intents ridden with authorize's checkpoint, never called: no attempt
            handed, untaken = self.ledger.hand_back(claimed.thread_id, claimed.lease_token)
            released = self.registry.release(claimed.thread_id, claimed.lease_token)
            how = "released" if released else "had already lost"
            msg = "drained: finished the step, %s the lease, handed back %d of %d intents"
            logger.info(msg, how, handed, untaken, extra=log)
            return
        meaning = meaning_of(exc)
        if isinstance(meaning, LeaseLost | DatabaseUnavailable):
            if isinstance(meaning, LeaseLost):
                # receipts that were to commit with a checkpoint the fence refused
                late = self.ledger.late_receipts(claimed.thread_id, claimed.lease_token)
                logger.warning("stopped driving: %s", meaning, extra={**log, "late": late})
            if meaning is exc:
                raise exc  # never from itself: its chain would be a cycle
            raise meaning from exc
        if isinstance(meaning, NeedsHuman):
            logger.warning("run needs a person: %s", meaning, extra=log)
            self.registry.transition(
                claimed.thread_id,
                "needs-human",
                reason=str(meaning),
                evidence={"error": repr(exc)},
                from_states=("running",),
                lease_token=claimed.lease_token,
            )
            return
        logger.error("run failed", exc_info=exc, extra=log)
        self.registry.transition(
            claimed.thread_id,
            "failed",
            reason=f"error: {type(exc).__name__}: {exc}",
            evidence={"error": repr(exc)},
            from_states=("running",),
            lease_token=claimed.lease_token,
        )

    def _recursion_limit(self, agent: str) -> int:
        """The preset's: each step's few nodes, and each correction of its proposal."""
        from waystone.preset.proposers import correction_budget

        spec = self.agent(agent)
        return spec.max_steps * (8 + correction_budget(spec.proposer)) + 20

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
        by = self._who(by)
        self._refuse_personal_data("thread id", new_thread_id)
        source = self.registry.get(thread_id)
        self.known(source.agent)
        if new_thread_id is not None:
            check_identifier("thread id", new_thread_id)
        if at is not None and not self.db.fetch_one("has_checkpoint", thread_id=thread_id, at=at):
            raise BadInput(
                f"run {thread_id} has no checkpoint {at!r} (see {command('history', thread_id)})"
            )
        target = new_thread_id or f"{source.agent}-{uuid.uuid4().hex[:12]}"
        # one transaction: the fork becomes runnable (and a worker is woken) only with its
        # checkpoints, so no worker can start it from the beginning
        with self.db.transaction() as conn:
            run, created = self.registry.create(
                thread_id=target,
                agent=source.agent,
                goal=source.goal,
                input=source.input,
                actor=by,
                forked_from=thread_id,
                key_namespace=source.key_namespace or source.thread_id,
                reason=f"forked from {thread_id}" + (f" at {at}" if at else ""),
                conn=conn,
            )
            if not created or not isinstance(run, Run):
                raise TransitionNotAllowed(f"a run with thread id {target!r} already exists")
            conn.execute(FENCE_SQL, (str(run.lease_token),))
            self.saver.copy_thread(thread_id, target, until=at, conn=conn)
        self.registry.event(
            thread_id,
            "forked",
            f"forked into {target} by {by}",
            {"fork": target, "at": at},
            actor=by,
        )
        return self.status(target)

    def cancel(self, thread_id: str, *, by: str, reason: str) -> RunStatus:
        """Move a run to ``failed`` with reason ``cancelled``. The lease token moves on, so
        a process driving it stops at its next write (the next step boundary)."""
        by = self._who(by)
        run = self.registry.get(thread_id)
        if run.state == "done":
            raise TransitionNotAllowed(f"run {thread_id} is done; a done run cannot be cancelled")
        self.registry.transition(
            thread_id,
            "failed",
            reason=f"cancelled by {by}: {reason}",
            evidence={"cancelled": True, "by": by, "reason": reason},
            from_states=("queued", "running", "waiting", "needs-human"),
            actor=by,
            bump=True,
        )
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
        if not name or name in (APPROVAL, RESUME):
            raise BadInput(
                "a signal needs a name other than 'approval' (use `approve`) or 'resume' "
                "(use `resume`)"
            )
        self._refuse_personal_data("signal name", name)
        self._refuse_personal_data("signal key", key)
        actor = self._who(actor)
        run = self.registry.get(thread_id)
        if run.state == "done":
            raise TransitionNotAllowed(f"run {thread_id} is done; it takes no more signals")
        sig, created = self.signals.record(
            thread_id, name, key or uuid.uuid4().hex, payload or {}, actor=actor
        )
        self.registry.event(
            thread_id,
            "signal" if created else "signal-repeated",
            f"signal {name!r} received",
            {"signal_id": sig.id, "payload": payload or {}},
            actor=actor,
        )
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
        by = self._who(by)
        run = self.registry.get(thread_id)
        pending = [i["id"] for i in run.evidence.get("interrupts") or []]
        if run.state != "waiting" or run.waiting_for != RESUME or not pending:
            raise TransitionNotAllowed(
                f"run {thread_id} is {run.state} and waits for no value "
                f"(see {command('status', thread_id)})"
            )
        if interrupt_id is None:
            if len(pending) > 1:
                raise BadInput(
                    f"run {thread_id} waits on {len(pending)} interrupts; choose one with "
                    f"--interrupt-id ({', '.join(pending)})"
                )
            interrupt_id = pending[0]
        elif interrupt_id not in pending:
            raise BadInput(
                f"run {thread_id} has no pending interrupt {interrupt_id!r} "
                f"(pending: {', '.join(pending)})"
            )
        record = {"value": value}
        sig, created = self.signals.record(thread_id, RESUME, interrupt_id, record, actor=by)
        if not created and sig.payload != self.vault.redact(record):
            raise TransitionNotAllowed(
                f"another value is already recorded for interrupt {interrupt_id}; "
                "it is used when the run goes on"
            )
        self.registry.event(
            thread_id,
            "resume" if created else "resume-repeated",
            f"a value for interrupt {interrupt_id}, given by {by}",
            {"interrupt_id": interrupt_id, "signal_id": sig.id},
            actor=by,
        )
        return self.status(thread_id)

    def requeue(self, thread_id: str, *, by: str, reason: str) -> RunStatus:
        """Put a ``failed`` or ``needs-human`` run back in the queue, saying who and why."""
        if not reason.strip():
            raise BadInput("requeue needs a reason: what was checked or fixed")
        by = self._who(by)
        run = self.registry.get(thread_id)
        if run.pruned_at is not None:
            raise TransitionNotAllowed(
                f"run {thread_id}'s checkpoints were pruned; fork or start it anew instead"
            )
        if run.state not in REQUEUABLE:
            raise TransitionNotAllowed(
                f"run {thread_id} is {run.state}; only failed or needs-human runs are requeued"
            )
        if not self.is_graph(run.agent):  # a user's graph resumes where it stopped
            from waystone.preset.graph.reopen import reopen

            graph = self.graph(run.agent)
            reopen(
                graph,
                self.agent(run.agent),
                driver.graph_config(run.thread_id, lease_token=run.lease_token),
                ended_at="authorize" if self._decisions.rejected(graph, thread_id) else None,
            )
        # A person's action on a run nobody holds: it writes with the run's current token,
        # so a zombie that still thinks it holds the run stays fenced out.
        with self.db.transaction(fence=run.lease_token) as conn:
            reset = self.db.execute(
                "reset_effects_for_requeue",
                conn=conn,
                thread_id=thread_id,
                note=f"requeued by {by}",
            )
            self.registry.transition(
                thread_id,
                "queued",
                reason=f"requeued by {by}: {reason}",
                evidence={"by": by, "effects_reset": [r["key"] for r in reset]},
                from_states=REQUEUABLE,
                actor=by,
                conn=conn,
            )
        return self.status(thread_id)

    def status(self, thread_id: str) -> RunStatus:
        """A run's state, the node it resumes at and the approval it waits for, from its row
        and its latest checkpoint's: the graph is loaded only when they cannot tell."""
        run = self.registry.get(thread_id)
        nodes = next_nodes(
            self.db.fetch_one("graph_position", thread_id=thread_id, checkpoint_id=None)
        )
        if nodes is None:
            return self._status_from_graph(run)
        pending = None
        if run.state == "waiting" and run.waiting_for == APPROVAL:
            pending = run.evidence.get("pending_approval")  # what the run's wait recorded
        return status_of(run, nodes[0] if nodes else None, pending, self._lease(run))

    def revealed(self, status: RunStatus) -> RunStatus:
        """``status`` with its pending approval's arguments and its pending interrupts'
        values holding the real values, for an authenticated approver who must see whom
        an action reaches or what a question asks. Display only: the result must not be
        stored or logged."""
        if status.interrupts:
            status = dataclasses.replace(
                status,
                interrupts=[
                    {**i, "value": self.vault.reveal_shown(i["value"])} for i in status.interrupts
                ],
            )
        pending = status.pending_approval
        if not pending or "args" not in pending:
            return status
        shown = {**pending, "args": self.vault.reveal_shown(pending["args"])}
        return dataclasses.replace(status, pending_approval=shown)

    def _status_from_graph(self, run: Run) -> RunStatus:
        pending, step = None, None
        if run.agent in self.agents or run.agent in self.graph_sources:
            graph = self.graph(run.agent)
            snapshot = graph.get_state(self.config(run.thread_id))
            step = snapshot.next[0] if snapshot.next else None
            if run.state == "waiting":
                waiting_on = driver.waiting_interrupt(snapshot)
                if waiting_on is not None and driver.kind_of(waiting_on) == APPROVAL:
                    pending = waiting_on.value
        return status_of(run, step, pending, self._lease(run))

    def _lease(self, run: Run) -> dict[str, Any] | None:
        """A running run's lease: its owner and its expiry, by Postgres' clock."""
        return self.registry.lease(run.thread_id) if run.state == "running" else None

    def list(self, state: str | None = None, limit: int = 100) -> list[RunStatus]:
        return [status_of(r, None, None) for r in self.registry.list_runs(state, limit)]

    def approve(
        self,
        thread_id: str,
        *,
        by: str,
        comment: str | None = None,
        args: dict[str, Any] | None = None,
    ) -> RunStatus:
        """Record an approval (or an edit, with ``args``) for the action the run waits on."""
        choice = "edit" if args else "approve"
        self._decisions.decide(thread_id, choice, self._who(by), comment, args)
        return self.status(thread_id)

    def _refuse_personal_data(self, kind: str, value: str | None) -> None:
        """Identifiers are stored readable: one holding personal data is refused."""
        refuse_personal_data(kind, value, self.vault.detector)

    def _who(self, by: str) -> str:
        """Who acted, as stored: an email or phone given as a name becomes a token."""
        return str(self.vault.redact(check_identifier("by", by)))

    def reject(self, thread_id: str, *, by: str, reason: str) -> RunStatus:
        """Reject the action the run waits on: the run ends ``failed`` with the reason, at
        once (no worker resumes it for that)."""
        self._decisions.decide(thread_id, "reject", self._who(by), reason, None)
        return self.status(thread_id)

    @cached_property
    def _decisions(self) -> Decisions:
        from waystone.preset.decisions import Decisions

        return Decisions(
            self.db, self.registry, self.signals, self.vault.redact, self.graph, self.agent
        )

    def history(self, thread_id: str) -> dict[str, Any]:
        """Events, node checkpoints and effects of a run, in order."""
        from waystone.history import history

        return history(self, thread_id)


def _in_loop() -> bool:
    """Whether this thread runs an event loop (where ``asyncio.run`` cannot start one)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
