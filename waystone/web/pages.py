"""The pages: the dashboard (``GET /``), a run's page (``GET /runs/{thread_id}``) with a
picture of its graph, the login and logout forms, the Approve and Reject forms and the
form that answers a graph's ``interrupt()``. A form post needs a session, the session's
CSRF token and a page of this server as its Origin (:class:`waystone.web.gate.Gate`)."""

from __future__ import annotations

import hmac
import logging
from typing import Any
from urllib.parse import quote

from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from waystone._json_input import parse_json_input
from waystone.errors import BadInput
from waystone.runtime import RunStatus
from waystone.web.calls import Call, Site, route
from waystone.web.conversation import shown_messages
from waystone.web.forms import Answer, Approval, Login, Rejection
from waystone.web.gate import NO_TOKEN, SESSION_COOKIE, TOKEN_ENV
from waystone.web.inputs import form_fields, validated
from waystone.web.operator import shown
from waystone.web.picture import END, START, Picture, layout
from waystone.web.render import page
from waystone.web.security import SESSION_SECONDS, new_session_id, session_cookie

logger = logging.getLogger(__name__)

DASHBOARD_LIMIT = 50  # rows of each of the dashboard's lists
PAGE_LIMIT = 200  # runs in the dashboard's list of runs


def routes(site: Site) -> list[Route]:
    return [
        route(site, "GET", "/", dashboard),
        route(site, "GET", "/runs/{thread_id}", run_page),
        route(site, "GET", "/login", login_form, anonymous=True),
        route(site, "POST", "/login", login),
        route(site, "POST", "/logout", logout),
        route(site, "POST", "/runs/{thread_id}/approve", form_approve),
        route(site, "POST", "/runs/{thread_id}/reject", form_reject),
        route(site, "POST", "/runs/{thread_id}/resume", form_resume),
    ]


def dashboard(call: Call) -> Response:
    from waystone._runs import dashboard as views

    rt = call.rt
    data = views.snapshot(rt, limit=DASHBOARD_LIMIT)
    # The snapshot says which runs wait for a decision; each form needs the action itself.
    waiting = {a["thread_id"]: a["waiting_s"] for a in data["pending_approvals"]}
    approvals = [
        shown(call, s)
        for s in (rt.status(thread_id) for thread_id in waiting)
        if s.pending_approval is not None
    ]
    return page(
        "dashboard.html",
        root=call.root,
        csrf=call.gate.csrf(call.session()),
        read_only=call.gate.token is None,
        no_token=NO_TOKEN,
        data=data,
        waiting=waiting,
        approvals=approvals,
        runs=call.rt.list(None, PAGE_LIMIT),
    )


def run_page(call: Call) -> Response:
    from waystone._runs import dashboard as views

    thread_id = call.params["thread_id"]
    status = call.rt.status(thread_id)
    history = call.rt.history(thread_id)
    picture, note = _picture(call, status, history)
    return page(
        "run.html",
        root=call.root,
        csrf=call.gate.csrf(call.session()),
        status=status,
        shown=shown(call, status),
        history=history,
        picture=picture,
        picture_note=note,
        messages=_messages(call, status),
        times=views.step_times(call.rt, thread_id),
        answered=call.rt.answered_interrupts(status.thread_id) if status.interrupts else {},
    )


def _current(status: RunStatus, history: dict[str, Any]) -> list[str]:
    """The nodes the run is at: its latest checkpoint's next ones; ``__end__`` once it
    has ended, ``__start__`` before its first step."""
    if status.state in ("done", "failed"):
        return [END]
    checkpoints = history.get("checkpoints") or []
    if not checkpoints:
        return [START]
    return list(checkpoints[-1]["next"]) or [END]


