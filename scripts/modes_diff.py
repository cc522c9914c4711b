"""Every stream mode of the reference server (``langgraph dev``) against Waystone's, on one
graph (``tests/support/mode_graphs.py``: a model streaming token by token, a tool, a
subgraph writing custom events), with and without ``stream_subgraphs``:

- ``render``: the events ``waystone/_streams/render.py`` makes of the graph's native
  stream chunks, run in this process, as a worker makes them;
- ``api``: the events a real ``waystone api`` (and a worker, on an embedded Postgres)
  streams for the modes it makes from committed checkpoints.

    python scripts/modes_diff.py [--langgraph PATH] [--record]

``--langgraph``: the ``langgraph`` command of a venv with 'langgraph-cli[inmem]';
``--record``: write what the reference sent to ``tests/unit/data`` (the unit tests
compare with it). What is compared: each event's name and data, ids, times and the keys
each server adds to a run's config and metadata taken out (``tests/support/stream_shapes``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from langgraph_sdk import get_sync_client

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]  # this tree's waystone, and its tests' graph
from api_diff import side_by_side  # noqa: E402

from tests.support.stream_shapes import INPUT, MODES, rendered, shapes  # noqa: E402

TOKEN = "modes-diff"
RECORDED = ROOT / "tests" / "unit" / "data" / "reference_stream_modes.json"
COMMITTED = ("values", "updates", "messages-tuple", "messages", "debug", "checkpoints", "tasks")
# Where Waystone's committed streams differ on purpose (docs/api.md, Streams, says why).
KNOWN = {
    "messages-tuple": "each message once its step commits, its metadata its node's",
    "messages": "each message whole (metadata, complete), not token by token",
}


def streamed(url: str, api_key: str | None, modes: tuple[str, ...]) -> dict[str, list[list[Any]]]:
    """Each mode's events on a thread of its own, with and without subgraphs."""
    found: dict[str, list[list[Any]]] = {}
    with get_sync_client(url=url, api_key=api_key) as lg:
        for mode in modes:
            for subgraphs in (True, False):
                thread_id = lg.threads.create()["thread_id"]
                parts = lg.runs.stream(
                    thread_id, "modes", input=INPUT, stream_mode=mode, stream_subgraphs=subgraphs
                )
                found[f"{mode}|{subgraphs}"] = [[p.event, p.data] for p in list(parts)[1:]]
    return found


def compare(what: str, theirs: list[list[Any]], ours: list[list[Any]]) -> bool:
    """Prints the first difference; whether there is none."""
    a, b = shapes(theirs), shapes(ours)
    if a == b:
        print(f"  {what}: {len(a)} events, the same")
        return True
    names_a, names_b = [n for n, _ in a], [n for n, _ in b]
    print(f"≠ {what}: {len(a)} events against {len(b)}")
    if names_a != names_b:
        print(f"    reference: {names_a}\n    waystone:  {names_b}")
        return False
    k = next(k for k, (x, y) in enumerate(zip(a, b, strict=True)) if x != y)
    print(f"    event {k}, reference: {json.dumps(a[k])[:800]}")
    print(f"    event {k}, waystone:  {json.dumps(b[k])[:800]}")
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--langgraph", default="langgraph", help="the reference's command")
    parser.add_argument("--record", action="store_true", help="record the reference's events")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ws-modes-diff-") as tmp:
        project = Path(tmp)
        shutil.copy(ROOT / "tests" / "support" / "mode_graphs.py", project / "modes.py")
        config = project / "langgraph.json"
        config.write_text(
            json.dumps({"dependencies": ["."], "graphs": {"modes": "./modes.py:graph"}})
        )
        with side_by_side(project, config, args.langgraph, token=TOKEN) as (ref_url, our_url):
            theirs = streamed(ref_url, None, MODES)
            mine = streamed(our_url, TOKEN, COMMITTED)
    if args.record:
        recorded = {key: shapes(events) for key, events in theirs.items()}
        RECORDED.write_text(json.dumps(recorded, sort_keys=True, separators=(",", ":")) + "\n")
        print(f"recorded {RECORDED.relative_to(ROOT)}")
    differences = 0
    for key, events in theirs.items():
        mode = key.split("|")[0]
        print(f"{key}")
        made = [list(pair) for pair in rendered(mode, key.endswith("True"))]
        differences += not compare("render", events, made)
        if mode in COMMITTED and not compare("api", events, mine[key]):
            if mode in KNOWN:
                print(f"    (documented: {KNOWN[mode]})")
            differences += mode not in KNOWN
    print(f"{differences} differences (beyond those docs/api.md documents)")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
