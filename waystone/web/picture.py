"""A picture of a graph for a run's page: its nodes in rows by their distance from
``__start__`` (``__end__`` last), its edges as arrows (a conditional one dashed, one
back to an earlier row curved round the right), and the nodes the run is at marked.
Numbers only: the template writes the SVG and escapes every label."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

START, END = "__start__", "__end__"
ROW, GAP, HEIGHT, MARGIN = 70, 24, 32, 16
CHAR, PAD, MIN_WIDTH, MAX_WIDTH = 7, 24, 72, 260


@dataclass(frozen=True)
class Box:
    id: str
    label: str
    x: int
    y: int
    width: int
    height: int
    current: bool


@dataclass(frozen=True)
class Arrow:
    source: str
    target: str
    path: str
    conditional: bool


@dataclass(frozen=True)
class Picture:
    width: int
    height: int
    boxes: tuple[Box, ...]
    arrows: tuple[Arrow, ...]
    current: tuple[str, ...]


def rows(nodes: Sequence[str], edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The nodes by their breadth-first distance from ``__start__``; nodes it does not
    reach after the others, and ``__end__`` alone in the last row."""
    following: dict[str, list[str]] = {n: [] for n in nodes}
    for source, target in edges:
        following.setdefault(source, []).append(target)
    depth = {START: 0} if START in following else {}
    queue = deque(depth)
    while queue:
        node = queue.popleft()
        for nxt in following.get(node, []):
            if nxt not in depth and nxt != END:
                depth[nxt] = depth[node] + 1
                queue.append(nxt)
    last = max(depth.values(), default=-1)
    for node in nodes:
        if node not in depth and node != END:
            last += 1
            depth[node] = last
    found: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for node in nodes:
        if node != END:
            found[depth[node]].append(node)
    if END in nodes:
        found.append([END])
    return found


def layout(
    labels: Mapping[str, str],
    edges: Sequence[tuple[str, str, bool]],
    current: Iterable[str] = (),
) -> Picture:
    """The picture of nodes (id -> label) and edges (source, target, conditional)."""
    at = set(current)
    grid = rows(list(labels), [(s, t) for s, t, _ in edges])
    widths = {n: min(MAX_WIDTH, max(MIN_WIDTH, CHAR * len(labels[n]) + PAD)) for n in labels}
    row_width = [sum(widths[n] for n in row) + GAP * (len(row) - 1) for row in grid]
    width = max(row_width, default=0) + 2 * MARGIN + 60  # room for the arrows round the right
    boxes: dict[str, Box] = {}
    for level, row in enumerate(grid):
        x = MARGIN + (width - 60 - 2 * MARGIN - row_width[level]) // 2
        for node in row:
            y = MARGIN + level * ROW
            boxes[node] = Box(node, labels[node], x, y, widths[node], HEIGHT, node in at)
            x += widths[node] + GAP
    level_of = {n: i for i, row in enumerate(grid) for n in row}
    arrows = tuple(
        Arrow(s, t, _path(boxes[s], boxes[t], level_of[t] > level_of[s], width), conditional)
        for s, t, conditional in edges
        if s in boxes and t in boxes
    )
    height = len(grid) * ROW - (ROW - HEIGHT) + 2 * MARGIN
    shown = tuple(n for n in labels if n in at)
    return Picture(width, height, tuple(boxes.values()), arrows, shown)


def _path(a: Box, b: Box, down: bool, width: int) -> str:
    if down:
        return f"M{a.x + a.width // 2},{a.y + a.height} L{b.x + b.width // 2},{b.y}"
    # back up (a loop) or sideways: out of a's right side, round, into b's right side
    x1, y1 = a.x + a.width, a.y + a.height // 2
    x2, y2 = b.x + b.width, b.y + b.height // 2
    bend = max(x1, x2) + 30 if max(x1, x2) + 30 < width else width - 2
    return f"M{x1},{y1} C{bend},{y1} {bend},{y2} {x2},{y2}"
