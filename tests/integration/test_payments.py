"""Integration tests for the example payments provider.

Every test talks to a real ``python -m waystone.examples.payments`` subprocess over real
HTTP on loopback (urllib, no proxies, no mocks).
"""

from __future__ import annotations

import json
import os
import re
import selectors
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
LISTENING_RE = re.compile(r"listening on http://127\.0\.0\.1:(\d+)\n")
START_DEADLINE_S = 300.0  # a bound for a start that never comes, however loaded the machine

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass
class Response:
    status: int
    body: object


class PaymentsProcess:
    """A payments server subprocess; ``start`` blocks until it answers ``/_health``."""

    def __init__(self, workdir: Path, db_path: Path | None, env: dict[str, str] | None = None):
        self.workdir = workdir
        self.db_path = db_path
        self.extra_env = env or {}
        self.stderr_path = workdir / f"payments-{uuid.uuid4().hex[:8]}.stderr"
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0
        self.first_line = ""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> PaymentsProcess:
        cmd = [sys.executable, "-m", "waystone.examples.payments", "--port", "0"]
        if self.db_path is not None:
            cmd += ["--db", str(self.db_path)]
        env = {**os.environ, **self.extra_env}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        with open(self.stderr_path, "wb") as stderr:
            self.proc = subprocess.Popen(
                cmd, cwd=self.workdir, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True
            )
        deadline = time.monotonic() + START_DEADLINE_S
        self.first_line = self._read_first_line(deadline)
        match = LISTENING_RE.fullmatch(self.first_line)
        assert match, f"unexpected first line {self.first_line!r}; stderr: {self.stderr()}"
        self.port = int(match.group(1))
        self._wait_healthy(deadline)
        return self

    def _read_first_line(self, deadline: float) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.proc.stdout, selectors.EVENT_READ)
            if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                self.kill()
                pytest.fail(f"server printed nothing within {START_DEADLINE_S}s")
        return self.proc.stdout.readline()

    def _wait_healthy(self, deadline: float) -> None:
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            try:
                if call(self.base_url, "GET", "/_health", timeout=1.0).status == 200:
                    return
            except OSError as exc:  # URLError is an OSError
                last_error = exc
            time.sleep(0.02)
        self.kill()
        pytest.fail(f"server never became healthy: {last_error}; stderr: {self.stderr()}")

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def terminate(self) -> int:
        """SIGTERM, wait (bounded) and return the exit status."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout=5)
        finally:
            self._close()

    def kill(self) -> int:
        """SIGKILL: the process gets no chance to clean up."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            return self.proc.wait(timeout=5)
        finally:
            self._close()

    def _close(self) -> None:
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()

    def stop_quietly(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.kill()
        else:
            self._close()


def call(
    base_url: str,
    method: str,
    path: str,
    body: object = None,
    *,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
    timeout: float = 5.0,
) -> Response:
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(
        base_url + path,
        data=data,
        method=method,
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with _OPENER.open(request, timeout=timeout) as resp:
            assert resp.headers["Content-Type"] == "application/json"
            return Response(resp.status, json.loads(resp.read()))
    except urllib.error.HTTPError as exc:
        with exc:
            assert exc.headers["Content-Type"] == "application/json"
            return Response(exc.code, json.loads(exc.read()))


def refund_body(order_id: str, amount: str = "120.00", currency: str = "EUR") -> dict[str, str]:
    return {"order_id": order_id, "amount": amount, "currency": currency}


def post_refund(base: str, key: str, body: object, timeout: float = 5.0) -> Response:
    return call(base, "POST", "/refunds", body, headers={"Idempotency-Key": key}, timeout=timeout)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PaymentsProcess]:
    """One server for tests that only touch their own (uniquely named) records."""
    workdir = tmp_path_factory.mktemp("payments-shared")
    server = PaymentsProcess(workdir, workdir / "payments.sqlite3")
    try:
        yield server.start()
    finally:
        server.stop_quietly()


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[PaymentsProcess]:
    """A server with an empty database, for tests that inspect the whole ledger or faults."""
    server = PaymentsProcess(tmp_path, tmp_path / "payments.sqlite3")
    try:
        yield server.start()
    finally:
        server.stop_quietly()


# --------------------------------------------------------------------------- basics


def test_prints_listening_line_and_is_healthy(shared: PaymentsProcess) -> None:
    assert shared.first_line == f"listening on http://127.0.0.1:{shared.port}\n"
    assert shared.port > 0
    assert call(shared.base_url, "GET", "/_health") == Response(200, {"ok": True})


def test_unknown_path_and_bad_json_answer_json_errors(shared: PaymentsProcess) -> None:
    missing = call(shared.base_url, "GET", "/nope")
    assert missing.status == 404 and isinstance(missing.body, dict) and "error" in missing.body
    bad = call(
        shared.base_url, "POST", "/refunds", raw=b"{not json", headers={"Idempotency-Key": "k"}
    )
    assert bad.status == 400 and isinstance(bad.body, dict) and "error" in bad.body
    assert call(shared.base_url, "GET", "/refunds/re_doesnotexist").status == 404
    assert call(shared.base_url, "GET", "/notifications/no_doesnotexist").status == 404


# --------------------------------------------------------------------------- refunds


def test_refund_is_created_once_and_replayed_by_key(shared: PaymentsProcess) -> None:
    base, key, order = shared.base_url, unique("key"), unique("order")

    created = post_refund(base, key, refund_body(order))
    assert created.status == 201
    refund = created.body
    assert isinstance(refund, dict)
    assert re.fullmatch(r"re_[0-9a-f]+", refund["id"])
    assert refund["status"] == "succeeded"
    assert (refund["order_id"], refund["amount"], refund["currency"]) == (order, "120.00", "EUR")
    assert refund["idempotency_key"] == key
    assert isinstance(refund["created_at"], str) and refund["created_at"]

    assert post_refund(base, key, refund_body(order)) == Response(200, refund)
    assert call(base, "GET", f"/refunds/{refund['id']}") == Response(200, refund)
    assert call(base, "GET", f"/refunds?idempotency_key={key}") == Response(200, [refund])
    assert call(base, "GET", f"/refunds?order_id={order}") == Response(200, [refund])
    assert call(base, "GET", "/refunds?idempotency_key=never-used") == Response(200, [])
    ledger = call(base, "GET", "/_ledger").body
    assert isinstance(ledger, dict)
    assert [r for r in ledger["refunds"] if r["order_id"] == order] == [refund]


def test_same_key_with_different_body_conflicts(shared: PaymentsProcess) -> None:
    base, key, order = shared.base_url, unique("key"), unique("order")
    first = post_refund(base, key, refund_body(order))
    assert first.status == 201

    conflict = post_refund(base, key, refund_body(order, amount="99.00"))
    assert conflict.status == 409 and isinstance(conflict.body, dict) and conflict.body["error"]
    assert call(base, "GET", f"/refunds?idempotency_key={key}") == Response(200, [first.body])


def test_refund_without_idempotency_key_is_rejected(shared: PaymentsProcess) -> None:
    order = unique("order")
    response = call(shared.base_url, "POST", "/refunds", refund_body(order))
    assert response.status == 400
    assert call(shared.base_url, "GET", f"/refunds?order_id={order}") == Response(200, [])


@pytest.mark.parametrize(
    "body",
    [
        {"order_id": "", "amount": "1.00", "currency": "EUR"},
        {"order_id": 7, "amount": "1.00", "currency": "EUR"},
        {"amount": "1.00", "currency": "EUR"},
        {"order_id": "o", "amount": "120", "currency": "EUR"},
        {"order_id": "o", "amount": "120.0", "currency": "EUR"},
        {"order_id": "o", "amount": "120.000", "currency": "EUR"},
        {"order_id": "o", "amount": "0.00", "currency": "EUR"},
        {"order_id": "o", "amount": "-1.00", "currency": "EUR"},
        {"order_id": "o", "amount": 120.0, "currency": "EUR"},
        {"order_id": "o", "amount": "1.00", "currency": "eur"},
        {"order_id": "o", "amount": "1.00", "currency": "EURO"},
        {"order_id": "o", "amount": "1.00"},
        ["not", "an", "object"],
    ],
)
def test_invalid_refund_is_422(shared: PaymentsProcess, body: object) -> None:
    key = unique("key")
    response = post_refund(shared.base_url, key, body)
    assert response.status == 422
    assert isinstance(response.body, dict) and isinstance(response.body["error"], str)
    assert call(shared.base_url, "GET", f"/refunds?idempotency_key={key}") == Response(200, [])


def test_concurrent_requests_with_one_key_create_one_refund(fresh: PaymentsProcess) -> None:
    base, key, order = fresh.base_url, unique("key"), unique("order")
    with ThreadPoolExecutor(max_workers=16) as pool:
        same = list(pool.map(lambda _: post_refund(base, key, refund_body(order)), range(16)))
        keys = [unique("k") for _ in range(16)]
        distinct = list(pool.map(lambda k: post_refund(base, k, refund_body(order)), keys))

    assert sorted(r.status for r in same) == [200] * 15 + [201]
    assert len({r.body["id"] for r in same if isinstance(r.body, dict)}) == 1
    assert [r.status for r in distinct] == [201] * 16
    ledger = call(base, "GET", "/_ledger").body
    assert isinstance(ledger, dict)
    assert len(ledger["refunds"]) == 17
    assert {r["idempotency_key"] for r in ledger["refunds"]} == {key, *keys}


# --------------------------------------------------------------------------- notifications


def test_notifications_are_never_deduplicated(fresh: PaymentsProcess) -> None:
    base, ref = fresh.base_url, unique("ref")
    message = {"to": "+4915112345678", "body": "Your refund is on its way", "client_ref": ref}

    first = call(base, "POST", "/notifications", message)
    second = call(base, "POST", "/notifications", message)
    assert first.status == second.status == 201
    assert isinstance(first.body, dict) and isinstance(second.body, dict)
    assert first.body["id"] != second.body["id"]
    for sent in (first.body, second.body):
        assert re.fullmatch(r"no_[0-9a-f]+", sent["id"])
        assert {k: sent[k] for k in message} == message
        assert sent["status"] == "sent" and sent["created_at"]

    assert call(base, "GET", f"/notifications/{first.body['id']}") == Response(200, first.body)
    listed = call(base, "GET", f"/notifications?client_ref={ref}")
    assert listed == Response(200, [first.body, second.body])
    assert call(base, "GET", "/notifications?client_ref=other") == Response(200, [])
    ledger = call(base, "GET", "/_ledger")
    assert ledger == Response(
        200, {"refunds": [], "notifications": [first.body, second.body], "refused": []}
    )


def test_a_request_past_its_deadline_is_refused_and_kept(fresh: PaymentsProcess) -> None:
    """However long it was held on the way, a POST lands before its sender's deadline or
    never: past it nothing is applied, and the refusal is on the provider's record."""
    base, ref = fresh.base_url, unique("ref")
    message = {"to": "+4915112345678", "body": "Your refund is on its way", "client_ref": ref}
    late = call(base, "POST", "/notifications", message, headers={"Request-Deadline": "1000.5"})
    assert late == Response(
        504, {"error": "the request arrived past its deadline; nothing was applied"}
    )
    key = unique("key")
    late_refund = call(
        base,
        "POST",
        "/refunds",
        refund_body(unique("order")),
        headers={"Idempotency-Key": key, "Request-Deadline": str(time.time() - 1)},
    )
    assert late_refund.status == 504
    in_time = {"Request-Deadline": str(time.time() + 30)}
    assert call(base, "POST", "/notifications", message, headers=in_time).status == 201
    assert call(base, "POST", "/notifications", message, headers={"Request-Deadline": "soon"}) == (
        Response(400, {"error": "Request-Deadline must be seconds since the epoch"})
    )
    ledger = call(base, "GET", "/_ledger").body
    assert isinstance(ledger, dict)
    assert ledger["refunds"] == [] and len(ledger["notifications"]) == 1
    assert [(r["endpoint"], r["ref"], r["deadline"]) for r in ledger["refused"]][0] == (
        "notifications",
        ref,
        1000.5,
    )
    assert [r["ref"] for r in ledger["refused"]] == [ref, key]


@pytest.mark.parametrize(
    "body",
    [
        {"to": "", "body": "hi", "client_ref": "r"},
        {"to": "x", "body": 3, "client_ref": "r"},
        {"to": "x", "body": "hi"},
    ],
)
def test_invalid_notification_is_422(fresh: PaymentsProcess, body: object) -> None:
    assert call(fresh.base_url, "POST", "/notifications", body).status == 422
    assert call(fresh.base_url, "GET", "/_ledger").body == {
        "refunds": [],
        "notifications": [],
        "refused": [],
    }


# --------------------------------------------------------------------------- faults


def add_fault(base: str, **fault: object) -> Response:
    return call(base, "POST", "/_faults", fault)


def test_transient_fault_fails_without_applying_then_wears_off(fresh: PaymentsProcess) -> None:
    base, key, order = fresh.base_url, unique("key"), unique("order")
    armed = add_fault(base, endpoint="refunds", mode="transient", times=2)
    assert armed.status == 201
    assert call(base, "GET", "/_faults").body == [armed.body]

    for _ in range(2):
        failed = post_refund(base, key, refund_body(order))
        assert failed == Response(503, {"error": "injected transient failure"})
    assert call(base, "GET", "/_ledger").body == {"refunds": [], "notifications": [], "refused": []}
    assert call(base, "GET", "/_faults") == Response(200, [])

    assert post_refund(base, key, refund_body(order)).status == 201


def test_permanent_fault_rejects_notifications_only(fresh: PaymentsProcess) -> None:
    base = fresh.base_url
    assert add_fault(base, endpoint="notifications", mode="permanent").status == 201
    assert call(base, "GET", "/notifications").status == 200  # GETs are never faulted
    assert post_refund(base, unique("key"), refund_body(unique("order"))).status == 201

    rejected = call(base, "POST", "/notifications", {"to": "a", "body": "b", "client_ref": "c"})
    assert rejected.status == 422
    assert isinstance(rejected.body, dict)
    assert rejected.body["error"].startswith("injected permanent failure: ")
    ledger = call(base, "GET", "/_ledger").body
    assert isinstance(ledger, dict)
    assert ledger["notifications"] == [] and len(ledger["refunds"]) == 1


def test_timeout_after_apply_commits_the_refund_before_answering(fresh: PaymentsProcess) -> None:
    base, key, order = fresh.base_url, unique("key"), unique("order")
    assert add_fault(base, endpoint="refunds", mode="timeout_after_apply", delay_s=3).status == 201

    with pytest.raises((TimeoutError, urllib.error.URLError)) as excinfo:
        post_refund(base, key, refund_body(order), timeout=0.3)
    if isinstance(excinfo.value, urllib.error.URLError):
        assert isinstance(excinfo.value.reason, TimeoutError)

    applied = call(base, "GET", f"/refunds?idempotency_key={key}")
    assert applied.status == 200 and isinstance(applied.body, list) and len(applied.body) == 1
    retried = post_refund(base, key, refund_body(order))
    assert retried == Response(200, applied.body[0])  # the retry is a replay, not a new refund
    ledger = call(base, "GET", "/_ledger").body
    assert isinstance(ledger, dict) and ledger["refunds"] == applied.body


def test_timeout_after_apply_then_retry_duplicates_a_notification(fresh: PaymentsProcess) -> None:
    base, ref = fresh.base_url, unique("ref")
    message = {"to": "a@example.com", "body": "refund issued", "client_ref": ref}
    add_fault(base, endpoint="notifications", mode="timeout_after_apply", delay_s=3)

    with pytest.raises((TimeoutError, urllib.error.URLError)):
        call(base, "POST", "/notifications", message, timeout=0.3)
    assert call(base, "POST", "/notifications", message).status == 201

    sent = call(base, "GET", f"/notifications?client_ref={ref}").body
    assert isinstance(sent, list) and len(sent) == 2  # the naive retry sent it twice


def test_slow_fault_delays_then_applies(fresh: PaymentsProcess) -> None:
    base = fresh.base_url
    assert add_fault(base, endpoint="refunds", mode="slow", delay_s=0.4).status == 201
    started = time.monotonic()
    response = post_refund(base, unique("key"), refund_body(unique("order")))
    elapsed = time.monotonic() - started
    assert response.status == 201
    assert elapsed >= 0.4
    ledger = call(base, "GET", "/_ledger").body
    assert isinstance(ledger, dict) and ledger["refunds"] == [response.body]


@pytest.mark.parametrize(
    "fault",
    [
        {"endpoint": "payouts", "mode": "transient"},
        {"endpoint": "refunds", "mode": "explode"},
        {"endpoint": "refunds", "mode": "transient", "times": 0},
        {"endpoint": "refunds", "mode": "slow", "delay_s": -1},
    ],
)
def test_invalid_fault_is_422(fresh: PaymentsProcess, fault: dict[str, object]) -> None:
    assert call(fresh.base_url, "POST", "/_faults", fault).status == 422
    assert call(fresh.base_url, "GET", "/_faults") == Response(200, [])


def test_delete_clears_all_faults(fresh: PaymentsProcess) -> None:
    base = fresh.base_url
    add_fault(base, endpoint="refunds", mode="transient", times=5)
    add_fault(base, endpoint="notifications", mode="permanent")
    faults = call(base, "GET", "/_faults").body
    assert isinstance(faults, list)
    assert [(f["endpoint"], f["mode"], f["times"]) for f in faults] == [
        ("refunds", "transient", 5),
        ("notifications", "permanent", 1),
    ]

    assert call(base, "DELETE", "/_faults").status in (200, 204)
    assert call(base, "GET", "/_faults") == Response(200, [])
    assert post_refund(base, unique("key"), refund_body(unique("order"))).status == 201


# --------------------------------------------------------------------------- process lifecycle


def test_state_survives_a_killed_server(tmp_path: Path) -> None:
    db_path = tmp_path / "payments.sqlite3"
    key, order, ref = unique("key"), unique("order"), unique("ref")
    first = PaymentsProcess(tmp_path, db_path).start()
    try:
        refund = post_refund(first.base_url, key, refund_body(order)).body
        note = call(
            first.base_url, "POST", "/notifications", {"to": "a", "body": "b", "client_ref": ref}
        ).body
        add_fault(first.base_url, endpoint="notifications", mode="transient", times=2)
        ledger_before = call(first.base_url, "GET", "/_ledger").body
    finally:
        assert first.kill() == -9  # SIGKILL: no graceful shutdown, no checkpointing

    second = PaymentsProcess(tmp_path, db_path).start()
    try:
        base = second.base_url
        assert isinstance(refund, dict) and isinstance(note, dict)
        assert call(base, "GET", "/_ledger") == Response(200, ledger_before)
        assert call(base, "GET", f"/refunds/{refund['id']}") == Response(200, refund)
        assert call(base, "GET", f"/notifications?client_ref={ref}") == Response(200, [note])
        assert post_refund(base, key, refund_body(order)) == Response(200, refund)
        faults = call(base, "GET", "/_faults").body
        assert isinstance(faults, list) and [f["times"] for f in faults] == [2]
    finally:
        assert second.terminate() == 0


def test_sigterm_stops_cleanly_and_default_db_lives_in_waystone_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    server = PaymentsProcess(tmp_path, None, env={"WAYSTONE_HOME": str(home)}).start()
    try:
        assert post_refund(server.base_url, unique("key"), refund_body("o-1")).status == 201
    finally:
        assert server.terminate() == 0
    assert (home / "payments.sqlite3").is_file()
    assert server.stderr() == ""  # per-request logging is off without --verbose
