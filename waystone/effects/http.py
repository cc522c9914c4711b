"""HTTP calls for tools, with errors mapped to what a retry can and cannot fix.

=============================================  ==================
what happened                                  error
=============================================  ==================
connection refused / DNS / connect timeout     TransientError (nothing reached the provider)
408, 429, 503                                  TransientError (refused before processing)
500, 502, 504 and other 5xx                    UnknownOutcome (it may have been processed)
409                                            PermanentError (key reused with other args)
other 4xx                                      PermanentError
read timeout, reset after sending              UnknownOutcome (it may have happened)
=============================================  ==================

A 5xx other than 503 may come from a proxy after the provider committed the effect, so it
is reconciled (lookup, or the key) before any second call, never blindly retried.

Inside an effect the request is checked against the call's deadline right before it
leaves, and carries that deadline (``Request-Deadline``: see :mod:`waystone.effects.deadline`).
"""

from __future__ import annotations

from typing import Any

import httpx

from waystone.effects import deadline
from waystone.effects._transport import classify_status, classify_transport
from waystone.errors import TransientError, UnknownOutcome


def request(
    method: str,
    url: str,
    *,
    timeout: float,
    json: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    params: dict[str, str] | None = None,
    not_found_ok: bool = False,
) -> Any:
    """One HTTP call; the decoded JSON body, or ``None`` for a tolerated 404."""
    try:
        with httpx.Client(timeout=timeout) as client:
            request = client.build_request(
                method, url, json=json, headers={**(headers or {})}, params=params
            )
            request.headers.update(deadline.before_send())  # the last check: nothing after
            response = client.send(request)
    except httpx.TransportError as exc:
        kind = classify_transport(exc) or UnknownOutcome
        what = "cannot connect" if kind is TransientError else "no answer, it may have happened"
        raise kind(f"{method} {url}: {what} ({type(exc).__name__}: {exc})") from exc
    if not_found_ok and response.status_code == 404:
        return None
    error = classify_status(response.status_code)
    if error is not None:
        raise error(f"{method} {url}: HTTP {response.status_code}: {_message(response)}")
    return response.json()


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    if isinstance(body, dict) and "error" in body:
        return str(body["error"])
    return str(body)[:200]
