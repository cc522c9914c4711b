"""The key of an effect made inside a node: a pure function of where and what it is."""

import os
import subprocess
import sys

from waystone.effects._keys import effect_key, idempotency_key

ARGS = {"to": "ana@example.com", "body": "your refund is on its way"}
PARTS = ("thread-1", "notify:1f0c2a9d-0b7e-6a1b-8c3d-4e5f60718293", "call:0", "send_email")


def test_effect_key_is_stable_across_processes() -> None:
    code = (
        "from waystone.effects._keys import effect_key;"
        f"print(effect_key(*{PARTS!r}, {{'body': {ARGS['body']!r}, 'to': {ARGS['to']!r}}}))"
    )
    other = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "123"},
    )
    assert other.stdout.strip() == effect_key(*PARTS, ARGS)


def test_effect_key_ignores_argument_order() -> None:
    reordered = dict(reversed(list(ARGS.items())))
    assert effect_key(*PARTS, reordered) == effect_key(*PARTS, ARGS)


def test_effect_key_differs_for_each_part() -> None:
    base = effect_key(*PARTS, ARGS)
    for index in range(len(PARTS)):
        changed = list(PARTS)
        changed[index] += "x"
        assert effect_key(*changed, ARGS) != base, PARTS[index]
    assert effect_key(*PARTS, {**ARGS, "body": "other"}) != base


def test_effect_key_names_its_tool() -> None:
    assert effect_key(*PARTS, ARGS).startswith("ws-send_email-")


def test_effect_key_never_equals_a_preset_key() -> None:
    # a node's effect and a preset action of one thread never share a ledger row
    assert effect_key("t", "", "", "refund", ARGS) != idempotency_key("t", 0, "refund", ARGS)
