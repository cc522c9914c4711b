import subprocess
import sys

from waystone.effects._keys import action_digest, canonical_json, idempotency_key

ARGS = {"order_id": "1001", "amount": "120.00", "currency": "EUR"}


def test_key_is_stable_across_processes() -> None:
    code = (
        "from waystone.effects._keys import idempotency_key;"
        "print(idempotency_key('t-1', 1, 'refund', "
        "{'currency': 'EUR', 'amount': '120.00', 'order_id': '1001'}))"
    )
    other = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123", "PATH": ""},
    )
    assert other.stdout.strip() == idempotency_key("t-1", 1, "refund", ARGS)


def test_key_ignores_argument_order() -> None:
    reordered = dict(reversed(list(ARGS.items())))
    assert idempotency_key("t", 1, "refund", reordered) == idempotency_key("t", 1, "refund", ARGS)


def test_key_differs_for_each_part() -> None:
    base = idempotency_key("t", 1, "refund", ARGS)
    assert idempotency_key("t2", 1, "refund", ARGS) != base
    assert idempotency_key("t", 2, "refund", ARGS) != base
    assert idempotency_key("t", 1, "refund2", ARGS) != base
    assert idempotency_key("t", 1, "refund", {**ARGS, "amount": "120.01"}) != base


def test_digest_binds_tool_and_args_not_thread() -> None:
    assert action_digest("refund", ARGS) == action_digest("refund", dict(ARGS))
    assert action_digest("refund", ARGS) != action_digest("refund", {**ARGS, "amount": "1.00"})
    assert action_digest("refund", ARGS) != action_digest("notify", ARGS)


def test_canonical_json_is_compact_and_sorted() -> None:
    assert canonical_json({"b": 1, "a": [1, "é"]}) == '{"a":[1,"é"],"b":1}'
