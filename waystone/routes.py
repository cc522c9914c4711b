"""The routes of ``waystone serve``: the JSON API, the providers' webhook and the HTML
dashboard's pages and forms (see :mod:`waystone.server` for what each needs)."""

from __future__ import annotations

import hmac
import json
import logging

from waystone._status import RunStatus
from waystone.pages import (
    activity_sections,
    approval_forms,
    counts_section,
    esc,
    page,
    path_segment,
    state_badge,
)
from waystone.preset._approval import edited_args
from waystone.server import (
    NO_TOKEN,
    PAGE_LIMIT,
    SESSION_COOKIE,
    TOKEN_ENV,
    Handler,
    HttpError,
    Request,
    Response,
    form_fields,
    html_response,
    json_object,
    json_response,
    limit_param,
    redirect,
    route,
    state_param,
    text_field,
)
from waystone.web_security import SESSION_SECONDS, new_session_id, session_cookie

logger = logging.getLogger(__name__)

DASHBOARD_LIMIT = 50  # rows of each of the dashboard's lists


def shown(h: Handler, status: RunStatus) -> RunStatus:
    """What the requester sees of a run: its pending action's real arguments when
    authenticated, tokens otherwise (revealed for this response only, never stored)."""
    return h.rt.revealed(status) if h.authenticated() else status


# -- JSON API and webhook ----------------------------------------------------------------


@route("GET", "/api/runs", "api")
def api_list(h: Handler, req: Request) -> Response:
    runs = h.rt.list(state_param(req.query), limit_param(req.query))
    return json_response({"runs": [r.to_dict() for r in runs]})


@route("GET", "/api/runs/{thread_id}", "api")
def api_status(h: Handler, req: Request) -> Response:
    return json_response(shown(h, h.rt.status(req.params["thread_id"])).to_dict())


@route("GET", "/api/runs/{thread_id}/history", "api")
def api_history(h: Handler, req: Request) -> Response:
    return json_response(h.rt.history(req.params["thread_id"]))


@route("GET", "/api/dashboard", "api")
def api_dashboard(h: Handler, req: Request) -> Response:
    del req
    try:
        from waystone import dashboard
    except ImportError as exc:
        raise HttpError(501, f"the dashboard is not available: {exc}") from exc
    return json_response(dashboard.snapshot(h.rt))


@route("POST", "/api/runs/{thread_id}/approve", "api")
def api_approve(h: Handler, req: Request) -> Response:
    h.require_bearer()
    data = json_object(req.body, "the body")
    by = text_field(data, "by", required=True)
    comment = text_field(data, "comment", required=False)
    args = edited_args(data["args"], "'args'") if "args" in data else None
    assert by is not None
    status = h.rt.approve(req.params["thread_id"], by=by, comment=comment, args=args)
    logger.info("approved %s by %s (api)", status.thread_id, by)
    return json_response(status.to_dict())


@route("POST", "/api/runs/{thread_id}/reject", "api")
def api_reject(h: Handler, req: Request) -> Response:
    h.require_bearer()
    data = json_object(req.body, "the body")
    by = text_field(data, "by", required=True)
    reason = text_field(data, "reason", required=True)
    assert by is not None and reason is not None
    status = h.rt.reject(req.params["thread_id"], by=by, reason=reason)
    logger.info("rejected %s by %s (api)", status.thread_id, by)
    return json_response(status.to_dict())


@route("POST", "/signals/{thread_id}/{name}", "api")
def webhook(h: Handler, req: Request) -> Response:
    h.require_bearer()
    payload = json_object(req.body, "the payload", empty_ok=True)
    key = req.headers.get("Idempotency-Key") or None
    status = h.rt.signal(
        req.params["thread_id"], req.params["name"], payload, key=key, actor="webhook"
    )
    logger.info("signal %r for %s (webhook)", req.params["name"], status.thread_id)
    return json_response(status.to_dict())


# -- HTML --------------------------------------------------------------------------------


