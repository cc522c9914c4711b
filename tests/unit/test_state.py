from typing import Annotated, get_args, get_origin, get_type_hints

from waystone.preset._graph.state import (
    REDUCED,
    REDUCERS,
    AgentState,
    applied,
    changes,
    initial_state,
)

ACTION = {"ordinal": 1, "tool": "t", "args": {"n": 1}, "risk": "low", "key": "k", "digest": "d"}


def test_a_new_run_starts_with_its_goal_and_input_only() -> None:
    assert initial_state("refund", {"order": "A-1"}) == {
        "goal": "refund",
        "input": {"order": "A-1"},
    }


def test_a_plain_key_set_to_the_value_it_holds_is_dropped() -> None:
    state: AgentState = {"action": ACTION, "decision": None, "steps": 2}  # type: ignore[typeddict-item]
    update = {"action": dict(ACTION), "decision": None, "receipt": None, "steps": 2}
    assert changes(state, update) == {}


def test_a_change_is_kept() -> None:
    state: AgentState = {"action": ACTION, "steps": 2, "decision": {"choice": "approve"}}  # type: ignore[typeddict-item]
    update = {"action": None, "steps": 3, "decision": None, "receipt": {"id": "r"}, "ordinal": 0}
    # 0 is not None: an absent key holds None, so setting it to 0 is a change
    assert changes(state, update) == update


def test_every_write_to_a_reduced_channel_is_kept() -> None:
    hints = get_type_hints(AgentState, include_extras=True)
    assert {k for k, t in hints.items() if get_origin(t) is Annotated} == REDUCED
    assert all(get_args(hints[k])[1] is REDUCERS[k][0] for k in REDUCED)
    state: AgentState = {"evidence": [], "checks": {}, "completed": []}
    update = {"evidence": [], "checks": {}, "completed": []}
    assert changes(state, update) == update


def test_applied_is_the_state_the_next_step_reads() -> None:
    state: AgentState = {"steps": 1, "evidence": [{"step": "propose"}]}
    update = {"steps": 2, "evidence": [{"step": "authorize"}], "checks": {"a": {"ok": True}}}
    assert applied(state, update) == {
        "steps": 2,
        "evidence": [{"step": "propose"}, {"step": "authorize"}],  # through the reducer
        "checks": {"a": {"ok": True}},  # from the channel's empty value
    }
    assert state == {"steps": 1, "evidence": [{"step": "propose"}]}  # unchanged
