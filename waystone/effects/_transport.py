"""What a transport error means for an effect: could the request have reached the provider?

The usual clients' errors (httpx, requests and urllib3, urllib, the socket module), raised
by a tool's ``apply``, are read the way the tool's author would mean them:

==========================================================  ==============================
what happened                                               error
==========================================================  ==============================
refused, name not resolved, connect timeout, no free        TransientError (nothing was
connection in the pool                                      sent: a retry is safe)
read timeout, reset or closed after sending, a broken       UnknownOutcome (it may have
answer, a timeout whose phase is not known, a TLS error     happened: reconcile first)
(requests reports one after sending as it reports one
in the handshake)
an HTTP status error (``raise_for_status``, urllib's        by its status (see
``HTTPError``)                                              :func:`classify_status`)
the request could not be built (bad URL, bad header)        PermanentError
==========================================================  ==============================

Nothing here imports requests or urllib3: they are recognised by their classes' names.
"""

from __future__ import annotations

import socket
import urllib.error
from http.client import HTTPException

from waystone.errors import PermanentError, TransientError, UnknownOutcome, WaystoneError

Kind = type[WaystoneError]

# (module prefix, class name) -> kind; the first class of an error's MRO found here decides
_BY_NAME: dict[tuple[str, str], Kind] = {
    ("httpx", "ConnectError"): TransientError,
    ("httpx", "ConnectTimeout"): TransientError,
    ("httpx", "PoolTimeout"): TransientError,
    ("httpx", "ProxyError"): TransientError,
    ("httpx", "UnsupportedProtocol"): PermanentError,
    ("httpx", "LocalProtocolError"): PermanentError,
    ("httpx", "InvalidURL"): PermanentError,
    ("httpx", "TransportError"): UnknownOutcome,  # read/write errors and timeouts, etc.
    ("requests", "ConnectTimeout"): TransientError,
    ("requests", "SSLError"): UnknownOutcome,
    ("requests", "ProxyError"): TransientError,
    ("requests", "ReadTimeout"): UnknownOutcome,
    ("requests", "ChunkedEncodingError"): UnknownOutcome,
    ("requests", "InvalidURL"): PermanentError,
    ("requests", "MissingSchema"): PermanentError,
    ("requests", "InvalidSchema"): PermanentError,
    ("requests", "InvalidHeader"): PermanentError,
    ("urllib3", "NewConnectionError"): TransientError,
    ("urllib3", "ConnectTimeoutError"): TransientError,
    ("urllib3", "NameResolutionError"): TransientError,
    ("urllib3", "ReadTimeoutError"): UnknownOutcome,
    ("urllib3", "ProtocolError"): UnknownOutcome,
    ("urllib3", "SSLError"): UnknownOutcome,
}
# Errors whose meaning is in what they wrap (requests' ConnectionError wraps urllib3's).
_WRAPPERS = {("requests", "ConnectionError"), ("urllib3", "MaxRetryError")}
_MAX_DEPTH = 8


def classify_status(status: int) -> Kind | None:
    """The error class for an HTTP status, or ``None`` for success."""
    if status < 400:
        return None
    if status in (408, 429, 503):  # refused before processing
        return TransientError
    if status >= 500:  # it may have been processed: a proxy's 502 after a commit
        return UnknownOutcome
    return PermanentError


def classify_transport(exc: BaseException) -> Kind | None:
    """The meaning of a client's error, or ``None`` when it is no transport error."""
    seen: set[int] = set()
    current: BaseException | None = exc
    wrapped = False
    for _ in range(_MAX_DEPTH):
        if current is None or id(current) in seen:
            break
        seen.add(id(current))
        found = _one(current)
        if found is not None:
            return found
        wrapped = wrapped or _named(current, _WRAPPERS)
        current = _inner(current)
    return UnknownOutcome if wrapped else None


def _one(exc: BaseException) -> Kind | None:
    if isinstance(exc, WaystoneError):
        return type(exc)
    for cls in type(exc).__mro__:
        kind = _BY_NAME.get((cls.__module__.split(".")[0], cls.__name__))
        if kind is not None:
            return kind
    status = _status(exc)
    if status is not None:
        return classify_status(status)
    if isinstance(exc, ConnectionRefusedError | socket.gaierror):
        return TransientError
    if isinstance(exc, ConnectionError | TimeoutError | HTTPException):
        return UnknownOutcome  # reset, aborted, broken pipe, a timeout of unknown phase
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc.reason, BaseException):
        return PermanentError  # unknown url type and the like: nothing was sent
    return None


def _status(exc: BaseException) -> int | None:
    """The HTTP status an error carries (httpx's and requests' ``response``, urllib's code)."""
    if isinstance(exc, urllib.error.HTTPError):
        return int(exc.code)
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) and _named(exc, _STATUS_ERRORS) else None


_STATUS_ERRORS = {("httpx", "HTTPStatusError"), ("requests", "HTTPError")}


def _named(exc: BaseException, names: set[tuple[str, str]]) -> bool:
    return any((c.__module__.split(".")[0], c.__name__) in names for c in type(exc).__mro__)


def _inner(exc: BaseException) -> BaseException | None:
    """What an error wraps: urllib's and urllib3's ``reason``, a first argument, its
    explicit cause. Never an error it was raised while handling (``__context__``): one
    handled before (a fallback endpoint refused) says nothing of the request that failed."""
    reason = getattr(exc, "reason", None)
    if isinstance(reason, BaseException):
        return reason
    if exc.args and isinstance(exc.args[0], BaseException):
        return exc.args[0]
    return exc.__cause__
