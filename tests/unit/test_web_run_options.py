"""A run request's checkpoint and durability, read as the reference reads them: the
checkpoint a run begins from (``checkpoint`` over ``checkpoint_id``), a subgraph's
refused; durability ``"sync"`` taken, weaker ones refused saying why."""

from __future__ import annotations

from typing import Any

import pytest

from waystone.errors import BadInput
from waystone.web.bodies import RunCreate
from waystone.web.run_options import Unsupported, check_durability, checkpoint_of, from_body


def body(**given: Any) -> RunCreate:
    return RunCreate.model_validate({"assistant_id": "chat", **given})


def test_the_checkpoint_a_run_begins_from() -> None:
    assert checkpoint_of(body()) is None
    assert checkpoint_of(body(checkpoint_id="c-1")) == "c-1"
    assert checkpoint_of(body(checkpoint={"checkpoint_id": "c-2", "checkpoint_ns": ""})) == "c-2"
    # as a state's checkpoint shows it (the Agent Chat UI sends its parent's back)
    shown = {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c-3", "checkpoint_map": None}
    assert checkpoint_of(body(checkpoint=shown)) == "c-3"
    rooted = {"checkpoint_id": "c-4", "checkpoint_map": {"": "c-4"}}
    assert checkpoint_of(body(checkpoint=rooted)) == "c-4"
    both = body(checkpoint_id="c-1", checkpoint={"checkpoint_id": "c-2"})
    assert checkpoint_of(both) == "c-2"  # as the reference merges them
    options = from_body(body(checkpoint_id="c-1"))
    assert options is not None and options.checkpoint_id == "c-1"


@pytest.mark.parametrize(
    ("given", "refused"),
    [
        ({"checkpoint_id": "c", "checkpoint_ns": "tools:1"}, Unsupported),
        ({"checkpoint_id": "c", "checkpoint_map": {"": "c", "child:1": "d"}}, Unsupported),
        ({"checkpoint_id": "c", "checkpoint_map": ["c"]}, BadInput),
        ({"checkpoint_id": 5}, BadInput),
        ({"checkpoint": "c"}, BadInput),
    ],
)
def test_a_checkpoint_that_cannot_be_begun_from_is_refused(
    given: dict[str, Any], refused: type[Exception]
) -> None:
    with pytest.raises(refused):
        checkpoint_of(body(checkpoint=given))


def test_durability_is_sync_only() -> None:
    for ok in (body(), body(durability="sync"), body(checkpoint_during=True)):
        check_durability(ok)
    for weaker in (body(durability="async"), body(durability="exit")):
        with pytest.raises(Unsupported, match="commits a checkpoint at every step"):
            from_body(weaker)
    with pytest.raises(Unsupported, match="checkpoint_during: false"):
        check_durability(body(checkpoint_during=False))
