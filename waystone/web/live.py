"""A stream's events merged: those made from the run's checkpoints (:mod:`stream`) and
the live ones its worker logged (:mod:`waystone._streams`), sent in the order of their ids.

An event is sent only once nothing that sorts before it can still arrive: a live event of
the step after checkpoint ``C`` once ``C`` was read (its values go first), and, while the
current attempt logs, a checkpoint's events once the log has reached that checkpoint (the
step's tokens go first; they may be written just after the checkpoint commits). Once the
run waited or ended, everything is in and goes. A committed message whose id was streamed
live is not sent again, as LangGraph's messages stream does not.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from waystone._streams import keys
from waystone._streams.log import ABANDONED, HIDDEN, Logged
from waystone.web.stream import Event, order

LIVE_MODES = ("messages-tuple", "custom")  # the API modes whose events are logged
_API_MODES = {"messages": "messages-tuple"}  # the mode an event is sent for, by its name


class Merge:
    """The events of one stream not sent yet; ``modes`` and ``subgraphs`` as it asked."""

    def __init__(self, modes: tuple[str, ...], subgraphs: bool) -> None:
        self.modes, self.subgraphs = modes, subgraphs
        self.read_to = ""  # the newest log key read
        self.attempts: set[int] = set()  # the attempts whose events (or marks) were read
        self.current = False  # the run's current attempt logs its events
        self.streamed: set[str] = set()  # ids of messages streamed live
        self._waiting: list[Event] = []

    def logged(self, lease_token: int | None, rows: Iterable[Logged]) -> None:
        """Log rows read after :attr:`read_to`, with the run's current lease token."""
        for row in rows:
            self.read_to = row.key
            self.attempts.add(row.attempt)
            if row.event == HIDDEN or not self._wanted(row.event):
                continue  # a message of a subgraph not streamed is sent at its step's end
            if row.event.partition("|")[0] == "messages" and isinstance(row.data, list):
                message = row.data[0] if row.data else None
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    self.streamed.add(message["id"])
            self._waiting.append(Event(row.key, row.event, row.data))
        self.current = lease_token is not None and lease_token in self.attempts

    def committed(self, made: Iterable[Event]) -> None:
        self._waiting += made

    def ready(self, root: str | None, settled: bool) -> list[Event]:
        """The events that can go now, in order (``root``: the newest checkpoint of the
        graph read; ``settled``: the run waited or ended, everything is read)."""
        self._waiting.sort(key=order)
        reached = keys.checkpoint_of(self.read_to) if self.read_to else ""
        k = 0
        for event in self._waiting:
            at, live = keys.checkpoint_of(event.id), _is_live(event.id)
            if not settled and live and at > (root or ""):
                break
            if not settled and not live and self.current and at > reached:
                break
            k += 1
        going, self._waiting = self._waiting[:k], self._waiting[k:]
        return [event for event in going if not self._streamed_again(event)]

    def _wanted(self, event: str) -> bool:
        if "|" in event and not self.subgraphs:
            return False
        if event == ABANDONED:
            return bool(set(self.modes) & set(LIVE_MODES))
        name = event.partition("|")[0]
        return _API_MODES.get(name, name) in self.modes

    def _streamed_again(self, event: Event) -> bool:
        if _is_live(event.id) or event.event.partition("|")[0] != "messages":
            return False
        message: Any = event.data[0] if isinstance(event.data, list) and event.data else None
        return isinstance(message, dict) and message.get("id") in self.streamed


def _is_live(event_id: str) -> bool:
    return event_id.partition(".")[2].startswith(keys.LIVE)
