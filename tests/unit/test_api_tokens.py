"""The API's tokens from the settings: the operator's and owners' (a file or a
variable), each told apart in constant time; a malformed entry is refused without the
token in the message."""

from __future__ import annotations

from pathlib import Path

import pytest

from waystone.config import Settings
from waystone.errors import BadInput
from waystone.web.owners import Tokens, from_settings


def test_owners_from_a_file_and_a_variable(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("# who=token\nalice = tok-a\n\n")
    tokens = from_settings(Settings(api_tokens_file=path, api_tokens="bob=tok-b"), "op")
    assert tokens.owners == {"alice": "tok-a", "bob": "tok-b"}
    assert tokens.caller("tok-a") == (True, "alice")
    assert tokens.caller("op") == (True, None)
    assert tokens.caller("tok-") == (False, None)
    assert not Tokens().any and Tokens(operator="x").any


@pytest.mark.parametrize(
    "pairs",
    ["alice", "alice=", "=secret-token", "alice=secret-token,alice=other-secret", "a=op"],
)
def test_malformed_tokens_are_refused_without_the_secret(pairs: str) -> None:
    with pytest.raises(BadInput) as refused:
        from_settings(Settings(api_tokens=pairs, api_tokens_file=None), "op")
    assert "secret" not in str(refused.value)


def test_an_unreadable_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="cannot be read"):
        from_settings(Settings(api_tokens_file=tmp_path / "none", api_tokens=None), None)