@route("GET", "/", "html")
def index(h: Handler, req: Request) -> Response:
    del req
    from waystone import dashboard

    rt = h.rt
    csrf = h.csrf(h.session())
    data = dashboard.snapshot(rt, limit=DASHBOARD_LIMIT)
    runs = rt.list(None, PAGE_LIMIT)
    # The snapshot says which runs wait for a decision; each form needs the action itself.
    waiting = {a["thread_id"]: a["waiting_s"] for a in data["pending_approvals"]}
    approvals = [
        shown(h, s)
        for s in (rt.status(thread_id) for thread_id in waiting)
        if s.pending_approval is not None
    ]
    parts: list[str] = []
    if h.app.token is None:
        parts.append(f'<p class="note">Read-only: {esc(NO_TOKEN)}</p>')
    elif csrf is None:
        parts.append('<p class="note"><a href="/login">Log in</a> to approve or reject.</p>')
    parts.append(counts_section(data["counts_by_state"]))
    # longest waiting first, as the snapshot orders them
    parts.append(f'<h2>Pending approvals ({len(approvals)})</h2><div id="approvals">')
    parts.extend(approval_forms(s, csrf, waiting[s.thread_id]) for s in approvals)
    if not approvals:
        parts.append("<p>No run waits for an approval.</p>")
    parts.append("</div>")
    parts.append(activity_sections(data))
    parts.append(
        f'<h2>Runs (newest {len(runs)})</h2><table id="runs"><thead><tr><th>thread id</th>'
        "<th>agent</th><th>state</th><th>attempts</th><th>updated</th><th>reason</th>"
        "</tr></thead><tbody>"
    )
    parts.extend(
        f'<tr id="run-{esc(r.thread_id)}" data-state="{esc(r.state)}">'
        f'<td><a href="/runs/{path_segment(r.thread_id)}"><code>{esc(r.thread_id)}</code></a></td>'
        f'<td>{esc(r.agent)}</td><td class="run-state">{state_badge(r.state)}</td>'
        f"<td>{r.attempts}</td><td>{esc(r.updated_at[:19])}</td><td>{esc(r.reason)}</td></tr>"
        for r in runs
    )
    parts.append("</tbody></table>")
    return html_response(page("runs", "".join(parts), csrf=csrf))


@route("GET", "/runs/{thread_id}", "html")
def run_page(h: Handler, req: Request) -> Response:
    thread_id = req.params["thread_id"]
    csrf = h.csrf(h.session())
    status = h.rt.status(thread_id)
    hist = h.rt.history(thread_id)
    parts = [
        f"<h2><code>{esc(thread_id)}</code> {state_badge(status.state)} ({esc(status.agent)})</h2>",
        f"<p>reason: {esc(status.reason)}</p>",
    ]
    if status.step:
        parts.append(f"<p>next step: <code>{esc(status.step)}</code></p>")
    if status.waiting_for:
        parts.append(f"<p>waiting for: <code>{esc(status.waiting_for)}</code></p>")
    if status.pending_approval is not None:
        parts.append(approval_forms(shown(h, status), csrf))
    if status.interrupts:
        parts.append('<h2>Pending interrupts</h2><table id="interrupts"><tbody>')
        parts.extend(
            f"<tr><td><code>{esc(i['id'])}</code></td>"
            f"<td><code>{esc(json.dumps(i['value'], default=str))}</code></td></tr>"
            for i in shown(h, status).interrupts
        )
        parts.append(
            "</tbody></table><p>answer one with <code>waystone resume "
            f"{esc(thread_id)} --value JSON --interrupt-id ID</code></p>"
        )
    parts.append(
        '<h2>Events</h2><table id="events"><thead><tr><th>#</th><th>at</th><th>kind</th>'
        "<th>what</th><th>actor</th></tr></thead><tbody>"
    )
    for ev in hist["events"]:
        what = esc(ev.get("reason"))
        if ev.get("kind") == "transition":
            what = f"{esc(ev.get('from_state') or '∅')} → {esc(ev.get('to_state'))}: {what}"
        parts.append(
            f"<tr><td>{esc(ev.get('id'))}</td><td>{esc(str(ev.get('created_at'))[:23])}</td>"
            f"<td>{esc(ev.get('kind'))}</td><td>{what}</td><td>{esc(ev.get('actor'))}</td></tr>"
        )
    parts.append(
        '</tbody></table><h2>Checkpoints</h2><table id="checkpoints"><thead><tr>'
        "<th>step</th><th>checkpoint</th><th>after</th><th>next</th></tr></thead><tbody>"
    )
    for cp in hist["checkpoints"]:
        parts.append(
            f"<tr><td>{esc(cp['step'])}</td><td><code>{esc(cp['checkpoint_id'])}</code></td>"
            f"<td>{esc(', '.join(cp['after']))}</td><td>{esc(', '.join(cp['next']))}</td></tr>"
        )
    parts.append(
        '</tbody></table><h2>Effects</h2><table id="effects"><thead><tr><th>key</th>'
        "<th>tool</th><th>status</th><th>attempts</th><th>receipt</th></tr></thead><tbody>"
    )
    for ef in hist["effects"]:
        receipt = (ef.get("receipt") or {}).get("id", "")
        parts.append(
            f"<tr><td><code>{esc(ef['key'])}</code></td><td>{esc(ef['tool'])}</td>"
            f"<td>{esc(ef['status'])}</td><td>{esc(ef['attempts'])}</td>"
            f"<td><code>{esc(receipt)}</code></td></tr>"
        )
    parts.append('</tbody></table><p><a href="/">Back to the dashboard</a></p>')
    return html_response(page(thread_id, "".join(parts), csrf=csrf))


