"""How long each node of a graph takes, read from LangGraph's checkpoints when asked.

Every completed super-step writes a checkpoint ``C`` (``metadata.source = 'loop'``) whose
parent ``P`` is the checkpoint the step started from; the step took ``ts(C) - ts(P)``, or
from the claim that resumed it when the run was parked or lost its process inside the step
(so waiting is not counted as work). The tasks that ran in the step saved their writes
under ``P``: a pulled task's path names its node (``'~__pregel_pull, <node>'``), a ``Send``
task's gives its position in ``P``'s ``__pregel_tasks`` value (``'~__pregel_push,
<position>, ...'``). Postgres sums the steps per node (count, mean, ``percentile_cont``);
only the Send packets are read here, each distinct value once and at most
:data:`SEND_PACKETS_READ` of them, to name the node each position went to. Parallel tasks
of a step share its wall time, and a node counts once per step however many of its tasks
ran. A subgraph's nodes are under its parent node, the namespace's first part.

Nothing is recorded per step: the statements are ``queries.sql``'s ``send_packets`` and
``step_times`` (every run), or their ``_of_thread`` forms (one thread, by its keys), run
when a page is read.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.types import Send

from waystone._db.database import Conn
from waystone.sql import query

logger = logging.getLogger(__name__)

UNKNOWN_SEND: Final = "(send)"  # a Send task whose packet is not read (see queries.sql)
# Each value holds the packets' arguments (a react agent's: its state), so the dashboard
# decodes the newest few hundred; older Send steps are counted under UNKNOWN_SEND.
SEND_PACKETS_READ: Final = 500

# (thread_id, checkpoint_ns, __pregel_tasks version, position, node)
Target = tuple[str, str, str, int, str]


def read(
    conn: Conn, serde: SerializerProtocol, thread_id: str | None = None
) -> list[dict[str, Any]]:
    """Each node's count, mean and p95 (ms), every run's or ``thread_id``'s only, each
    graph's nodes in the order they first ran; ``serde`` reads the Send packets (the
    runtime saver's, which every graph is compiled with)."""
    suffix = "" if thread_id is None else "_of_thread"
    params: dict[str, Any] = {"thread_id": thread_id, "limit": SEND_PACKETS_READ}
    packets = conn.execute(query("send_packets" + suffix), params).fetchall()
    found = send_targets(serde, packets)
    columns = ("send_threads", "send_namespaces", "send_versions", "send_positions", "send_nodes")
    params.update({name: [t[i] for t in found] for i, name in enumerate(columns)})
    return [
        {
            "graph": r["graph"],
            "parent": r["parent"],
            "node": r["node"],
            "n": int(r["n"]),
            "mean_ms": round(float(r["mean_ms"]), 3),
            "p95_ms": round(float(r["p95_ms"]), 3),
        }
        for r in conn.execute(query("step_times" + suffix), params).fetchall()
    ]


def send_targets(serde: SerializerProtocol, packets: Iterable[Mapping[str, Any]]) -> list[Target]:
    """The node each position of each ``__pregel_tasks`` value goes to (a value that
    cannot be read here, or a packet that is not a Send, goes unnamed)."""
    found: list[Target] = []
    for row in packets:
        key = (row["thread_id"], row["checkpoint_ns"], row["version"])
        try:
            value = serde.loads_typed((row["type"], bytes(row["blob"])))
        except Exception as exc:  # a packet this process cannot read: the node goes unnamed
            logger.warning("cannot read the Send packets of %s: %s", key[0], exc)
            continue
        for position, node in enumerate(send_nodes(value)):
            if node is not None:
                found.append((*key, position, node))
    return found


def send_nodes(packets: object) -> list[str | None]:
    """The node of each packet of a ``__pregel_tasks`` value (None: not a Send)."""
    if not isinstance(packets, list | tuple):
        return []
    return [p.node if isinstance(p, Send) else None for p in packets]
