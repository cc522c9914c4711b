"""A custom auth handler's filter against a resource's metadata, as the reference matches
it, and the action each request on a thread is."""

from __future__ import annotations

import pytest

from waystone.web.auth_filters import BadFilter, assistant_action, matches, thread_action

META = {"owner": "ana", "tags": ["a", "b"], "n": 1}


@pytest.mark.parametrize(
    ("filters", "passes"),
    [
        (None, True),
        ({}, True),
        ({"owner": "ana"}, True),
        ({"owner": "bo"}, False),
        ({"missing": None}, False),  # a key the metadata lacks never matches
        ({"owner": {"$eq": "ana"}, "n": 1}, True),
        ({"owner": {"$eq": "ana"}, "n": 2}, False),
        ({"tags": {"$contains": "a"}}, True),
        ({"tags": {"$contains": ["a", "b"]}}, True),
        ({"tags": {"$contains": ["a", "c"]}}, False),
        ({"owner": {"$contains": "a"}}, False),  # $contains holds in lists only
        ({"$or": [{"owner": "bo"}, {"n": 1}]}, True),
        ({"$or": [{"owner": "bo"}, {"n": 2}]}, False),
        ({"$or": [{"owner": "bo"}, {"n": 1}], "tags": {"$contains": "z"}}, False),
        ({"$and": [{"owner": "ana"}, {"n": 1}]}, True),
        ({"$and": [{"owner": "ana"}, {"n": 2}]}, False),
    ],
)
def test_filters_match_as_the_reference(filters: dict[str, object] | None, passes: bool) -> None:
    assert matches(META, filters) is passes


@pytest.mark.parametrize(
    "filters",
    [
        {"$or": [{"owner": "ana"}]},  # one group is no choice
        {"$and": "owner"},
        {"owner": {"$gt": 1}},
        {"$or": [{"$or": [{"$or": [{"n": 1}, {"n": 2}]}, {"n": 3}]}, {"n": 4}]},  # 3 deep
    ],
)
def test_a_filter_that_means_nothing_is_refused(filters: dict[str, object]) -> None:
    with pytest.raises(BadFilter):
        matches(META, filters)


@pytest.mark.parametrize(
    ("method", "rest", "action"),
    [
        ("GET", "", "read"),
        ("GET", "/state", "read"),
        ("GET", "/runs", "search"),
        ("GET", "/runs/r1/stream", "read"),
        ("POST", "/history", "read"),
        ("POST", "/copy", "read"),
        ("POST", "/runs/crons", "read"),
        ("POST", "/state", "update"),
        ("POST", "/runs/r1/cancel", "update"),
        ("DELETE", "", "delete"),
        ("POST", "/runs", None),  # its route asks, with the run's body
        ("POST", "/runs/stream", None),
        ("PATCH", "", None),
    ],
)
def test_each_request_on_a_thread_is_an_action(method: str, rest: str, action: str) -> None:
    assert thread_action(method, rest) == action


@pytest.mark.parametrize(
    ("method", "rest", "action"),
    [
        ("GET", "", "read"),
        ("GET", "/schemas", "read"),
        ("POST", "/versions", "read"),
        ("PATCH", "", "update"),
        ("POST", "/latest", "update"),
        ("DELETE", "", "delete"),
    ],
)
def test_each_request_on_an_assistant_is_an_action(method: str, rest: str, action: str) -> None:
    assert assistant_action(method, rest) == action
