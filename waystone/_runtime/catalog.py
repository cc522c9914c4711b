"""What a runtime drives, by name: a user's graphs and the presets' agents, each as an
:class:`Entry` (its compiled graph and how a run of it goes), made on first use.

A user's graph gets the general entry: its input passed as it is, the run done when the
graph ends, a new run on the thread after that. A preset (an object with ``name`` and
``entry(parts)``, as :class:`~waystone.preset.spec.AgentSpec` is) makes its own entry from
the runtime's parts: the core knows nothing of what the preset's graph does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

from waystone._identifiers import check_identifier
from waystone._runtime.graphs import GraphSource, check_names
from waystone.errors import BadInput

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

    from waystone._runs.registry import Run
    from waystone._runtime.parts import Parts


@dataclass(frozen=True)
class Entry:
    """One registered name: its compiled graph, and how the runtime drives a run of it.

    ``step_budget_s``: the longest a drive may go without progress before it is stuck.
    ``first_input``: the graph's input made from the run (the run's input, by default).
    ``ending``: the run's end as the graph records it in its values (evidence holding an
    ``outcome`` of ``state`` and ``reason``), with which the run ends in its last
    checkpoint's transaction; ``None``: the run is done when the graph ends.
    ``one_run``: the thread ends with its run; else a thread takes one run after another.
    ``reopen``: makes an ended graph resumable again, before a requeue.
    ``decide``: records a person's decision on an approval the run waits on.
    """

    graph: CompiledStateGraph[Any]
    step_budget_s: float
    check_input: Callable[[Any], Any]
    describe: Callable[[Any], str]
    recursion_limit: int | None = None
    first_input: Callable[[Run], Any] | None = None
    ending: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None
    one_run: bool = False
    effects_in_nodes: bool = True
    async_only: bool = False
    reopen: Callable[[Run], None] | None = None
    decide: Callable[[str, str, str, str | None, dict[str, Any] | None], None] | None = None


class Preset(Protocol):
    """What a preset's agent gives the catalog: its name, and its entry."""

    @property
    def name(self) -> str: ...

    def entry(self, parts: Parts) -> Entry: ...


def _graph_input(value: Any) -> Any:
    if value is None:  # LangGraph's resume, not an input: a new run needs one
        raise BadInput("a graph's run needs an input (--input), not null")
    return value


class Catalog:
    """The names a runtime drives, and their entries. ``agents``: the presets' agents, or a
    function giving them on first use (``None``: none); ``graphs``: a user's graphs
    (``None``: those ``WAYSTONE_GRAPHS`` names)."""

    def __init__(
        self,
        parts: Parts,
        agents: Mapping[str, Preset] | Callable[[], Mapping[str, Preset]] | None,
        graphs: Mapping[str, GraphSource] | None,
    ) -> None:
        self._parts = parts
        self._given_agents = agents is not None
        self._agents: dict[str, Preset] | None = None
        self._agents_of: Callable[[], Mapping[str, Preset]] = (
            agents if callable(agents) else functools.partial(dict, agents or {})
        )
        self._sources: dict[str, GraphSource] | None = dict(graphs) if graphs else None
        if isinstance(agents, Mapping) and graphs is not None:
            check_names(agents, graphs)
        self._entries: dict[str, Entry] = {}

    @property
    def agents(self) -> dict[str, Preset]:
        if self._agents is None:
            self._agents = dict(self._agents_of())
            if self._sources is not None:
                check_names(self._agents, self._sources)
        return self._agents

    @property
    def graphs(self) -> dict[str, GraphSource]:
        if self._sources is None:
            from waystone._runtime.graphs import configured_graphs

            self._sources = configured_graphs(self._parts.settings)
            check_names(self.agents, self._sources)
        return self._sources

    def names(self) -> list[str]:
        return sorted({*self.agents, *self.graphs})

    def is_graph(self, name: str) -> bool:
        return name not in self.agents and name in self.graphs

    def drives(self, name: str) -> bool:
        return name in self.agents or name in self.graphs

    def known(self, name: str) -> str:
        if not self.drives(name):
            known = ", ".join(self.names()) or "none"
            told = f"unknown agent or graph {name!r} (registered: {known})"
            if not self._given_agents:  # a notebook's Runtime(): say what to give it
                told += (
                    f"; give it to the runtime: Runtime(graphs={{{name!r}: graph}}), or"
                    f" Runtime(agents={{{name!r}: spec}}) for an AgentSpec (the demo's:"
                    ' Runtime(agents={"refund": refund.build()}), refund from waystone.examples)'
                )
            raise BadInput(told)
        return name

    def register(self, agent: Preset) -> None:
        self.agents[agent.name] = agent
        self._entries.pop(agent.name, None)

    def register_graph(self, name: str, source: GraphSource) -> None:
        check_names(self.agents, {name: source})
        self.graphs[check_identifier("agent name", name)] = source
        self._entries.pop(name, None)

    def entry(self, name: str) -> Entry:
        """``name``'s entry, its graph compiled on first use (:class:`BadInput` when it is
        not registered, or its graph cannot be built)."""
        found = self._entries.get(name)
        if found is None:
            self.known(name)
            found = self._entries[name] = (
                self._graph_entry(name)
                if self.is_graph(name)
                else self.agents[name].entry(self._parts)
            )
        return found

    def _graph_entry(self, name: str) -> Entry:
        from waystone._runtime.graphs import compile_graph, needs_async

        settings = self._parts.settings
        # a Pregel (an @entrypoint's) has what the runtime uses of a compiled StateGraph
        parts = self._parts
        compiled = compile_graph(
            name, self.graphs[name], parts.saver, settings.tools, parts.graph_store
        )
        return Entry(
            graph=cast("CompiledStateGraph[Any]", compiled),
            # its nodes' longest wait is unknown: that of a model call, as for the preset's
            step_budget_s=settings.model_timeout_s + settings.step_margin_s,
            check_input=_graph_input,
            describe=lambda _: f"a run of the graph {name}",
            async_only=needs_async(compiled),
        )

    async def agraph(self, name: str) -> CompiledStateGraph[Any]:
        """``name``'s graph, saving natively on the running loop's async pool (one per loop:
        see :mod:`waystone._checkpointing.loops`)."""
        from waystone._checkpointing.saver import WaystoneSaver

        graph = self.entry(name).graph
        here = await self._parts.loop_savers.current()
        made = here.graphs.get(name)
        if made is None or made[0] is not graph:  # new, or registered again since
            saver = graph.checkpointer
            twin = (
                graph.copy(update={"checkpointer": here.twin(saver)})
                if isinstance(saver, WaystoneSaver)
                else graph
            )
            made = here.graphs[name] = (graph, twin)
        found: CompiledStateGraph[Any] = made[1]
        return found
