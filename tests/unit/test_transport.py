"""What a client's transport error means: could the request have reached the provider?"""

from __future__ import annotations

import socket
import urllib.error
from http.client import RemoteDisconnected

import httpx
import pytest
import requests
import urllib3.exceptions

from waystone.effects._transport import classify_transport
from waystone.errors import PermanentError, TransientError, UnknownOutcome

REQUEST = httpx.Request("POST", "http://127.0.0.1:1/refunds")


def _requests_wrapping(inner: BaseException) -> requests.ConnectionError:
    retries = urllib3.exceptions.MaxRetryError(None, "/refunds", reason=inner)  # type: ignore[arg-type]
    return requests.ConnectionError(retries)


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (httpx.ConnectError("refused", request=REQUEST), TransientError),
        (httpx.ConnectTimeout("slow connect", request=REQUEST), TransientError),
        (httpx.PoolTimeout("no connection", request=REQUEST), TransientError),
        (httpx.ReadTimeout("no answer", request=REQUEST), UnknownOutcome),
        (httpx.WriteTimeout("half sent", request=REQUEST), UnknownOutcome),
        (httpx.RemoteProtocolError("closed mid-answer", request=REQUEST), UnknownOutcome),
        (httpx.ReadError("reset", request=REQUEST), UnknownOutcome),
        (httpx.UnsupportedProtocol("ftp://"), PermanentError),
        (requests.ConnectTimeout("slow connect"), TransientError),
        (requests.ReadTimeout("no answer"), UnknownOutcome),
        (
            _requests_wrapping(urllib3.exceptions.NewConnectionError(None, "refused")),
            TransientError,
        ),  # type: ignore[arg-type]
        (_requests_wrapping(urllib3.exceptions.ProtocolError("aborted")), UnknownOutcome),
        (requests.ConnectionError("something else"), UnknownOutcome),
        (requests.exceptions.MissingSchema("no scheme"), PermanentError),
        (requests.exceptions.SSLError("bad record mac"), UnknownOutcome),  # maybe after sending
        (urllib.error.URLError(ConnectionRefusedError(111, "refused")), TransientError),
        (urllib.error.URLError(socket.gaierror(-2, "unknown host")), TransientError),
        (urllib.error.URLError(TimeoutError("timed out")), UnknownOutcome),
        (urllib.error.URLError("unknown url type: ftp"), PermanentError),
        (ConnectionRefusedError(111, "refused"), TransientError),
        (socket.gaierror(-2, "unknown host"), TransientError),
        (ConnectionResetError(104, "reset"), UnknownOutcome),
        (BrokenPipeError(32, "broken pipe"), UnknownOutcome),
        (TimeoutError("timed out"), UnknownOutcome),
        (RemoteDisconnected("closed"), UnknownOutcome),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else v.__name__,
)
def test_a_clients_error_means_what_the_request_can_have_done(
    error: BaseException, kind: type[Exception]
) -> None:
    assert classify_transport(error) is kind


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (429, TransientError),
        (503, TransientError),
        (500, UnknownOutcome),
        (502, UnknownOutcome),
        (404, PermanentError),
        (422, PermanentError),
    ],
)
def test_a_status_error_means_its_status(status: int, kind: type[Exception]) -> None:
    response = httpx.Response(status, request=REQUEST)
    raised = httpx.HTTPStatusError("status", request=REQUEST, response=response)
    assert classify_transport(raised) is kind
    http_error = urllib.error.HTTPError("http://p/refunds", status, "status", {}, None)  # type: ignore[arg-type]
    assert classify_transport(http_error) is kind
    wrapped = requests.HTTPError(response=requests.Response())
    wrapped.response.status_code = status
    assert classify_transport(wrapped) is kind


def test_no_transport_error_means_nothing_and_a_cycle_ends() -> None:
    assert classify_transport(ValueError("a bug in the tool")) is None
    first, second = RuntimeError("a"), RuntimeError("b")
    first.__context__, second.__context__ = second, first
    assert classify_transport(first) is None


def test_a_wrapped_transport_error_is_found_through_its_cause() -> None:
    try:
        try:
            raise httpx.ConnectError("refused", request=REQUEST)
        except httpx.ConnectError as exc:
            raise RuntimeError("the tool's own wrapper") from exc
    except RuntimeError as outer:
        assert classify_transport(outer) is TransientError


def test_an_error_handled_before_says_nothing_of_the_request_that_failed() -> None:
    try:
        try:
            raise httpx.ConnectError("the primary endpoint refused", request=REQUEST)
        except httpx.ConnectError:
            raise ValueError("the fallback's answer did not parse") from None
    except ValueError as failed:
        failed.__suppress_context__ = False
        assert failed.__context__ is not None
        assert classify_transport(failed) is None  # an unknown outcome for the runner
