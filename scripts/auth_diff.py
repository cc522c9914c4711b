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
import os
import subprocess
import sys
import tempfile
from itertools import zip_longest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
from api_diff import _port, _wait_for  # noqa: E402

from tests.support.auth_calls import calls  # noqa: E402
from waystone._db import embedded  # noqa: E402

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
        procs: list[subprocess.Popen[str]] = []
        db_url = embedded.ensure_server(project / "home")
        try:
            ref_url = f"http://127.0.0.1:{_port()}"
            ref = subprocess.Popen(
                [args.langgraph, "dev", "--no-browser", "--no-reload"]
                + ["--port", ref_url.rsplit(":", 1)[1], "--config", str(config)],
                cwd=project,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            procs.append(ref)
            env = {
                **os.environ,
                "WAYSTONE_DATABASE_URL": db_url,
                "WAYSTONE_HOME": str(project / "home"),
                "WAYSTONE_LANGGRAPH_JSON": str(config),
                "PYTHONPATH": str(ROOT),
            }
            migrate = [sys.executable, "-m", "waystone", "migrate"]
            subprocess.run(migrate, env=env, cwd=project, check=True, capture_output=True)
            worker = [sys.executable, "-m", "waystone", "worker"]
            quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            procs.append(subprocess.Popen(worker, env=env, cwd=project, text=True, **quiet))
            ours = subprocess.Popen(
                [sys.executable, "-m", "waystone", "api", "--port", "0", "--json"],
                env=env,
                cwd=project,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            procs.append(ours)
            assert ours.stdout is not None
            our_url = json.loads(ours.stdout.readline())["url"]
            _wait_for(ref_url, ref)
            theirs = calls(ref_url)
            mine = calls(our_url)
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(timeout=30)
            embedded.stop(project / "home")
    differences = 0
    for (what, a), (_, b) in zip_longest(theirs, mine, fillvalue=("", "(not asked)")):
        mark = "  " if a == b else ("~ " if what in KNOWN else "≠ ")
        differences += mark == "≠ "
        print(f"{mark}{what}: {json.dumps(a)}")
        if a != b:
            known = f" ({KNOWN[what]})" if what in KNOWN else ""
            print(f"    waystone: {json.dumps(b)}{known}")
    print(f"{differences} differences in {len(theirs)} answers (~: documented)")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
