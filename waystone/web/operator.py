"""The operator's JSON API (``/api/runs``, a run, its history, its approval, the
dashboard's picture) and the providers' webhook, ``POST /signals/{thread_id}/{name}``,
whose ``Idempotency-Key`` header deduplicates deliveries. A change needs the bearer
token; errors come back as ``{"error": message}``."""

from __future__ import annotations

import json
import logging

from starlette.responses import Response
from starlette.routing import Route

from waystone._runs.status import RunStatus
from waystone.errors import BadInput
from waystone.preset._approval import edited_args
from waystone.web.calls import Call, Site, route
from waystone.web.forms import Approval, Rejection
from waystone.web.inputs import json_object, parsed

logger = logging.getLogger(__name__)


def routes(site: Site) -> list[Route]:
    return [
        route(site, "GET", "/api/runs", list_runs),
        route(site, "GET", "/api/runs/{thread_id}", run_status),
        route(site, "GET", "/api/runs/{thread_id}/history", run_history),
        route(site, "GET", "/api/dashboard", dashboard),
        route(site, "POST", "/api/runs/{thread_id}/approve", approve),
        route(site, "POST", "/api/runs/{thread_id}/reject", reject),
        route(site, "POST", "/signals/{thread_id}/{name}", webhook),
    ]


def shown(call: Call, status: RunStatus) -> RunStatus:
    """What the requester sees of a run: its pending action's real arguments when
    authenticated, tokens otherwise (revealed for this response only, never stored)."""
    return call.rt.revealed(status) if call.authenticated() else status


def reply(data: object) -> Response:
    """JSON of a run's status or of a dict (times and ids as text)."""
    shown_data = data.to_dict() if isinstance(data, RunStatus) else data
    body = json.dumps(shown_data, default=str, sort_keys=True)
    return Response(body, media_type="application/json")


def _state(call: Call) -> str | None:
    from waystone._runs.states import STATES

    state = call.query("state") or None
    if state is not None and state not in STATES:
        raise BadInput(f"state must be one of {', '.join(STATES)}")
    return state


def _limit(call: Call) -> int:
    text = call.query("limit", "100") or ""
    if not text.isdigit() or not 1 <= int(text) <= 1000:
        raise BadInput("limit must be a whole number from 1 to 1000")
    return int(text)


def list_runs(call: Call) -> Response:
    runs = call.rt.list(_state(call), _limit(call))
    return reply({"runs": [r.to_dict() for r in runs]})


def run_status(call: Call) -> Response:
    return reply(shown(call, call.rt.status(call.params["thread_id"])))


def run_history(call: Call) -> Response:
    return reply(call.rt.history(call.params["thread_id"]))


def dashboard(call: Call) -> Response:
    from waystone._runs import dashboard as views

    return reply(views.snapshot(call.rt))


def approve(call: Call) -> Response:
    call.require_bearer()
    body = parsed(Approval, call.body)
    args = edited_args(body.args, "'args'") if body.given("args") else None
    status = call.rt.approve(call.params["thread_id"], by=body.by, comment=body.comment, args=args)
    logger.info("approved %s by %s (api)", status.thread_id, body.by)
    return reply(status)


def reject(call: Call) -> Response:
    call.require_bearer()
    body = parsed(Rejection, call.body)
    status = call.rt.reject(call.params["thread_id"], by=body.by, reason=body.reason)
    logger.info("rejected %s by %s (api)", status.thread_id, body.by)
    return reply(status)


def webhook(call: Call) -> Response:
    call.require_bearer()
    payload = json_object(call.body, "the payload", empty_ok=True)
    key = call.request.headers.get("idempotency-key") or None
    thread_id, name = call.params["thread_id"], call.params["name"]
    status = call.rt.signal(thread_id, name, payload, key=key, actor="webhook")
    logger.info("signal %r for %s (webhook)", name, status.thread_id)
    return reply(status)
