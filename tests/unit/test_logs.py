"""Log lines about a run carry its thread id: from ``extra``, or from the drive they are in."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from waystone import logs


@pytest.fixture
def captured() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(logs.RunContext())
    handler.setFormatter(logs.RunFormatter("%(levelname)s %(message)s"))
    logger = logging.getLogger("waystone.test-logs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    yield logger, stream
    logger.removeHandler(handler)


def test_extra_fields_are_shown(captured: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = captured
    logger.info("driving run", extra={"thread_id": "refund-1", "lease_token": 3})
    assert stream.getvalue() == "INFO driving run thread_id=refund-1 lease_token=3\n"


def test_lines_logged_while_driving_a_run_name_it(
    captured: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, stream = captured
    marked = logs.about_run("refund-2")
    try:
        logger.warning("provider slow")
    finally:
        logs.done_with_run(marked)
    logger.info("idle")
    assert stream.getvalue().splitlines() == [
        "WARNING provider slow thread_id=refund-2",
        "INFO idle",
    ]


def test_fields_come_before_a_traceback(captured: tuple[logging.Logger, io.StringIO]) -> None:
    logger, stream = captured
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logger.exception("run failed", extra={"thread_id": "refund-3"})
    first, *rest = stream.getvalue().splitlines()
    assert first == "ERROR run failed thread_id=refund-3"
    assert rest[0].startswith("Traceback") and rest[-1] == "RuntimeError: boom"
