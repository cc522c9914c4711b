"""JSON from a caller is parsed within limits: what passes can be stored and walked."""

from __future__ import annotations

import pytest

from waystone._json_input import MAX_CHARS, MAX_DEPTH, parse_json_input
from waystone.errors import BadInput


def test_an_ordinary_document_comes_back_as_parsed() -> None:
    text = '{"order_id": "1001", "amount": "120.00", "tags": ["a", {"b": null}], "n": 1.5}'
    assert parse_json_input(text, "--input") == {
        "order_id": "1001",
        "amount": "120.00",
        "tags": ["a", {"b": None}],
        "n": 1.5,
    }
    assert parse_json_input(b'"\\ud83d\\ude00"', "the body") == "\U0001f600"  # a pair


def test_nesting_up_to_the_limit_passes_deeper_is_bad_input_not_a_recursion_error() -> None:
    assert parse_json_input("[" * MAX_DEPTH + "]" * MAX_DEPTH, "--input")
    for depth in (MAX_DEPTH + 1, 5000, 100_000):  # the last, past Python's recursion limit
        with pytest.raises(BadInput, match=f"--input is nested too deeply: at most {MAX_DEPTH}"):
            parse_json_input("[" * depth + "]" * depth, "--input")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"by": "\\ud800"}', "lone surrogate"),
        ('{"\\udc00": 1}', "lone surrogate"),
        ('{"note": "a\\u0000b"}', "NUL"),
        ('{"amount": NaN}', "NaN, which is not JSON"),
        ("[" + "1" * 5000 + "]", "too many digits"),
        ("{oops", "not valid JSON"),
        (b"\xff", "not UTF-8"),
        (" " * (MAX_CHARS + 1), "characters long"),
    ],
)
def test_what_cannot_be_stored_is_bad_input(text: str | bytes, message: str) -> None:
    with pytest.raises(BadInput, match=message):
        parse_json_input(text, "the body")
