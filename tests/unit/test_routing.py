from dataclasses import replace

from langgraph.graph import END

from tests.support.notes import bench_storage
from waystone.preset._graph import routing
from waystone.preset._graph.builder import goto
from waystone.preset._graph.state import AgentState
from waystone.preset._nodes.verify import CHECK_NODE

ACTION = {"ordinal": 1, "tool": "t", "args": {}, "risk": "low", "key": "k", "digest": "d"}


def test_after_propose() -> None:
    assert routing.after_propose({"action": ACTION}) == "authorize"  # type: ignore[typeddict-item]
    assert routing.after_propose({"action": None}) == "verify-checks"
    rejected = [{"tool": "refnd", "args": {}, "error": "not a valid tool"}]
    assert routing.after_propose({"action": None, "corrections": rejected}) == "propose"
    assert routing.after_propose({"outcome": {"state": "failed", "reason": "x"}}) == "end"


def test_after_authorize_asks_again_without_a_decision() -> None:
    assert routing.after_authorize({"decision": None}) == "authorize"
    assert routing.after_authorize({"decision": {"choice": "approve"}}) == "execute"
    state: AgentState = {"outcome": {"state": "failed", "reason": "rejected"}}
    assert routing.after_authorize(state) == "end"


def test_after_execute_sends_failures_back_to_propose() -> None:
    assert routing.after_execute({"failure": {"error": "422"}}) == "propose"
    assert routing.after_execute({}) == "confirm"
    assert routing.after_execute({"outcome": {"state": "needs-human", "reason": "?"}}) == "end"


def test_after_verify() -> None:
    assert routing.after_verify({}) == "propose"
    assert routing.after_verify({"outcome": {"state": "done", "reason": "ok"}}) == "end"


def test_goto_names_the_next_node_the_checks_or_the_end() -> None:
    spec = bench_storage.agent(1)
    assert goto(spec, "propose", {"action": ACTION}) == "authorize"  # type: ignore[typeddict-item]
    assert goto(spec, "verify", {"outcome": {"state": "done", "reason": "ok"}}) == END
    sends = goto(spec, "confirm", {"ordinal": 2, "completed": [{"ordinal": 2}]})
    assert [s.node for s in sends] == [CHECK_NODE]
    assert sends[0].arg == {
        "name": "all_done",
        "round": 2,
        "input": {},
        "completed": [{"ordinal": 2}],
    }
    no_checks = replace(spec, checks=[])
    assert goto(no_checks, "confirm", {}) == "verify"
