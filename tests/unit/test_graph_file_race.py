"""Two threads of one worker loading graphs of one ``langgraph.json`` file at once: the
second waits for the file's module to finish loading, rather than finding it half-made
in ``sys.modules`` (``module ... has no attribute 'graph'``)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from waystone._imports import import_file

ENTERED, GO = threading.Event(), threading.Event()

SLOW_MODULE = """
from tests.unit.test_graph_file_race import ENTERED, GO

ENTERED.set()
GO.wait(30)
graph = "the first graph"
other = "the second graph"
"""


def test_a_graph_file_loading_on_one_thread_is_waited_for_on_another(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(SLOW_MODULE)
    config = tmp_path / "langgraph.json"
    got: dict[str, Any] = {}

    def load(attr: str) -> None:
        try:
            got[attr] = import_file(str(config), tmp_path / "agent.py", attr)
        except Exception as exc:  # what the test looks at
            got[attr] = exc

    first = threading.Thread(target=load, args=("graph",))
    first.start()
    assert ENTERED.wait(30), "the module's body never ran"
    second = threading.Thread(target=load, args=("other",))
    second.start()
    second.join(1.0)  # a second load that does not wait is over by now, and failed
    GO.set()
    first.join(30)
    second.join(30)
    assert got == {"graph": "the first graph", "other": "the second graph"}
