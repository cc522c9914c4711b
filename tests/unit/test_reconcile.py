import pytest

from waystone.effects._interrupts import again_on_resume, resumed_in_task
from waystone.effects._reconcile import Step, after_lookup, next_step


@pytest.mark.parametrize(
    ("status", "has_lookup", "dedupes", "step"),
    [
        (None, False, False, Step.APPLY),
        (None, True, True, Step.APPLY),
        ("confirmed", False, False, Step.REUSE),
        ("applied", False, False, Step.CONFIRM),
        ("failed", True, True, Step.FAILED),
        ("intent", True, False, Step.LOOKUP),
        ("intent", True, True, Step.LOOKUP),
        ("intent", False, True, Step.APPLY),
        ("intent", False, False, Step.NEEDS_HUMAN),
        ("unknown", True, False, Step.LOOKUP),
        ("unknown", False, True, Step.APPLY),
        ("unknown", False, False, Step.NEEDS_HUMAN),
        ("interrupted", False, False, Step.APPLY),  # raised interrupt(): made again
        ("interrupted", True, True, Step.APPLY),
        ("absent", False, False, Step.APPLY),  # a person found no trace: made again
        ("absent", True, False, Step.APPLY),
    ],
)
def test_reconciliation_table(
    status: str | None, has_lookup: bool, dedupes: bool, step: Step
) -> None:
    assert next_step(status, has_lookup=has_lookup, dedupes=dedupes) is step  # type: ignore[arg-type]


def test_after_lookup() -> None:
    assert after_lookup(True) is Step.CONFIRM
    assert after_lookup(False) is Step.APPLY


@pytest.mark.parametrize(
    ("sent", "resumed", "again"),
    [(0, False, True), (1, False, False), (0, True, False), (2, True, False)],
)
def test_an_interrupted_call_is_made_again_only_when_it_did_nothing_yet(
    sent: int, resumed: bool, again: bool
) -> None:
    assert again_on_resume(sent, resumed) is again


def test_outside_a_task_nothing_was_resumed() -> None:
    assert resumed_in_task() is False
