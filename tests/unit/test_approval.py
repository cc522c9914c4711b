from typing import Any

import pytest

from waystone.errors import BadInput
from waystone.preset._approval import parse_decision

OK: dict[str, Any] = {"choice": "approve", "digest": "sha256:ab", "key": "ws-k", "by": "ana"}


def test_valid_decisions() -> None:
    assert parse_decision(OK).choice == "approve"
    edit = parse_decision({**OK, "choice": "edit", "args": {"amount": "90.00"}})
    assert edit.args == {"amount": "90.00"}
    reject = parse_decision({**OK, "choice": "reject", "comment": "too much"})
    assert reject.comment == "too much"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("approve", "JSON object"),
        ({**OK, "choice": "maybe"}, "choice"),
        ({k: v for k, v in OK.items() if k != "digest"}, "digest"),
        ({k: v for k, v in OK.items() if k != "key"}, "key"),
        ({**OK, "by": " "}, "by"),
        ({**OK, "choice": "edit"}, "args"),
        ({**OK, "choice": "edit", "args": []}, "args"),
        ({**OK, "args": {"a": 1}}, "only goes with an 'edit'"),
        ({**OK, "choice": "reject"}, "reason"),
        ({**OK, "comment": 3}, "string"),
        ({**OK, "extra": 1}, "unknown"),
    ],
)
def test_invalid_decisions_say_what_is_wrong(raw: object, message: str) -> None:
    with pytest.raises(BadInput, match=message):
        parse_decision(raw)
