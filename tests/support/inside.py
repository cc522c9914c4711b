"""A runtime's parts, for the tests that check what it stored or call a collaborator
directly: white-box access that the package's own edges never take."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from waystone._runtime.parts import Parts
    from waystone.runtime import Runtime


def parts(rt: Runtime) -> Parts:
    return rt._parts
