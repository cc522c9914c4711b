"""Redaction's walk maps every string a value holds and keeps every container's type: a
NamedTuple stays that NamedTuple (a DeltaChannel's snapshot is one), a set a set, a
dataclass, a pydantic model, a message, a Send or an error of its own class."""

from __future__ import annotations

import dataclasses
from collections import OrderedDict, defaultdict, deque
from datetime import UTC, datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any, NamedTuple
from uuid import UUID

import pydantic
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.types import Command, Interrupt, Overwrite, Send

from waystone._privacy.walk import string_mapper

hide = string_mapper(lambda s: s.replace("ana", "***"))


class Point(NamedTuple):
    x: int
    label: str


@dataclasses.dataclass(frozen=True)
class Frozen:
    label: str
    items: list[str]


@dataclasses.dataclass
class Unset:
    label: str
    later: str = dataclasses.field(init=False, default="set later")


class Card(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")
    name: str


class Color(StrEnum):
    RED = "red"


class Tag(str):
    pass


class Refused(Exception):
    def __init__(self, reason: str, *, code: int) -> None:
        super().__init__(reason)
        self.code = code


def test_a_named_tuple_stays_a_named_tuple() -> None:
    got = hide(Point(1, "ana"))
    assert type(got) is Point and got == Point(1, "***")
    snapshot = hide(_DeltaSnapshot([{"ana": "to ana"}]))
    assert type(snapshot) is _DeltaSnapshot and snapshot.value == [{"***": "to ***"}]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (("ana", 1), ("***", 1)),
        ({"ana", "bo"}, {"***", "bo"}),
        (frozenset({"ana"}), frozenset({"***"})),
        (OrderedDict(ana="ana"), OrderedDict({"***": "***"})),
        (Tag("ana"), "***"),
    ],
    ids=["tuple", "set", "frozenset", "ordered dict", "str subclass"],
)
def test_a_container_keeps_its_type(value: Any, expected: Any) -> None:
    got = hide(value)
    assert type(got) is type(expected) and got == expected


def test_a_container_keeps_what_its_class_carries() -> None:
    counts: defaultdict[str, list[str]] = defaultdict(list, {"a": ["ana"]})
    got = hide(counts)
    assert type(got) is defaultdict and got == {"a": ["***"]} and got.default_factory is list
    queue = hide(deque(["ana"], maxlen=2))
    assert type(queue) is deque and list(queue) == ["***"] and queue.maxlen == 2


def test_dataclasses_and_models_are_copied_with_their_strings_mapped() -> None:
    frozen = Frozen("ana", ["ana"])
    got = hide(frozen)
    assert type(got) is Frozen and got == Frozen("***", ["***"]) and frozen.label == "ana"
    unset = Unset("a")
    unset.later = "ana"
    assert (hide(unset).label, hide(unset).later) == ("a", "***")
    card = hide(Card(name="ana", note="ana"))  # type: ignore[call-arg]
    assert type(card) is Card and card.name == "***" and card.model_extra == {"note": "***"}


def test_messages_keep_their_class_and_tool_calls() -> None:
    message = AIMessage("ana", tool_calls=[{"name": "t", "args": {"to": "ana"}, "id": "c"}])
    got = hide([HumanMessage("hi ana"), message])
    assert [type(m) for m in got] == [HumanMessage, AIMessage]
    assert got[0].content == "hi ***"
    assert got[1].content == "***" and got[1].tool_calls[0]["args"] == {"to": "***"}


def test_langgraph_values_keep_their_class_and_fields() -> None:
    send = hide(Send("ana", {"to": "ana"}, timeout=5))
    assert type(send) is Send and send.node == "ana" and send.arg == {"to": "***"}
    assert send.timeout == Send("ana", None, timeout=5).timeout
    asked = hide(Interrupt("ana", id="abc", response_schema={"title": "ana"}))
    assert type(asked) is Interrupt and asked.value == "***" and asked.id == "abc"
    assert asked.response_schema == {"title": "***"}
    command = hide(Command(update={"a": "ana"}, goto=[Send("n", "ana")], resume="ana"))
    assert type(command) is Command and command.update == {"a": "***"}
    assert command.resume == "***" and command.goto == [Send("n", "***")]
    overwrite = hide(Overwrite(["ana"]))
    assert type(overwrite) is Overwrite and overwrite.value == ["***"]


def test_an_error_keeps_its_class_and_attributes() -> None:
    got = hide(KeyError("ana"))
    assert type(got) is KeyError and repr(got) == "KeyError('***')"
    refused = hide(Refused("no ana", code=4))
    assert type(refused) is Refused and refused.args == ("no ***",) and refused.code == 4


def test_values_without_text_are_left_alone() -> None:
    for value in (
        Color.RED,
        b"a",
        bytearray(b"a"),
        datetime(2024, 1, 2, tzinfo=UTC),
        UUID(int=1),
        Decimal("1.20"),
        Point,
    ):
        assert hide(value) is value


def test_a_value_whose_strings_stay_the_same_is_the_same_object() -> None:
    for value in (
        Point(1, "a"),
        {"a", "b"},
        Frozen("a", ["b"]),
        Card(name="a"),
        HumanMessage("hi"),
        Send("n", {"a": "b"}),
        KeyError("k"),
        OrderedDict(a="b"),
    ):
        assert hide(value) is value
