"""A worker's webhook deliverer: one thread that claims due deliveries (one worker each,
under a lease), sends each once per attempt with a stable ``Idempotency-Key``, and
records the outcome: delivered on a 2xx; retried with bounded, jittered backoff on a
transport error, a 5xx, 408 or 429; failed on any other answer, or once the attempts
are spent. It sleeps until the next delivery is due or a stop announces one (NOTIFY on
``waystone_webhook``, which the worker's listener passes on through :attr:`wake`).

A worker killed after a request left and before its outcome was recorded leaves the
delivery claimed: once its lease lapses another worker sends it again, with the same
key, so a receiver that keeps the keys it has seen drops the repeat.
"""

from __future__ import annotations

import logging
import random
import threading
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import httpx
import psycopg

from waystone._crash import crash_point
from waystone._webhooks.policy import Policy, Unresolved
from waystone.errors import BadInput, WaystoneError
from waystone.worker.webhook_payload import body_of, idempotency_key

if TYPE_CHECKING:
    from waystone._webhooks.store import Claimed
    from waystone.runtime import Runtime

logger = logging.getLogger(__name__)

CHANNEL = "waystone_webhook"
RETRIED = (408, 429)  # and every 5xx


class Deliverer:
    def __init__(
        self, rt: Runtime, owner: str, stopping: threading.Event, poll_seconds: float
    ) -> None:
        self.rt, self.owner, self._stopping = rt, owner, stopping
        self.poll_seconds = poll_seconds
        self.policy = Policy.from_env()
        self.wake = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="waystone-webhooks", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Once the worker is stopping: let a send under way finish and be recorded (a
        delivery left claimed waits for its lease to lapse before another worker sends
        it again)."""
        self.wake.set()
        if self._thread.is_alive():
            self._thread.join(self.policy.timeout_s + 5.0)

    def _loop(self) -> None:
        backoff = 0.5
        while not self._stopping.is_set():
            self.wake.clear()
            try:
                claimed = self.rt.webhooks.claim(self.owner, self.policy.lease_s)
                if claimed is not None:
                    self.deliver(claimed)
                    continue
                due = self.rt.webhooks.seconds_to_next()
            except (WaystoneError, psycopg.OperationalError) as exc:
                logger.warning("webhooks: database unavailable, retrying: %s", exc)
                self._stopping.wait(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            backoff = 0.5
            # until the next one is due (a retry, a lapsing lease), or a NOTIFY says one is
            timeout = self.poll_seconds if due is None else min(self.poll_seconds, max(due, 0.05))
            self.wake.wait(timeout)

    def deliver(self, claimed: Claimed) -> None:
        key = idempotency_key(claimed)
        evidence: dict[str, Any] = {"key": key, "attempt": claimed.attempts}
        try:
            self.policy.check(claimed.url)  # again: its host may resolve elsewhere now
        except Unresolved as exc:
            self._retry(claimed, str(exc), evidence)
            return
        except BadInput as exc:
            self._finish(claimed, "failed", f"webhook not sent: {exc}", evidence)
            return
        answer = self._send(claimed, key)
        if isinstance(answer, str):
            self._retry(claimed, answer, evidence)
            return
        evidence["status_code"] = code = answer.status_code
        if answer.is_success:
            done = f"delivered on attempt {claimed.attempts} (HTTP {code})"
            self._finish(claimed, "delivered", done, evidence)
        elif code >= 500 or code in RETRIED:
            self._retry(claimed, f"HTTP {code}", evidence)
        else:
            self._finish(claimed, "failed", f"refused: HTTP {code}", evidence)

    def _send(self, claimed: Claimed, key: str) -> httpx.Response | str:
        """The receiver's answer, or what went wrong on the way (a transport error)."""
        try:
            body = body_of(self.rt, claimed, datetime.now(UTC))
        except Exception as exc:  # e.g. a graph that no longer loads: counted, retried
            logger.exception("webhook %s: its payload could not be made", claimed.id)
            return f"the payload could not be made: {type(exc).__name__}: {exc}"
        headers = {
            "Idempotency-Key": key,
            # the lease's end: a receiver that refuses later requests never sees this one
            # overlap a takeover's
            "Request-Deadline": f"{claimed.lease_until.timestamp():.3f}",
        }
        crash_point("webhook:before-send")
        try:
            answer: httpx.Response | str = httpx.post(
                claimed.url,
                json=body,
                headers=headers,
                timeout=self.policy.timeout_s,
                follow_redirects=False,  # a redirect could lead past the host policy
            )
        except httpx.HTTPError as exc:
            answer = f"{type(exc).__name__}: {exc}"
        crash_point("webhook:after-send")
        return answer

    def _retry(self, claimed: Claimed, what: str, evidence: dict[str, Any]) -> None:
        if claimed.attempts >= self.policy.attempts:
            spent = f"failed after {claimed.attempts} attempts; the last: {what}"
            self._finish(claimed, "failed", spent, evidence)
            return
        p = self.policy
        delay = min(p.backoff_max_s, p.backoff_s * 2 ** (claimed.attempts - 1))
        delay *= 0.5 + random.random() / 2  # jitter: receivers that came back see no herd
        again = f"attempt {claimed.attempts}: {what}; retrying in {delay:.1f}s"
        self._finish(claimed, "due", again, evidence, delay)

    def _finish(
        self,
        claimed: Claimed,
        status: str,
        reason: str,
        evidence: dict[str, Any],
        delay_s: float = 0.0,
    ) -> None:
        if not self.rt.webhooks.finish(claimed, status, reason, evidence, delay_s):
            logger.warning("webhook %s: lease lost before its outcome was recorded", claimed.id)
            return
        log = logger.info if status == "delivered" else logger.warning
        log("webhook for %s: %s", claimed.thread_id, reason)
