"""The bodies of the operator's routes: the JSON of ``/api/runs/{id}/approve`` and
``reject``, and the pages' forms (login, Approve, Reject, the answer to an interrupt).
Who acted and why are text with something in it; the rest is checked by the runtime."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import StringConstraints

from waystone.web.inputs import Body

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Note = Annotated[str, StringConstraints(strip_whitespace=True)]


class Approval(Body):
    """An approval; ``args``, when named, the action's arguments as the person edited them."""

    by: Text
    comment: Note | None = None
    args: Any = None


class Rejection(Body):
    by: Text
    reason: Text


class Login(Body):
    token: str = ""


class Answer(Body):
    """A form's answer to a graph's ``interrupt()``: ``value`` is JSON text."""

    by: Text
    interrupt_id: Note | None = None
    value: str = ""
