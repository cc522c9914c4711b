"""The web page's sessions in Postgres: a logout revokes one for every server process,
an expired one is refused, and the table never holds a session's id."""

from __future__ import annotations

from typing import Any

import psycopg

from waystone import Runtime
from waystone.web.security import SessionStore, new_session_id


def test_a_revoked_or_expired_session_is_refused_by_every_store(
    runtime: Runtime, sql: psycopg.Connection[Any]
) -> None:
    one, other = (
        SessionStore(runtime.connection),
        SessionStore(runtime.connection),
    )  # two server processes
    live, expired = new_session_id(), new_session_id()
    one.open(live)
    SessionStore(runtime.connection, seconds=0).open(expired)
    assert one.active(live) and other.active(live)
    assert not one.active(expired) and not one.active(new_session_id())

    other.revoke(live)
    assert not one.active(live) and not other.active(live)

    rows = [tuple(r) for r in sql.execute("SELECT * FROM waystone.web_sessions").fetchall()]
    assert all(live not in str(r) and expired not in str(r) for r in rows)
    one.open(new_session_id())  # a login clears what has expired
    assert sql.execute("SELECT count(*) FROM waystone.web_sessions").fetchone() == (1,)
