"""What a custom auth handler's answer means, as plain functions: whether a resource's
metadata passes the filter a handler returned (the reference's matching: a plain value
or ``$eq`` is equality on a key, ``$contains`` holds an element or every element of a
list, ``$or`` / ``$and`` combine filters, two levels deep at most), and which action a
request on a thread or an assistant is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Filters = dict[str, Any]
MAX_NESTING = 2  # the reference's limit on $or / $and within each other


class BadFilter(Exception):
    """A handler returned a filter that means nothing: the server's error, not the
    caller's (the API answers 500, as the reference does)."""


def matches(metadata: Mapping[str, Any], filters: Filters | None, level: int = 0) -> bool:
    """Whether ``metadata`` passes ``filters`` (no filter: it does)."""
    if level > MAX_NESTING:
        raise BadFilter(
            "the auth handler returned a filter nested more than 2 levels deep in $or/$and"
        )
    if not filters:
        return True
    for op, every in (("$or", False), ("$and", True)):
        if op in filters:
            groups = filters[op]
            if not isinstance(groups, list) or len(groups) < 2:
                raise BadFilter(f"the auth handler's {op} must be a list of 2 filters or more")
            found = [matches(metadata, g, level + 1) for g in groups]
            if not (all(found) if every else any(found)):
                return False
            rest = {k: v for k, v in filters.items() if k != op}
            return matches(metadata, rest, level + 1) if rest else True
    return all(_holds(metadata, key, wanted) for key, wanted in filters.items())


def _holds(metadata: Mapping[str, Any], key: str, wanted: Any) -> bool:
    if key not in metadata:
        return False
    have = metadata[key]
    if not isinstance(wanted, dict):
        return bool(have == wanted)
    op, value = next(iter(wanted.items()))
    if op == "$eq":
        return bool(have == value)
    if op == "$contains":
        if not isinstance(have, list):
            return False
        return all(v in have for v in value) if isinstance(value, list) else value in have
    raise BadFilter(f"the auth handler's filter on {key!r} has {op!r}: use $eq or $contains")


# The routes under /threads/{thread_id} whose handlers ask the auth themselves (the
# value they pass holds the request's body): a run's creation and a metadata update.
HANDLED_BY_ROUTE = {
    ("POST", "/runs"),
    ("POST", "/runs/wait"),
    ("POST", "/runs/stream"),
    ("PATCH", ""),
}
READS_BY_POST = {"/history", "/state/checkpoint", "/copy", "/runs/crons"}


def thread_action(method: str, rest: str) -> str | None:
    """The action (``threads`` resource) of a request ``method`` on ``/threads/{id}`` +
    ``rest``, as the reference names it; ``None`` when its route asks itself."""
    if (method, rest) in HANDLED_BY_ROUTE:
        return None
    if method == "GET":
        return "search" if rest == "/runs" else "read"
    if method == "DELETE":
        return "delete"
    if method == "POST" and rest in READS_BY_POST:
        return "read"
    return "update"  # the state, a cancel and any other change to the thread


def assistant_action(method: str, rest: str) -> str:
    """The action (``assistants`` resource) of a request ``method`` on
    ``/assistants/{id}`` + ``rest``, as the reference names it."""
    if method == "GET" or (method == "POST" and rest == "/versions"):
        return "read"
    return "delete" if method == "DELETE" else "update"
