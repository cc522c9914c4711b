"""Who may read and change what through the operator's routes (the pages, ``/api/...``
and the webhook): the bearer token, a form login's session and its CSRF token, and the
Origin a form is sent from. The decisions are :mod:`waystone.web.security`'s; this module
applies them to a request's headers."""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass

from starlette.datastructures import Headers

from waystone.web.replies import HttpError
from waystone.web.security import (
    CSRF_FIELD,
    SessionStore,
    csrf_token,
    csrf_valid,
    same_origin,
    session_of,
)

TOKEN_ENV = "WAYSTONE_API_TOKEN"
SESSION_COOKIE = "waystone_session"
NO_TOKEN = (
    f"changes are disabled: no API token is configured. Set {TOKEN_ENV} and restart "
    "`waystone serve`."
)
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="waystone"'}


@dataclass(frozen=True)
class Gate:
    """``token``: what a change needs (None: nothing changes); ``public_reads``: anyone
    reads though a token is set; ``sessions``: the form logins, in Postgres. The methods
    that look a session up query the database: call them off the event loop."""

    token: str | None
    public_reads: bool
    sessions: SessionStore

    def bearer_valid(self, headers: Headers) -> bool:
        scheme, _, given = headers.get("authorization", "").partition(" ")
        return (
            self.token is not None
            and scheme.lower() == "bearer"
            and hmac.compare_digest(given.strip().encode(), self.token.encode())
        )

    def require_bearer(self, headers: Headers) -> None:
        if self.token is None:
            raise HttpError(401, NO_TOKEN)
        if not self.bearer_valid(headers):
            raise HttpError(
                401,
                f"missing or wrong token: send Authorization: Bearer <{TOKEN_ENV}>",
                CHALLENGE,
            )

    def session(self, cookies: Mapping[str, str]) -> str | None:
        """The id of the open session the request's cookie carries, if any."""
        if self.token is None:
            return None
        session_id = session_of(self.token, cookies.get(SESSION_COOKIE))
        if session_id is None or not self.sessions.active(session_id):
            return None
        return session_id

    def csrf(self, session_id: str | None) -> str | None:
        """The CSRF token the session's forms carry (None: not logged in)."""
        if session_id is None or self.token is None:
            return None
        return csrf_token(self.token, session_id)

    def authenticated(self, headers: Headers, cookies: Mapping[str, str]) -> bool:
        """The request carries the token or an open session: it may see real values
        (public reads and a server without a token show tokens only)."""
        return self.bearer_valid(headers) or self.session(cookies) is not None

    def require_reader(self, headers: Headers, cookies: Mapping[str, str]) -> None:
        """Reading is open without a token (a read-only server) or with public reads;
        otherwise it needs the bearer token or a session."""
        if self.token is None or self.public_reads or self.bearer_valid(headers):
            return
        if self.session(cookies) is None:
            raise HttpError(
                401,
                f"reading needs the API token: log in, or send Authorization: Bearer <{TOKEN_ENV}>",
                CHALLENGE,
            )

    def require_session(
        self, headers: Headers, cookies: Mapping[str, str], form: Mapping[str, str]
    ) -> str:
        """A form post's session id, once the post is known to come from one of this
        server's pages of that session: its Origin, and the session's CSRF token."""
        if self.token is None:
            raise HttpError(401, NO_TOKEN)
        session_id = self.session(cookies)
        if session_id is None:
            raise HttpError(401, "not logged in: log in with the API token first")
        host = headers.get("host", "")
        if not same_origin(headers.get("origin"), headers.get("referer"), host):
            raise HttpError(
                403,
                f"this form was not sent from a page of http://{host} (Origin "
                f"{headers.get('origin')!r}): open the dashboard there and send it again",
            )
        if not csrf_valid(self.token, session_id, form.get(CSRF_FIELD)):
            raise HttpError(
                403, "the form's CSRF token is missing or wrong: reload the page and send it again"
            )
        return session_id
