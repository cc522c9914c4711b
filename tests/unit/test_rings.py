"""The package's rings, as docs/architecture.md draws them: the edges (the command line,
the server, the worker, the dashboard, the examples) depend on the core and the preset,
never the reverse, and the core never imports the agent preset, at load time or later:
the preset is built on what the core gives any graph (its agents make their own entries
in the runtime's catalog). The one exception is the runtime's default agents."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.unit.test_import_cycles import PACKAGE, _is_type_checking, import_graph, modules

EDGES = (
    "waystone.cli",
    "waystone.web",
    "waystone.worker",
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


# The runtime's default agents (the examples', and those WAYSTONE_AGENTS names) are the
# preset's: loaded when a runtime is made without agents.
DEFAULT_AGENTS = ("waystone.runtime", "waystone.preset._agents")


def _every_import(path: Path) -> set[str]:
    """What a module imports anywhere (inside functions too), but for type annotations."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    return found


def test_the_core_never_imports_the_preset_even_lazily() -> None:
    wrong = sorted(
        f"{module} -> {target}"
        for module, path in modules(PACKAGE, "waystone").items()
        if not _in(module, EDGES + PRESET) and module != "waystone"
        for target in _every_import(path)
        if _in(target, PRESET) and (module, target) != DEFAULT_AGENTS
    )
    assert not wrong, "\n".join(wrong)
