"""Which shape a refusal takes, by the path within the app: a page for the pages and
their forms, ``{"error"}`` for the operator's API and webhook, ``{"detail"}`` for the
LangGraph server API, whose paths under ``/runs/`` look like the pages'."""

from __future__ import annotations

from waystone.web.replies import kind_of, route_path


def test_each_path_gets_its_kind() -> None:
    assert [kind_of(p) for p in ("/", "/login", "/runs/t-1")] == ["html"] * 3
    for form in ("/login", "/logout", "/runs/t-1/approve", "/runs/t-1/reject", "/runs/t/resume"):
        assert kind_of(form, "POST") == "html", form
    assert kind_of("/api/runs") == kind_of("/signals/t/n", "POST") == "api"
    for path, method in (
        ("/runs/wait", "POST"),
        ("/runs/stream", "POST"),
        ("/runs/crons/search", "POST"),
        ("/threads/t/runs", "GET"),
        ("/ok", "GET"),
        ("/nothing-here", "GET"),
    ):
        assert kind_of(path, method) == "langgraph", path


def test_the_path_within_a_mount_drops_its_prefix() -> None:
    assert route_path({"path": "/ops/runs/t", "root_path": "/ops"}) == "/runs/t"
    assert route_path({"path": "/runs/t", "root_path": ""}) == "/runs/t"
