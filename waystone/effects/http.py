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
"""

from __future__ import annotations

from typing import Any

import httpx

from waystone.errors import PermanentError, TransientError, UnknownOutcome

TRANSIENT_STATUS = frozenset({408, 429, 503})


def classify_status(status: int) -> type[Exception] | None:
    """The error class for an HTTP status, or ``None`` for success."""
    if status < 400:
        return None
    if status in TRANSIENT_STATUS:
        return TransientError
    if status >= 500:
        return UnknownOutcome
    return PermanentError


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
            response = client.request(method, url, json=json, headers=headers, params=params)
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise TransientError(f"{method} {url}: cannot connect ({exc})") from exc
    except httpx.TimeoutException as exc:
        raise UnknownOutcome(f"{method} {url}: no answer within {timeout:g}s") from exc
    except httpx.TransportError as exc:
        raise UnknownOutcome(f"{method} {url}: connection lost mid-call ({exc})") from exc
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
