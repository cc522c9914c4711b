"""A request body is read as its model: a field missing or of the wrong JSON type is 422
naming the field (a union's members never named); JSON that breaks the input rules is
400 before any model sees it."""

from __future__ import annotations

from typing import get_args

import pytest

from waystone._runs.multitask import STRATEGIES
from waystone.errors import BadInput
from waystone.web.bodies import MultitaskStrategy, RunCreate, StateAt
from waystone.web.inputs import Paged, parsed, validated
from waystone.web.replies import HttpError


@pytest.mark.parametrize(
    ("model", "body", "said"),
    [
        (RunCreate, b"{}", "assistant_id: Field required"),
        (RunCreate, b'{"assistant_id": 7}', "assistant_id: Input should be a valid string"),
        (RunCreate, b'{"assistant_id": "a", "interrupt_before": 5}', "interrupt_before: "),
        (RunCreate, b'{"assistant_id": "a", "multitask_strategy": "later"}', "multitask_strategy"),
        (StateAt, b'{"checkpoint": {}}', "checkpoint.checkpoint_id: Field required"),
        (Paged, b'{"limit": "9"}', "limit: Input should be a valid integer"),
        (Paged, b'{"offset": -1}', "offset: Input should be greater than or equal to 0"),
    ],
)
def test_a_wrong_field_is_422_naming_it(model: type[Paged], body: bytes, said: str) -> None:
    with pytest.raises(HttpError) as refused:
        parsed(model, body)
    assert refused.value.status == 422
    assert said in refused.value.message and "literal[" not in refused.value.message


def test_json_that_breaks_the_input_rules_is_bad_input_before_the_model() -> None:
    for raw in (b'{"assistant_id": "a\\u0000"}', b"[1]", b"{nope", b""):
        with pytest.raises(BadInput):
            parsed(RunCreate, raw)
    assert parsed(Paged, b"", empty_ok=True) == Paged()


def test_a_query_carries_numbers_as_text() -> None:
    page = validated(Paged, {"limit": "0", "offset": "2"}, "the query", strict=False)
    assert page.window == slice(2, 3)  # a limit of 0 still shows one


def test_the_strategies_a_body_takes_are_the_runtime_s() -> None:
    assert set(get_args(MultitaskStrategy)) == set(STRATEGIES)
