"""The package's rings, as docs/architecture.md draws them, kept by every import (inside
functions too; those under ``if TYPE_CHECKING:`` alone aside):

- the base (config, errors, logs, ...) imports nothing of Waystone but ``errors``;
- the database floor (``_db``, ``sql``) imports only the base;
- the core (the runtime, runs, effects, checkpointing, privacy, webhooks) never imports
  the preset, the examples or an edge;
- the preset never imports an edge or the examples.

The edges (the command line, the server, the worker, the examples) may import any ring.
``waystone/__init__.py``, the facade, names its exports by string and imports nothing.

Between the top-level folders and modules of ``waystone/`` (its rooms) imports run one way,
those under ``if TYPE_CHECKING:`` too (a drawing of the package's structure shows them as
arrows): no rooms import each other, directly or through others, and each room of the
core imports only those drawn below it.
"""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_import_cycles import PACKAGE, cycles, import_lines, modules

BASE = (
    "waystone.config",
    "waystone.errors",
    "waystone.logs",
    "waystone._crash",
    "waystone._hints",
    "waystone._identifiers",
    "waystone._imports",
    "waystone._json_input",
    "waystone._retry",
)
DB = ("waystone._db", "waystone.sql")
CORE = (
    "waystone.runtime",
    "waystone._runtime",
    "waystone._runs",
    "waystone._streams",
    "waystone.effects",
    "waystone._checkpointing",
    "waystone._privacy",
    "waystone._store",
    "waystone._webhooks",
    "waystone._streams",
)
PRESET = ("waystone.preset",)
EDGES = (
    "waystone.cli",
    "waystone.web",
    "waystone.worker",
    "waystone.examples",
    "waystone.__main__",
)
FACADE = "waystone"


def _in(module: str, ring: tuple[str, ...]) -> bool:
    return any(module == r or module.startswith(r + ".") for r in ring)


def ring_of(module: str) -> str:
    for name, ring in (
        ("base", BASE),
        ("db", DB),
        ("core", CORE),
        ("preset", PRESET),
        ("edge", EDGES),
    ):
        if _in(module, ring):
            return name
    if module == FACADE:
        return "facade"
    raise AssertionError(f"{module} is in no ring: add it to one in {__file__}")


# The rings each ring may import; the base imports ``errors`` alone (see allowed).
MAY_IMPORT = {
    "db": ("base", "db"),
    "core": ("base", "db", "core"),
    "preset": ("base", "db", "core", "preset"),
    "edge": ("base", "db", "core", "preset", "edge", "facade"),
    "facade": (),  # it names its exports by string, imported on first use
}


def allowed(module: str, target: str) -> bool:
    """Whether ``module`` may import ``target``, by their rings."""
    source = ring_of(module)
    if source == "base":
        return target == "waystone.errors"
    return ring_of(target) in MAY_IMPORT[source]


def wrong_imports(root: Path, package: str) -> list[str]:
    """Every import that crosses a ring the wrong way, as ``module (line n) -> target``."""
    return sorted(
        f"{module} (line {line}) -> {target}  [{ring_of(module)} -> {ring_of(target)}]"
        for module, targets in import_lines(root, package).items()
        for target, line in targets.items()
        if not allowed(module, target)
    )


def test_every_module_is_in_a_ring() -> None:
    for module in modules(PACKAGE, "waystone"):
        ring_of(module)


def test_no_import_crosses_a_ring_the_wrong_way() -> None:
    wrong = wrong_imports(PACKAGE, "waystone")
    assert not wrong, "imports against the rings (docs/architecture.md, section 2):\n" + (
        "\n".join("  " + line for line in wrong)
    )


