"""What a run's history keeps of a receipt (waystone.effects._receipts)."""

from __future__ import annotations

from waystone.effects._keys import canonical_json
from waystone.effects._receipts import SHOWN_CHARS, receipt_id, shown


def test_a_receipt_id_is_its_own_or_its_outputs() -> None:
    assert receipt_id({"id": 3}) == "3"
    assert receipt_id({"output": {"id": "bk-1"}}) == "bk-1"
    assert receipt_id({"output": "booked"}) is None
    assert receipt_id(None) is None


def test_a_short_receipt_is_shown_whole() -> None:
    receipt = {"id": "re_1", "status": "succeeded"}
    assert shown(receipt) is receipt


def test_a_long_receipt_is_shown_as_its_id_size_and_keys() -> None:
    content = "x" * (SHOWN_CHARS * 10)
    receipt = {"message": {"content": content, "status": "success"}}
    assert shown(receipt) == {
        "summary": {"chars": len(canonical_json(receipt)), "keys": ["message"]}
    }
    many = {f"k{i:02}": "y" * 100 for i in range(40)} | {"id": "z" * SHOWN_CHARS}
    summary = shown(many)["summary"]
    assert summary["keys"] == sorted(many)[:10]
    assert summary["id"] == "z" * (SHOWN_CHARS // 4)
    assert len(canonical_json(summary)) < SHOWN_CHARS  # bounded, whatever the receipt