def _picture(call: Call, status: RunStatus, history: dict[str, Any]) -> tuple[Picture | None, str]:
    if status.agent not in call.rt.names():
        return None, f"the graph {status.agent!r} is not registered in this server"
    try:
        drawn = call.rt.graph(status.agent).get_graph()
    except Exception as exc:  # a graph LangGraph cannot draw: the rest of the page stands
        logger.warning("cannot draw the graph %r: %s", status.agent, exc)
        return None, f"the graph {status.agent!r} cannot be drawn: {type(exc).__name__}"
    labels = {node_id: str(node.name) for node_id, node in drawn.nodes.items()}
    edges = [(e.source, e.target, bool(e.conditional)) for e in drawn.edges]
    return layout(labels, edges, _current(status, history)), ""


def _messages(call: Call, status: RunStatus) -> list[dict[str, Any]]:
    """The run's messages (a ``messages`` channel), as stored: personal data as tokens."""
    if status.agent not in call.rt.names() or not call.rt.is_graph(status.agent):
        return []
    state = call.rt.graph(status.agent).get_state(call.rt.config(status.thread_id))
    return shown_messages(state.values.get("messages") if isinstance(state.values, dict) else None)


def login_form(call: Call) -> Response:
    message = NO_TOKEN if call.gate.token is None else None
    return page("login.html", message=message, token_env=TOKEN_ENV, root=call.root)


def login(call: Call) -> Response:
    token = call.gate.token
    if token is None:
        return page("login.html", 401, message=NO_TOKEN, token_env=TOKEN_ENV, root=call.root)
    given = validated(Login, form_fields(call.body), "the form").token
    if not hmac.compare_digest(given.encode(), token.encode()):
        client = call.request.client
        logger.warning("failed login from %s", client.host if client else "?")
        return page("login.html", 401, message="wrong token", token_env=TOKEN_ENV, root=call.root)
    session_id = new_session_id()
    call.gate.sessions.open(session_id)
    response = RedirectResponse(f"{call.root}/", 303)
    response.set_cookie(
        SESSION_COOKIE,
        session_cookie(token, session_id),
        max_age=SESSION_SECONDS,
        path=call.root or "/",
        httponly=True,
        samesite="strict",
    )
    return response


def logout(call: Call) -> Response:
    """Ends the session for every server process (a copy of the cookie opens nothing)."""
    if call.session() is not None:
        call.gate.sessions.revoke(call.require_session(form_fields(call.body)))
    response = RedirectResponse(f"{call.root}/", 303)
    response.set_cookie(
        SESSION_COOKIE, "", max_age=0, path=call.root or "/", httponly=True, samesite="strict"
    )
    return response


def form_approve(call: Call) -> Response:
    form = form_fields(call.body)
    call.require_session(form)
    body = validated(Approval, form, "the form")
    status = call.rt.approve(call.params["thread_id"], by=body.by, comment=body.comment or None)
    logger.info("approved %s by %s (form)", status.thread_id, body.by)
    return RedirectResponse(f"{call.root}/", 303)


def form_reject(call: Call) -> Response:
    form = form_fields(call.body)
    call.require_session(form)
    body = validated(Rejection, form, "the form")
    status = call.rt.reject(call.params["thread_id"], by=body.by, reason=body.reason)
    logger.info("rejected %s by %s (form)", status.thread_id, body.by)
    return RedirectResponse(f"{call.root}/", 303)


def form_resume(call: Call) -> Response:
    """An answer to a graph's pending ``interrupt()``, as ``waystone resume --value``
    gives it: a worker (or ``waystone run``) goes on with it."""
    form = form_fields(call.body)
    call.require_session(form)
    body = validated(Answer, form, "the form")
    if not body.value.strip():
        raise BadInput("the answer is empty: write the interrupt's answer as JSON, e.g. true")
    value = parse_json_input(body.value, "the answer")
    thread_id = call.params["thread_id"]
    call.rt.resume(thread_id, value, interrupt_id=body.interrupt_id or None, by=body.by)
    logger.info("answered an interrupt of %s by %s (form)", thread_id, body.by)
    return RedirectResponse(f"{call.root}/runs/{quote(thread_id, safe='')}", 303)
