"""A call run in a thread of its own while the test acts, and what it came to."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class Background:
    """``call()`` in a thread, started at once: ``join`` gives what it returned or raised."""

    def __init__(self, call: Callable[[], Any], daemon: bool = False) -> None:
        self.outcome: list[Any] = []
        self._thread = threading.Thread(target=self._run, args=(call,), daemon=daemon)
        self._thread.start()

    def _run(self, call: Callable[[], Any]) -> None:
        try:
            self.outcome.append(call())
        except BaseException as exc:  # what it raised is what the test checks
            self.outcome.append(exc)

    def join(self, timeout: float = 120) -> Any:
        self._thread.join(timeout=timeout)
        assert len(self.outcome) == 1, "the call did not end"
        return self.outcome[0]
