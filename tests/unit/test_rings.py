"""The package's rings, as docs/architecture.md draws them: the edges (the command line,
the server, the worker, the dashboard, the examples) depend on the core and the preset,
never the reverse, and the core does not import the agent preset at load time (the
runtime composes it, importing it where it builds an agent's graph)."""

from __future__ import annotations

from tests.unit.test_import_cycles import PACKAGE, import_graph

EDGES = (
    "waystone.cli",
    "waystone.server",
    "waystone.routes",
    "waystone.pages",
    "waystone.web_security",
    "waystone.worker",
    "waystone.async_worker",
    "waystone.dashboard",
    "waystone.examples",
    "waystone.__main__",
)
PRESET = ("waystone.preset",)


def _in(module: str, ring: tuple[str, ...]) -> bool:
    return any(module == r or module.startswith(r + ".") for r in ring)


def test_nothing_below_the_edges_imports_them() -> None:
    graph = import_graph(PACKAGE, "waystone")
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if not _in(module, EDGES) and module != "waystone"
        for target in targets
        if _in(target, EDGES)
    )
    assert not wrong, "\n".join(wrong)


def test_the_core_does_not_import_the_preset() -> None:
    graph = import_graph(PACKAGE, "waystone")
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if not _in(module, EDGES + PRESET) and module != "waystone"
        for target in targets
        if _in(target, PRESET)
    )
    assert not wrong, "\n".join(wrong)
