"""The package has no import cycle: the imports a module makes when it is loaded never
lead back to it.

Only imports that run at import time count: those under ``if TYPE_CHECKING:`` never run,
and those inside functions are the package's lazy imports (a command that only reads runs
never loads LangGraph), taken when the function is called. A submodule's implicit import
of its parent package is not counted either: ``waystone/__init__.py`` exporting its
submodules is no cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

# found beside the tests, not imported: a cycle that breaks the import is listed too
PACKAGE = Path(__file__).resolve().parents[2] / "waystone"


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package under ``root``, by dotted name."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _load_time_imports(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements of ``body`` that run when the module is loaded."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue  # a lazy import, taken when the function is called
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _load_time_imports(node.orelse)
        else:  # class bodies, if/else, try/except, with: they run at import time
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for child in getattr(node, field, []):
                    if isinstance(child, ast.stmt):
                        yield from _load_time_imports([child])
                    elif hasattr(child, "body"):  # an except handler, a match case
                        yield from _load_time_imports(child.body)


def imports_of(name: str, path: Path, known: set[str], package: str) -> set[str]:
    """The package's modules that ``name`` imports when it is loaded."""
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in _load_time_imports(ast.parse(path.read_text(), str(path)).body):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:  # relative: from the module's own package, up level - 1
            anchor = name.split(".") if is_package else name.split(".")[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            # ``from a import b`` imports the module a.b when there is one, else a's name b
            sub = f"{base}.{alias.name}"
            targets.add(sub if sub in known else base)
    return {t for t in targets if t in known and t != name and t.split(".")[0] == package}


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    found = modules(root, package)
    known = set(found)
    return {name: imports_of(name, path, known, package) for name, path in found.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph``: within each group of modules that import each other
    (a strongly connected component of more than one module), a shortest cycle through
    each of its modules, as a path that ends where it starts."""
    found: list[list[str]] = []
    for group in _groups(graph):
        for start in sorted(group):
            cycle = _shortest_cycle(graph, group, start)[:-1]
            first = cycle.index(min(cycle))  # one cycle, one way to print it
            cycle = [*cycle[first:], *cycle[:first], cycle[first]]
            if cycle not in found:
                found.append(cycle)
    return found


def _groups(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            group: set[str] = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups, key=min)


def _shortest_cycle(graph: dict[str, set[str]], group: set[str], start: str) -> list[str]:
    """A shortest path from ``start`` back to it, within its group (breadth first)."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for succ in sorted(graph[node] & group):
                if succ == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if succ not in came_from:
                    came_from[succ] = node
                    following.append(succ)
        frontier = following
    raise AssertionError(f"no cycle through {start} in {sorted(group)}")


def test_the_package_has_no_import_cycle() -> None:
    found = cycles(import_graph(PACKAGE, "waystone"))
    listed = "\n".join("  " + " -> ".join(cycle) for cycle in found)
    assert not found, (
        f"import cycles in waystone (move an import into a function or out):\n{listed}"
    )


def _write(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_cycle_is_found_and_printed(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from pkg.b import thing\n",
            "b.py": "import pkg.c\n",
            "c.py": "try:\n    from . import a\nexcept ImportError:\n    pass\n",
        },
    )
    assert cycles(import_graph(tmp_path, "pkg")) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]


def test_type_checking_function_and_parent_imports_are_no_cycle(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "__init__.py": "from pkg.a import A\n",  # a package exporting its submodule
            "a.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from pkg.b import B\n"
                "class A:\n    def b(self):\n        from pkg.b import B\n        return B\n"
            ),
            "b.py": "from pkg.a import A\nB = A\n",
        },
    )
    graph = import_graph(tmp_path, "pkg")
    assert graph == {"pkg": {"pkg.a"}, "pkg.a": set(), "pkg.b": {"pkg.a"}}
    assert cycles(graph) == []