def login_page(message: str | None = None) -> str:
    note = f'<p class="error" id="error">{esc(message)}</p>' if message else ""
    body = (
        f"<h2>Log in</h2>{note}"
        '<form method="post" action="/login" id="login">'
        '<label>API token <input type="password" name="token" autocomplete="current-password" '
        "required></label> "
        '<button type="submit">Log in</button></form>'
        f"<p>The token is the server's <code>{TOKEN_ENV}</code>.</p>"
    )
    return page("log in", body)


@route("GET", "/login", "html", anonymous=True)
def login_form(h: Handler, req: Request) -> Response:
    del req
    if h.app.token is None:
        return html_response(login_page(NO_TOKEN))
    return html_response(login_page())


@route("POST", "/login", "html")
def login(h: Handler, req: Request) -> Response:
    token = h.app.token
    if token is None:
        return html_response(login_page(NO_TOKEN), 401)
    given = form_fields(req.body).get("token", "")
    if not hmac.compare_digest(given.encode(), token.encode()):
        logger.warning("failed login from %s", h.address_string())
        return html_response(login_page("wrong token"), 401)
    session_id = new_session_id()
    h.app.sessions.open(session_id)
    cookie = (
        f"{SESSION_COOKIE}={session_cookie(token, session_id)}; Path=/; HttpOnly; "
        f"SameSite=Strict; Max-Age={SESSION_SECONDS}"
    )
    return redirect("/", (("Set-Cookie", cookie),))


@route("POST", "/logout", "html")
def logout(h: Handler, req: Request) -> Response:
    """Ends the session for every server process (a copy of the cookie opens nothing)."""
    if h.session() is not None:
        h.app.sessions.revoke(h.require_session(form_fields(req.body)))
    cookie = f"{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"
    return redirect("/", (("Set-Cookie", cookie),))


@route("POST", "/runs/{thread_id}/approve", "html")
def form_approve(h: Handler, req: Request) -> Response:
    form = form_fields(req.body)
    h.require_session(form)
    by = text_field(form, "by", required=True)
    assert by is not None
    comment = text_field(form, "comment", required=False) or None
    status = h.rt.approve(req.params["thread_id"], by=by, comment=comment)
    logger.info("approved %s by %s (form)", status.thread_id, by)
    return redirect("/")


@route("POST", "/runs/{thread_id}/reject", "html")
def form_reject(h: Handler, req: Request) -> Response:
    form = form_fields(req.body)
    h.require_session(form)
    by = text_field(form, "by", required=True)
    reason = text_field(form, "reason", required=True)
    assert by is not None and reason is not None
    status = h.rt.reject(req.params["thread_id"], by=by, reason=reason)
    logger.info("rejected %s by %s (form)", status.thread_id, by)
    return redirect("/")
