"""Routing: pure functions of the state that pick the next node."""

from __future__ import annotations

from typing import Literal

from waystone.preset._graph.state import AgentState

AfterPropose = Literal["authorize", "propose", "verify-checks", "end"]
AfterAuthorize = Literal["execute", "authorize", "end"]
AfterExecute = Literal["confirm", "propose", "end"]
AfterVerify = Literal["propose", "end"]


def after_propose(state: AgentState) -> AfterPropose:
    if state.get("outcome"):
        return "end"
    if state.get("action"):
        return "authorize"
    if state.get("corrections"):
        return "propose"  # an invalid proposal, handed back to the proposer
    return "verify-checks"


def after_authorize(state: AgentState) -> AfterAuthorize:
    if state.get("outcome"):
        return "end"
    decision = state.get("decision")
    if decision is None:
        return "authorize"  # the answer was invalid or for another action: ask again
    return "execute"


def after_execute(state: AgentState) -> AfterExecute:
    if state.get("outcome"):
        return "end"
    if state.get("failure"):
        return "propose"  # a permanent failure goes back to the proposer as evidence
    return "confirm"


def after_confirm(state: AgentState) -> Literal["verify-checks", "end"]:
    return "end" if state.get("outcome") else "verify-checks"


def after_verify(state: AgentState) -> AfterVerify:
    return "end" if state.get("outcome") else "propose"
