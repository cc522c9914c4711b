"""The stream log's event ids among the committed ones, and the merge that sends both in
id order, without Postgres."""

from __future__ import annotations

from typing import Any

from waystone._streams import keys
from waystone._streams.log import ABANDONED, HIDDEN, Logged, abandoned
from waystone.web.live import Merge
from waystone.web.stream import Event, order

C1, C2 = "1f0a0000-0000-6000-8000-000000000001", "1f0a0000-0000-6000-8001-000000000002"
COMMITTED_TAGS = ("0m000000", "1x000000", "1u000000", "2v", "2w", "2x000000", "3i0", "4i1", "5r")


def test_live_ids_sort_after_their_checkpoints_events_and_before_the_next_ones() -> None:
    committed = [f"{c}.{tag}" for c in (C1, C2) for tag in COMMITTED_TAGS]
    live = [keys.live(C1, 3, 1), keys.live(C1, 3, 2), keys.live(C1, 12, 1)]
    marks = [keys.mark(C1, 3), keys.mark(C2, 3)]
    gone = [keys.abandoned(C1, 12)]
    made = sorted([*committed, *live, *marks, *gone], key=lambda i: order(Event(i, "", None)))
    assert made == sorted(made)  # as strings, as a client compares them
    c1_last = made.index(f"{C1}.5r")
    assert made[c1_last + 1 :][:6] == [
        keys.mark(C1, 3),
        keys.live(C1, 3, 1),
        keys.live(C1, 3, 2),
        keys.abandoned(C1, 12),  # a later attempt's: after the earlier one's, before its own
        keys.live(C1, 12, 1),
        f"{C2}.0m000000",
    ]
    assert keys.NO_CHECKPOINT < C1 and keys.checkpoint_of(live[0]) == C1
    low, high = keys.left_over(C1)
    assert all(low < i < high for i in live + gone) and not low < keys.mark(C1, 3) < high


def row(key: str, event: str, data: Any = None, attempt: int = 1) -> Logged:
    return Logged(key, attempt, event, data)


def chunk(message_id: str, text: str) -> list[Any]:
    return [{"id": message_id, "type": "AIMessageChunk", "content": text}, {}]


def test_the_merge_sends_nothing_before_what_can_still_arrive() -> None:
    merge = Merge(("values", "messages-tuple"), subgraphs=False)
    merge.logged(
        1, [row(keys.mark(C1, 1), HIDDEN), row(keys.live(C1, 1, 1), "messages", chunk("m", "a"))]
    )
    assert merge.current
    assert merge.ready(None, settled=False) == []  # C1's values are not read yet
    merge.committed([Event(f"{C1}.2v", "values", {"n": 1})])
    assert [e.id for e in merge.ready(C1, settled=False)] == [f"{C1}.2v", keys.live(C1, 1, 1)]
    # C2 committed before the worker's last tokens of the step are in the log
    answer = [{"id": "m", "type": "ai", "content": "a b"}, {}]
    merge.committed([Event(f"{C2}.0m000000", "messages", answer), Event(f"{C2}.2v", "values", {})])
    assert merge.ready(C2, settled=False) == []
    merge.logged(
        1, [row(keys.live(C1, 1, 2), "messages", chunk("m", " b")), row(keys.mark(C2, 1), HIDDEN)]
    )
    sent = merge.ready(C2, settled=False)
    assert [e.id for e in sent] == [keys.live(C1, 1, 2), f"{C2}.2v"]  # the answer was streamed


def test_committed_events_wait_for_no_log_the_current_attempt_does_not_write() -> None:
    merge = Merge(("values", "custom"), subgraphs=False)
    merge.logged(2, [row(keys.mark(C1, 1), HIDDEN, attempt=1)])  # an earlier drive's
    assert not merge.current
    merge.committed([Event(f"{C2}.2v", "values", {})])
    assert [e.id for e in merge.ready(C2, settled=False)] == [f"{C2}.2v"]


def test_a_subgraphs_message_not_streamed_is_sent_at_its_steps_end() -> None:
    merge = Merge(("messages-tuple",), subgraphs=False)
    merge.logged(1, [row(keys.live(C1, 1, 1), "messages|child:1", chunk("m", "a"))])
    merge.committed([Event(f"{C2}.0m000000", "messages", [{"id": "m"}, {}])])
    assert [e.event for e in merge.ready(None, settled=True)] == ["messages"]


def test_the_abandoned_event_names_the_attempts_and_their_messages() -> None:
    rows = [
        {"attempt": 1, "event": "custom", "data": {"x": 1}},
        {"attempt": 1, "event": "messages", "data": chunk("m1", "a")},
        {"attempt": 2, "event": "messages|child:1", "data": chunk("m2", "b")},
        {"attempt": 2, "event": "messages", "data": chunk("m1", "c")},
    ]
    said = abandoned(C1, rows, lambda value: value)
    assert said == {"checkpoint_id": C1, "attempts": [1, 2], "message_ids": ["m1", "m2"]}
    merge = Merge(("custom",), subgraphs=False)
    merge.logged(3, [row(keys.abandoned(C1, 3), ABANDONED, said, attempt=3)])
    assert [e.event for e in merge.ready(None, settled=True)] == [ABANDONED]
