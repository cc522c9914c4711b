import pytest

from waystone.effects.http import classify_status
from waystone.errors import PermanentError, TransientError, UnknownOutcome


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (200, None),
        (201, None),
        (408, TransientError),
        (429, TransientError),
        (503, TransientError),
        (500, UnknownOutcome),
        (502, UnknownOutcome),
        (504, UnknownOutcome),
        (400, PermanentError),
        (404, PermanentError),
        (409, PermanentError),
        (422, PermanentError),
    ],
)
def test_classify_status(status: int, error: type[Exception] | None) -> None:
    assert classify_status(status) is error
