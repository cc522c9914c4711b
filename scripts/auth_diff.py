"""The reference documentation's custom ``Auth`` example on ``langgraph dev`` and on
``waystone api``, side by side: the same client calls (``tests/support/auth_calls.py``)
against each, every answer printed and every difference marked.

    python scripts/auth_diff.py [--langgraph PATH]   # the `langgraph` command of a venv
                                                     # with 'langgraph-cli[inmem]'

Both servers load ``tests/support/auth_example.py`` through their ``langgraph.json``'s
``auth.path`` (its token table, its handlers, and a graph that says who asked). What is
compared: each call's status when refused, the metadata and the threads each user sees,
and what the graph was told. Waystone runs on an embedded Postgres with one worker.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
from api_diff import report, side_by_side  # noqa: E402

from tests.support.auth_calls import calls  # noqa: E402

EXAMPLE = ROOT / "tests" / "support" / "auth_example.py"
# Where Waystone differs on purpose (docs/api.md, "Custom auth", says so).
KNOWN = {
    "bob copies alice's": "404 as for any thread the caller may not see (the reference: 409)",
    "bob joins alice's run's stream": "refused with 404 before the stream starts (the "
    "reference: a 200 stream whose one event is the 404 error)",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--langgraph", default="langgraph", help="the reference's command")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ws-auth-diff-") as tmp:
        project = Path(tmp)
        config = project / "langgraph.json"
        graphs = {"agent": f"{EXAMPLE}:graph"}
        config.write_text(
            json.dumps(
                {"dependencies": ["."], "graphs": graphs, "auth": {"path": f"{EXAMPLE}:auth"}}
            )
        )
        with side_by_side(project, config, args.langgraph, token=None) as (ref_url, our_url):
            theirs = calls(ref_url)
            mine = calls(our_url)
    return report(theirs, mine, KNOWN)


if __name__ == "__main__":
    sys.exit(main())
