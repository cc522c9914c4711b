"""A run's options (``RunOptions``) on a real Postgres: kept with the run, applied by each
drive of it (each a claim, as a worker's), a breakpoint a wait a value ends."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.option_graphs import two_steps
from waystone import Runtime
from waystone._runtime.options import RunOptions
from waystone.errors import BadInput


@pytest.fixture
def rt_graphs() -> dict[str, Any]:
    return {"steps": two_steps}


def test_a_breakpoint_waits_and_each_drive_applies_the_options(rt: Runtime) -> None:
    options = RunOptions(
        metadata={"ticket": 7},
        configurable={"persona": "pirate"},
        context={"tone": "dry"},
        interrupt_before=["second"],
    )
    started = rt.start("steps", {"text": "hi"}, options=options)
    tid = started.thread_id
    stopped = rt.run(tid)
    assert stopped.state == "waiting" and stopped.waiting_for == "resume"
    [pending] = stopped.interrupts
    assert pending["value"] == {"breakpoint": ["second"]}
    assert rt.run_metadata(tid) == {started.run_id: {"ticket": 7}}
    rt.resume(tid, None)
    assert rt.run(tid).state == "done"
    log = rt.graph("steps").get_state(rt.config(tid)).values["log"]
    assert log == ["first: hi as pirate", "second: tone dry"]


def test_options_a_graph_cannot_take_are_refused(rt: Runtime) -> None:
    for wrong in (
        RunOptions(interrupt_after=["nowhere"]),
        RunOptions(configurable={"lease_token": 1}),
        RunOptions(recursion_limit=0),
    ):
        with pytest.raises(BadInput):
            rt.start("steps", {"text": "x"}, thread_id="refused", options=wrong)
    assert all(t.thread_id != "refused" for t in rt.search_threads(limit=1000))
