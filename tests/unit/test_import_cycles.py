"""The package has no import cycle: no module's imports lead back to it, directly or
through others.

Every import counts, those inside functions too (a lazy import is still a dependency:
it only moves the moment the circle closes). Those under ``if TYPE_CHECKING:`` alone
never run and do not count. A package's ``__init__`` is a module like any other; a
submodule's implicit import of its parent package is not counted, so
``waystone/__init__.py`` naming its submodules is no cycle.
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


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement under ``node``, in functions too, but for those that only
    run under ``if TYPE_CHECKING:``."""
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        for child in node.orelse:
            yield from _imports(child)
        return
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    for child in ast.iter_child_nodes(node):
        yield from _imports(child)


def imports_of(name: str, path: Path, known: set[str], package: str) -> dict[str, int]:
    """The package's modules that ``name`` imports, each with the line of its first
    import."""
    is_package = path.name == "__init__.py"
    targets: dict[str, int] = {}

    def add(target: str, line: int) -> None:
        targets[target] = min(line, targets.get(target, line))

    for node in _imports(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
            continue
        base = node.module or ""
        if node.level:  # relative: from the module's own package, up level - 1
            anchor = name.split(".") if is_package else name.split(".")[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            # ``from a import b`` imports the module a.b when there is one, else a's name b
            sub = f"{base}.{alias.name}"
            add(sub if sub in known else base, node.lineno)
    return {
        target: line
        for target, line in targets.items()
        if target in known and target != name and target.split(".")[0] == package
    }


def import_lines(root: Path, package: str) -> dict[str, dict[str, int]]:
    """Each module's imports of the package's modules, with the line of each."""
    found = modules(root, package)
    known = set(found)
    return {name: imports_of(name, path, known, package) for name, path in found.items()}


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    return {name: set(targets) for name, targets in import_lines(root, package).items()}


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


def describe(cycle: list[str], lines: dict[str, dict[str, int]]) -> str:
    """A cycle as the imports that close it: ``a (line 3) -> b (line 9) -> a``."""
    steps = [f"{a} (line {lines[a][b]})" for a, b in zip(cycle, cycle[1:], strict=False)]
    return " -> ".join([*steps, cycle[-1]])


def test_the_package_has_no_import_cycle() -> None:
    lines = import_lines(PACKAGE, "waystone")
    found = cycles({name: set(targets) for name, targets in lines.items()})
    listed = "\n".join("  " + describe(cycle, lines) for cycle in found)
    assert not found, (
        "import cycles in waystone (move what both sides need into a module of its own, "
        f"or invert the dependency):\n{listed}"
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
    lines = import_lines(tmp_path, "pkg")
    found = cycles(import_graph(tmp_path, "pkg"))
    assert found == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]
    shown = describe(found[0], lines)
    assert shown == "pkg.a (line 1) -> pkg.b (line 1) -> pkg.c (line 2) -> pkg.a"


def test_an_import_inside_a_function_closes_a_cycle(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from pkg.b import B\nA = 1\n",
            "b.py": "B = 2\ndef later():\n    from pkg.a import A\n    return A\n",
        },
    )
    assert cycles(import_graph(tmp_path, "pkg")) == [["pkg.a", "pkg.b", "pkg.a"]]


def test_a_package_init_is_a_module_of_a_cycle(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "__init__.py": "",
            "sub/__init__.py": "from pkg.sub.inner import X\n",
            "sub/inner.py": "X = 1\n",
            "other.py": "from pkg.sub import X\n",
            "sub/uses.py": "def f():\n    import pkg.other\n",
        },
    )
    _write(tmp_path, {"sub/inner.py": "from pkg.sub.uses import f\nX = 1\n"})
    assert cycles(import_graph(tmp_path, "pkg")) == [
        ["pkg.other", "pkg.sub", "pkg.sub.inner", "pkg.sub.uses", "pkg.other"]
    ]


def test_type_checking_and_parent_imports_are_no_cycle(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "__init__.py": "from pkg.a import A\n",  # a package exporting its submodule
            "a.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from pkg.b import B\n"
                "else:\n    from pkg.c import C\n"
                "class A:\n    pass\n"
            ),
            "b.py": "from pkg.a import A\nB = A\n",
            "c.py": "C = 1\n",
        },
    )
    graph = import_graph(tmp_path, "pkg")
    assert graph == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.c"}, "pkg.b": {"pkg.a"}, "pkg.c": set()}
    assert cycles(graph) == []
