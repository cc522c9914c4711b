"""A runtime's parts, for the tests that check what it stored or call a collaborator
directly: white-box access that the package's own edges never take."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from waystone._runs.registry import Run
    from waystone._runtime.parts import Parts
    from waystone.runtime import Runtime


def parts(rt: Runtime) -> Parts:
    return rt._parts


def created_claimed(rt: Runtime, thread_id: str, agent: str, goal: str) -> Run:
    """A new run on ``thread_id`` with no input, claimed by ``rt`` as a worker claims one."""
    run = parts(rt).registry.create_claimed(
        thread_id=thread_id,
        agent=agent,
        goal=goal,
        input={},
        owner=parts(rt).owner,
        lease_seconds=rt.settings.lease_seconds,
    )
    assert run is not None
    return run
