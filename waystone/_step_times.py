"""How long each node of a graph takes, read from LangGraph's checkpoints when asked.

Every completed super-step writes a checkpoint ``C`` (``metadata.source = 'loop'``) whose
parent ``P`` is the checkpoint the step started from; the step took ``ts(C) - ts(P)``, or
from the claim that resumed it when the run was parked or lost its process inside the step
(so waiting is not counted as work). The tasks that ran in the step saved their writes
under ``P``: a pulled task's path names its node (``'~__pregel_pull, <node>'``), a ``Send``
task's gives its index in ``P``'s ``__pregel_tasks`` value (``'~__pregel_push, <index>,
...'``), so its node is read from that value's blob, one batch per read. Parallel tasks of a
step share its wall time, and a node counts once per step however many of its tasks ran.

Nothing is recorded per step: the statements are ``queries.sql``'s ``step_times`` (every
run) and ``step_times_of_thread`` (one thread, by its keys), run when a page is read.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.types import Send

from waystone._checkpointing.database import Conn
from waystone.sql import query

logger = logging.getLogger(__name__)

UNKNOWN_SEND: Final = "(send)"  # a Send task whose packet cannot be read here
Target = tuple[str, str, str]  # (thread_id, checkpoint_ns, __pregel_tasks version)


def read(
    conn: Conn,
    serde_of: Callable[[str], SerializerProtocol | None],
    thread_id: str | None = None,
) -> list[dict[str, Any]]:
    """Each node's count, mean and p95 (ms), every run's or ``thread_id``'s only;
    ``serde_of(graph)`` reads a graph's Send packets (None: they are not named)."""
    if thread_id is None:
        rows = conn.execute(query("step_times")).fetchall()
    else:
        rows = conn.execute(query("step_times_of_thread"), {"thread_id": thread_id}).fetchall()
    graph_of = {(r["thread_id"], r["checkpoint_ns"], r["tasks_version"]): r["graph"] for r in rows}
    wanted = [t for t, _ in graph_of.items() if t[2] is not None]
    return summarize(rows, _targets(conn, wanted, graph_of, serde_of))


def _targets(
    conn: Conn,
    wanted: Sequence[Target],
    graph_of: Mapping[Target, str],
    serde_of: Callable[[str], SerializerProtocol | None],
) -> dict[Target, list[str | None]]:
    """The node each Send packet at ``wanted`` goes to, by index."""
    if not wanted:
        return {}
    params = {
        "thread_ids": [t[0] for t in wanted],
        "namespaces": [t[1] for t in wanted],
        "versions": [t[2] for t in wanted],
    }
    found: dict[Target, list[str | None]] = {}
    for row in conn.execute(query("send_targets"), params).fetchall():
        key = (row["thread_id"], row["checkpoint_ns"], row["version"])
        serde = serde_of(graph_of[key])
        if serde is None or row["type"] == "empty":
            continue
        try:
            packets = serde.loads_typed((row["type"], bytes(row["blob"])))
        except Exception as exc:  # a packet this process cannot read: the node goes unnamed
            logger.warning("cannot read the Send packets of %s: %s", key[0], exc)
            continue
        found[key] = send_nodes(packets)
    return found


def send_nodes(packets: object) -> list[str | None]:
    """The node of each packet of a ``__pregel_tasks`` value (None: not a Send)."""
    if not isinstance(packets, list | tuple):
        return []
    return [p.node if isinstance(p, Send) else None for p in packets]


def summarize(
    rows: Iterable[Mapping[str, Any]], targets: Mapping[Target, Sequence[str | None]]
) -> list[dict[str, Any]]:
    """One entry per (graph, node), each graph's nodes in the order they first ran; a
    node's step counts once however many of its tasks ran in it. Internal nodes
    (``__start__``) are left out."""
    times: dict[tuple[str, str], list[float]] = {}
    seen: set[tuple[str, str, str, str]] = set()
    for row in rows:
        node = row["node"]
        if node is None and row["send_index"] is not None:
            sends = targets.get((row["thread_id"], row["checkpoint_ns"], row["tasks_version"]))
            index = int(row["send_index"])
            node = sends[index] if sends is not None and index < len(sends) else None
            node = node or UNKNOWN_SEND
        if not node or node.startswith("__"):
            continue
        step = (row["thread_id"], row["checkpoint_ns"], row["checkpoint_id"], node)
        if step in seen:
            continue
        seen.add(step)
        times.setdefault((row["graph"], node), []).append(float(row["ms"]))
    ordered = sorted(times, key=lambda k: k[0])  # stable: first-run order within a graph
    return [
        {
            "graph": graph,
            "node": node,
            "n": len(times[graph, node]),
            "mean_ms": round(sum(times[graph, node]) / len(times[graph, node]), 3),
            "p95_ms": round(percentile(times[graph, node], 0.95), 3),
        }
        for graph, node in ordered
    ]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile with linear interpolation (Postgres' ``percentile_cont``)."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
