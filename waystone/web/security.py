"""The web server's security decisions, as functions of values: which Host names it
answers, whether a browser's request comes from one of its own pages, the session cookie
and its per-session CSRF token, and the sessions themselves, kept in Postgres so that a
logout revokes one. Nothing here depends on the HTTP server that asks.

A session cookie is ``<session id>.<HMAC of it keyed by the API token>``: a cookie not
made by this deployment, or made before the token changed, is refused without a database
look-up, and the token never leaves the server. The ``waystone.web_sessions`` table holds
a hash of each open session's id (never the id) until it expires or its operator logs
out; every server process behind a load balancer shares it, so a logout anywhere is a
logout everywhere. The CSRF token is another HMAC of the session id, which a page of
another origin cannot read (the cookie is HttpOnly) and so cannot forge.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from waystone import sql

if TYPE_CHECKING:
    from waystone._db.database import Conn

SESSION_SECONDS = 12 * 3600
CSRF_FIELD = "csrf"
DEFAULT_PORTS = {"http": 80, "https": 443}

# A Host header's value: a DNS name or an IPv4 address, or an IPv6 address in brackets,
# and an optional port.
_HOST = re.compile(r"^(?P<name>\[[0-9a-f:.]+\]|[a-z0-9._-]+)(?::(?P<port>\d{1,5}))?$")

HostName = tuple[str, int | None]  # (name, port); no port: any port of that name


# -- Host ---------------------------------------------------------------------------------


def parse_host(value: str) -> HostName | None:
    """``(name, port)`` of a Host header's value (lower case; IPv6 in brackets), or None
    when it is not one."""
    match = _HOST.match(value.strip().lower())
    if match is None:
        return None
    port = int(match["port"]) if match["port"] else None
    if port is not None and not 0 < port < 65536:
        return None
    return match["name"], port


def parse_allowed_hosts(entries: Iterable[str]) -> list[HostName]:
    """The extra names a server answers for, from ``name`` (any port) or ``name:port``
    entries; ValueError names the first entry that is not one."""
    found: list[HostName] = []
    for entry in entries:
        if not entry.strip():
            continue
        parsed = parse_host(entry)
        if parsed is None:
            raise ValueError(
                f"{entry!r} is not a host name: give NAME or NAME:PORT "
                "(an IPv6 address in brackets, e.g. [::1]:8765)"
            )
        found.append(parsed)
    return found


def allowed_hosts(bind_host: str, port: int, extra: Iterable[HostName] = ()) -> frozenset[HostName]:
    """The Host values a server bound to ``bind_host:port`` answers: the bind host,
    localhost, 127.0.0.1 and [::1] at its port, and the ``extra`` names."""
    bound = f"[{bind_host}]" if ":" in bind_host else bind_host
    names = {bound.lower(), "localhost", "127.0.0.1", "[::1]"}
    return frozenset({(name, port) for name in names} | set(extra))


def host_allowed(header: str | None, allowed: frozenset[HostName]) -> bool:
    """Whether a request's Host header names this server. A name that resolves to the
    server without being one of its own (DNS rebinding) is refused."""
    parsed = parse_host(header or "")
    if parsed is None:
        return False
    name, port = parsed
    if port is None:
        port = DEFAULT_PORTS["http"]
    return (name, None) in allowed or (name, port) in allowed


# -- Origin -------------------------------------------------------------------------------


def origin_of(url: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of a URL or an Origin header's value; None for ``null``
    and anything that is not an http(s) URL."""
    parts = urlsplit(url.strip())
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    return parts.scheme, parts.hostname, DEFAULT_PORTS[parts.scheme] if port is None else port


def same_origin(origin: str | None, referer: str | None, host: str, scheme: str = "http") -> bool:
    """Whether a browser's request comes from a page of the server it is sent to: its
    Origin header (or, when it sends none, its Referer) names the same scheme, host and
    port as the request's Host. A page on another port of the same host is another origin,
    though the browser sends it the cookie (SameSite ignores ports)."""
    claimed = origin if origin is not None else referer
    if not claimed:
        return False
    theirs = origin_of(claimed)
    return theirs is not None and theirs == origin_of(f"{scheme}://{host}")


# -- the session cookie and the CSRF token ------------------------------------------------


def _mac(token: str, purpose: str, session_id: str) -> str:
    message = f"waystone-{purpose}:{session_id}".encode()
    return hmac.new(token.encode(), message, hashlib.sha256).hexdigest()


def new_session_id() -> str:
    return secrets.token_urlsafe(32)


def session_cookie(token: str, session_id: str) -> str:
    """The cookie's value for a session: its id and an HMAC of it keyed by the token."""
    return f"{session_id}.{_mac(token, 'session', session_id)}"


def session_of(token: str, cookie: str | None) -> str | None:
    """The session id a cookie carries, if this deployment's token signed it (whether the
    session is still open is the store's to say)."""
    session_id, sep, mac = (cookie or "").rpartition(".")
    if not sep or not session_id:
        return None
    expected = _mac(token, "session", session_id)
    return session_id if hmac.compare_digest(mac.encode(), expected.encode()) else None


def csrf_token(token: str, session_id: str) -> str:
    """The token every form of a session carries."""
    return _mac(token, "csrf", session_id)


def csrf_valid(token: str, session_id: str, given: str | None) -> bool:
    expected = csrf_token(token, session_id)
    return hmac.compare_digest((given or "").encode(), expected.encode())


# -- the sessions -------------------------------------------------------------------------


def session_key(session_id: str) -> str:
    """What the table keeps for a session: a hash, so reading the table opens no session."""
    return hashlib.sha256(session_id.encode()).hexdigest()


class SessionStore:
    """Open sessions in Postgres, judged on its clock: a logout (or expiry) ends a session
    for every server process at once. ``connect`` gives a connection of the runtime's pool
    (:meth:`waystone.runtime.Runtime.connection`)."""

    def __init__(
        self, connect: Callable[[], AbstractContextManager[Conn]], seconds: int = SESSION_SECONDS
    ) -> None:
        self.connect, self.seconds = connect, seconds

    def _run(self, name: str, **params: object) -> list[dict[str, object]]:
        with self.connect() as conn, conn.transaction():
            cur = conn.execute(sql.query(name), params)
            return cur.fetchall() if cur.description else []

    def open(self, session_id: str) -> None:
        self._run("open_web_session", key=session_key(session_id), seconds=self.seconds)

    def active(self, session_id: str) -> bool:
        return bool(self._run("web_session_active", key=session_key(session_id)))

    def revoke(self, session_id: str) -> None:
        self._run("revoke_web_session", key=session_key(session_id))
