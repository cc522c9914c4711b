"""A worker's name (a lease's owner): what it says of its process survives log redaction."""

from __future__ import annotations

from waystone._privacy.pii import Detector
from waystone._runs.registry import owner_is_dead, pid_namespace_label, process_owner


def test_a_pid_namespace_in_a_workers_name_is_not_taken_for_a_phone_number() -> None:
    detector = Detector()
    assert list(detector.find("host:4026531836:1234567:0badf00d"))  # in decimal, it would be
    name = f"host:{pid_namespace_label(4026531836)}:1234567:0badf00d"
    assert name == "host:effffffc:1234567:0badf00d"
    assert list(detector.find(name)) == []


def test_this_process_is_alive_by_its_own_name() -> None:
    owner = process_owner()
    assert detector_free(owner) and owner_is_dead(owner) is False


def detector_free(text: str) -> bool:
    return list(Detector().find(text.split(":", 1)[1])) == []  # the host's name is the machine's
