"""What a person may settle, and what the model is told of a settled call (docs/tools.md,
"Settling a call by hand")."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from langchain_core.tools import tool
from langgraph.errors import GraphBubbleUp

from waystone._runs.registry import Run
from waystone._runtime.settle import check_receipt, refusal, settled_receipt
from waystone.effects._kinds import ToolKind
from waystone.effects._ledger import Effect
from waystone.effects._proxy import tool_through
from waystone.effects._tool_calls import Escaped, LedgeredCall, _aescape, _escape, answer_of
from waystone.errors import (
    BadInput,
    PermanentError,
    TransientError,
    TransitionNotAllowed,
    UnknownOutcome,
)

BEGAN = datetime(2026, 1, 1, tzinfo=UTC)


def _run(state: str) -> Run:
    return Run(
        thread_id="t-1",
        agent="trip",
        state=state,
        goal="",
        input={},
        start_key=None,
        reason="",
        evidence={},
        lease_token=3,
        lease_owner=None,
        lease_expires_at=None,
        attempts=1,
        waiting_for=None,
        wake_at=None,
        forked_from=None,
        key_namespace=None,
        summary=None,
        pruned_at=None,
        created_at=BEGAN,
        updated_at=BEGAN,
    )


def _effect(status: str, thread_id: str = "t-1", after: timedelta = timedelta(1)) -> Effect:
    return Effect(
        key="k-1",
        thread_id=thread_id,
        ordinal=1,
        tool="book",
        args={},
        status=status,
        attempts=1,
        receipt=None,
        confirmation=None,
        error=None,
        created_at=BEGAN + after,
        updated_at=BEGAN + after,
    )


@pytest.mark.parametrize("status", ["intent", "unknown", "failed", "interrupted"])
@pytest.mark.parametrize("state", ["needs-human", "failed"])
def test_an_open_effect_of_a_run_nobody_drives_is_settled(state: str, status: str) -> None:
    assert refusal(_run(state), "k-1", _effect(status)) is None


@pytest.mark.parametrize(
    ("effect", "refused"),
    [
        (None, BadInput),  # no such key
        (_effect("intent", thread_id="t-2"), BadInput),  # another run's
        (_effect("intent", after=-timedelta(1)), BadInput),  # an earlier run's of the thread
        (_effect("confirmed"), TransitionNotAllowed),
        (_effect("applied"), TransitionNotAllowed),
        (_effect("absent"), TransitionNotAllowed),  # settled already
    ],
)
def test_what_is_no_open_effect_of_the_run_is_refused(
    effect: Effect | None, refused: type[Exception]
) -> None:
    found = refusal(_run("needs-human"), "k-1", effect)
    assert isinstance(found, refused)
    assert "k-1" in str(found)


@pytest.mark.parametrize("state", ["queued", "running", "waiting", "done"])
def test_an_effect_of_a_run_that_may_be_driven_is_refused(state: str) -> None:
    found = refusal(_run(state), "k-1", _effect("intent"))
    assert isinstance(found, TransitionNotAllowed)
    assert state in str(found)


def test_a_receipt_is_a_json_object_given_with_applied() -> None:
    assert check_receipt(True, None) is None
    assert check_receipt(True, {"id": "B1"}) == {"id": "B1"}
    with pytest.raises(BadInput, match="JSON object"):
        check_receipt(True, ["B1"])
    with pytest.raises(BadInput, match="--applied"):
        check_receipt(False, {"id": "B1"})
    with pytest.raises(BadInput, match="JSON values"):
        check_receipt(True, {"id": object()})


def test_a_settled_call_is_told_to_the_model_as_made_by_whom_and_why() -> None:
    kept = settled_receipt("ana", "the provider shows booking B1", None)
    assert answer_of("book", kept) == (
        "book was made, as recorded by ana: the provider shows booking B1"
    )
    assert settled_receipt("ana", "seen", {"id": "B1"}) == {"id": "B1"}
    assert answer_of("book", {"id": "B1"}) == (
        'book was made for this tool call; the provider shows: {"id":"B1"}'
    )
    assert "returned a int" in answer_of("book", {"kept": False, "type": "int"})


def _call(kind: ToolKind) -> LedgeredCall:
    request: Any = SimpleNamespace(
        tool_call={"name": "book", "args": {}, "id": "c1"}, runtime=SimpleNamespace(config={})
    )
    return LedgeredCall(request, kind)


REQUEST = httpx.Request("POST", "http://provider.test/refunds")


@pytest.mark.parametrize("kind", [ToolKind.AT_MOST_ONCE, ToolKind.IDEMPOTENT])
@pytest.mark.parametrize(
    ("error", "means"),
    [
        (httpx.ReadTimeout("timed out", request=REQUEST), UnknownOutcome),  # may have landed
        (httpx.ConnectError("refused", request=REQUEST), TransientError),  # nothing sent
        (
            httpx.HTTPStatusError(
                "502", request=REQUEST, response=httpx.Response(502, request=REQUEST)
            ),
            UnknownOutcome,
        ),
    ],
)
def test_a_transport_error_means_what_it_says_for_every_kind(
    kind: ToolKind, error: Exception, means: type[Exception]
) -> None:
    call = _call(kind)
    assert type(call._failed(error)) is means
    assert call.raised == []  # not the tool's own error: it is not raised on


def test_any_other_error_is_a_known_failure_raised_on_as_the_tools_own() -> None:
    call = _call(ToolKind.AT_MOST_ONCE)
    mistake = ValueError("no such order")
    assert isinstance(call._failed(mistake), PermanentError)
    assert call.raised == [mistake]
    refused = httpx.HTTPStatusError(
        "404", request=REQUEST, response=httpx.Response(404, request=REQUEST)
    )
    assert isinstance(call._failed(refused), PermanentError)
    assert call.raised == [mistake, refused]


def _raising(error: Exception) -> Any:
    @tool("book")
    def book(order_id: str) -> str:
        """Book the order."""
        raise error

    return book


def _escaping(book: Any) -> Any:
    return tool_through(book, _escape, _aescape, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "error",
    [httpx.ReadTimeout("timed out", request=REQUEST), httpx.ConnectError("no", request=REQUEST)],
)
def test_a_transport_error_is_carried_through_toolnode_to_the_ledger(error: Exception) -> None:
    """Through the handler of ``handle_tool_errors``, which would tell the model."""
    watched = _escaping(_raising(error))
    assert watched.name == "book"
    with pytest.raises(GraphBubbleUp) as sync:
        watched.invoke({"order_id": "7001"})
    with pytest.raises(GraphBubbleUp) as in_async:
        asyncio.run(watched.ainvoke({"order_id": "7001"}))
    for carried in (sync.value, in_async.value):
        assert isinstance(carried, Escaped) and carried.error is error


def test_any_other_error_of_the_tool_goes_to_toolnode_as_it_was() -> None:
    mistake = ValueError("no such order")
    with pytest.raises(ValueError) as raised:
        _escaping(_raising(mistake)).invoke({"order_id": "7001"})
    assert raised.value is mistake
