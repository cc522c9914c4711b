"""The web server's security decisions as functions of values: Host names, origins, the
session cookie's signature and the CSRF token."""

from __future__ import annotations

import pytest

from waystone.web.security import (
    allowed_hosts,
    csrf_token,
    csrf_valid,
    host_allowed,
    parse_allowed_hosts,
    same_origin,
    session_cookie,
    session_of,
)


def test_only_the_configured_host_names_are_answered() -> None:
    hosts = allowed_hosts("0.0.0.0", 8765, parse_allowed_hosts(["ops.example", "a.example:9"]))
    for ok in (
        "127.0.0.1:8765",
        "LOCALHOST:8765",
        "[::1]:8765",
        "0.0.0.0:8765",
        "ops.example",
        "ops.example:1234",
        "a.example:9",
    ):
        assert host_allowed(ok, hosts), ok
    for refused in (
        None,
        "",
        "evil.example:8765",
        "127.0.0.1:8766",
        "localhost",  # port 80, not the server's
        "a.example",
        "a.example:10",
        "localhost.evil.example:8765",
        "127.0.0.1:8765@evil.example",
        "127.0.0.1:99999",
        "[::1]",
    ):
        assert not host_allowed(refused, hosts), refused
    assert host_allowed("[::1]:8765", allowed_hosts("::1", 8765))
    assert host_allowed("localhost", allowed_hosts("127.0.0.1", 80))


def test_a_malformed_allowed_host_is_refused_with_the_entry_named() -> None:
    with pytest.raises(ValueError, match="'not a host!' is not a host name"):
        parse_allowed_hosts(["ok.example", "not a host!"])
    assert parse_allowed_hosts(["", " "]) == []


def test_a_request_counts_as_same_origin_only_from_the_same_scheme_host_and_port() -> None:
    host = "127.0.0.1:8765"
    assert same_origin("http://127.0.0.1:8765", None, host)
    assert same_origin(None, "http://127.0.0.1:8765/runs/x", host)
    assert same_origin("http://localhost", None, "localhost:80")
    for origin, referer in (
        ("http://127.0.0.1:8766", None),  # another port of the same host
        ("https://127.0.0.1:8765", None),
        ("http://localhost:8765", None),
        ("http://evil.example", None),
        ("null", "http://127.0.0.1:8765/"),  # an opaque Origin is not replaced by a Referer
        (None, "http://evil.example/page"),
        (None, None),
        ("", None),
        ("http://127.0.0.1:notaport", None),
    ):
        assert not same_origin(origin, referer, host), (origin, referer)


def test_a_session_cookie_opens_only_with_the_token_that_signed_it() -> None:
    cookie = session_cookie("tok", "sid-1")
    assert session_of("tok", cookie) == "sid-1"
    assert "tok" not in cookie.split(".", 1)[1]
    for forged in (None, "", "sid-1", "sid-1.", f"sid-2.{cookie.split('.', 1)[1]}", "tok"):
        assert session_of("tok", forged) is None, forged
    assert session_of("another token", cookie) is None


def test_a_csrf_token_belongs_to_one_session_and_one_token() -> None:
    good = csrf_token("tok", "sid-1")
    assert csrf_valid("tok", "sid-1", good)
    for wrong in (None, "", good[:-1], csrf_token("tok", "sid-2"), csrf_token("t2", "sid-1")):
        assert not csrf_valid("tok", "sid-1", wrong), wrong
    assert not csrf_valid("tok", "sid-1", "é" * 64)