def reached(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others."""
    found: set[str] = set()
    todo = [start]
    while todo:
        for target in graph[todo.pop()] - found:
            found.add(target)
            todo.append(target)
    return found


def test_the_saver_stands_on_its_own() -> None:
    """The public savers (usable without a runtime) reach none of the runs' modules."""
    graph = {name: set(targets) for name, targets in import_lines(PACKAGE, "waystone").items()}
    for saver in ("waystone._checkpointing.saver", "waystone._checkpointing.aio"):
        runs = sorted(m for m in reached(graph, saver) if _in(m, ("waystone._runs",)))
        assert not runs, f"{saver} reaches {runs}"


def test_the_rules_cover_each_ring() -> None:
    assert allowed("waystone.logs", "waystone.errors")
    assert not allowed("waystone.logs", "waystone.config")
    assert allowed("waystone._db.database", "waystone.config")
    assert not allowed("waystone._db.database", "waystone._runs.leases")
    assert not allowed("waystone.sql", "waystone.runtime")
    assert allowed("waystone.runtime", "waystone._db.database")
    assert not allowed("waystone.runtime", "waystone.preset._agents")
    assert not allowed("waystone._webhooks.store", "waystone.web.shapes")
    assert not allowed("waystone._runtime.crons", "waystone.worker.ticker")
    assert not allowed("waystone.effects.tools", "waystone.examples.payments")
    assert allowed("waystone.preset.spec", "waystone._runtime.catalog")
    assert not allowed("waystone.preset.spec", "waystone.examples.refund")
    assert not allowed("waystone.preset._agents", "waystone.cli.app")
    assert allowed("waystone.cli.app", "waystone.preset._agents")
    assert allowed("waystone.worker.sync", "waystone.examples.refund")


def test_a_lazy_import_against_the_rings_is_found(tmp_path: Path) -> None:
    for relative, text in {
        "__init__.py": "",
        "runtime.py": "def agents():\n    from waystone.examples import refund\n",
        "examples/__init__.py": "",
        "examples/refund.py": "from waystone.runtime import agents\n",
        "errors.py": "",
    }.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert wrong_imports(tmp_path, "waystone") == [
        "waystone.runtime (line 2) -> waystone.examples.refund  [core -> edge]"
    ]


# The core's rooms from the bottom up, as docs/architecture.md draws them.
CORE_ROOMS = (
    "_privacy",
    "_store",
    "_checkpointing",
    "_runs",
    "effects",
    "_webhooks",
    "_streams",
    "_runtime",
    "runtime",
)


def room(module: str) -> str:
    """The top-level folder or module of the package that ``module`` is in (its room)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def room_imports(root: Path, package: str) -> dict[str, dict[str, list[str]]]:
    """The rooms each room imports, each with the imports that make the arrow, those
    under ``if TYPE_CHECKING:`` too."""
    arrows: dict[str, dict[str, list[str]]] = {}
    for module, targets in import_lines(root, package, type_checking=True).items():
        found = arrows.setdefault(room(module), {})
        for target, line in sorted(targets.items()):
            if room(target) != room(module):
                found.setdefault(room(target), []).append(f"{module} (line {line}) -> {target}")
    return arrows


def room_circles(root: Path, package: str) -> list[str]:
    """Each circle of rooms that import each other, with every import along it."""
    arrows = room_imports(root, package)
    found = []
    for circle in cycles({name: set(targets) for name, targets in arrows.items()}):
        steps = [
            f"{a} -> {b}:" + "".join(f"\n    {line}" for line in arrows[a][b])
            for a, b in zip(circle, circle[1:], strict=False)
        ]
        found.append("\n  ".join([" -> ".join(circle), *steps]))
    return found


def test_no_two_rooms_import_each_other() -> None:
    circles = room_circles(PACKAGE, "waystone")
    assert not circles, (
        "rooms of waystone/ that import each other (move the module to the room it serves, "
        "or type what a lower module needs with a Protocol):\n" + "\n".join(circles)
    )


def test_each_room_of_the_core_imports_only_those_below_it() -> None:
    assert set(CORE_ROOMS) == {room(name) for name in CORE}
    arrows = room_imports(PACKAGE, "waystone")
    upward = [
        line
        for lower, name in enumerate(CORE_ROOMS)
        for target, lines in arrows[name].items()
        if target in CORE_ROOMS[lower + 1 :]
        for line in lines
    ]
    assert not upward, f"the core imports upward (order: {', '.join(CORE_ROOMS)}):\n" + (
        "\n".join("  " + line for line in upward)
    )


def test_rooms_that_import_each_other_are_found_by_their_lines(tmp_path: Path) -> None:
    for relative, text in {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from pkg.high.b import B\n"
            "A = 1\n"
        ),
        "high/__init__.py": "",
        "high/b.py": "from pkg.low.a import A\nB = A\n",
        "top.py": "from pkg.high import b\n",
    }.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert room_circles(tmp_path, "pkg") == [
        "high -> low -> high\n"
        "  high -> low:\n    pkg.high.b (line 1) -> pkg.low.a\n"
        "  low -> high:\n    pkg.low.a (line 3) -> pkg.high.b"
    ]
