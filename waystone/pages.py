"""The HTML of ``waystone serve``'s dashboard: pages, their style and the approval forms.

Plain functions of values (no request, no database): the routes in
:mod:`waystone.routes` fill them. Self-contained pages that work without JavaScript; the
Content-Security-Policy the server sends with them allows no script at all.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

from waystone._status import RunStatus
from waystone.dashboard import duration, shown_interrupts
from waystone.web_security import CSRF_FIELD

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d232a;background:#f6f7f9}
header{background:#1d232a;color:#fff;padding:10px 24px;display:flex;gap:16px;align-items:center}
header a{color:#fff;text-decoration:none}header .grow{flex:1}
main{padding:16px 24px;max-width:1200px}
h1{font-size:18px;margin:0}h2{font-size:16px;margin:24px 0 8px}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{border-bottom:1px solid #e3e6ea;padding:6px 8px;text-align:left;vertical-align:top}
th{background:#eef0f3;font-weight:600}
code{font:12px ui-monospace,monospace;word-break:break-all}
.counts{display:flex;gap:8px;flex-wrap:wrap}
.count{background:#fff;border:1px solid #e3e6ea;border-radius:6px;padding:8px 14px}
.count b{display:block;font-size:20px}
.state{font-weight:600}.s-done{color:#1a7f37}.s-failed{color:#cf222e}
.s-waiting{color:#9a6700}.s-needs-human{color:#8250df}.s-running,.s-queued{color:#0969da}
.approval{background:#fff;border:1px solid #e3e6ea;border-radius:6px;padding:12px;margin:8px 0}
.approval form{display:inline-flex;gap:6px;margin:8px 12px 0 0;align-items:center}
input[type=text],input[type=password]{padding:4px 6px;border:1px solid #c9ced6;border-radius:4px}
button{padding:4px 12px;border-radius:4px;border:1px solid #8c959f;cursor:pointer;background:#fff}
button.approve{background:#1a7f37;color:#fff;border-color:#1a7f37}
button.reject{background:#cf222e;color:#fff;border-color:#cf222e}
.note{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:8px 12px}
.error{background:#ffebe9;border:1px solid #cf222e;border-radius:6px;padding:8px 12px}
"""


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def path_segment(thread_id: str) -> str:
    return quote(thread_id, safe="")


def csrf_field(csrf: str | None) -> str:
    """The hidden field that carries a session's CSRF token in its forms."""
    if csrf is None:
        return ""
    return f'<input type="hidden" name="{CSRF_FIELD}" value="{esc(csrf)}">'


def page(title: str, body: str, *, csrf: str | None = None) -> str:
    """A page; ``csrf``: the session's token when logged in (its Log out form carries it)."""
    session = (
        f'<form method="post" action="/logout">{csrf_field(csrf)}'
        '<button type="submit">Log out</button></form>'
        if csrf is not None
        else '<a href="/login">Log in</a>'
    )
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} - waystone</title><style>{STYLE}</style></head>"
        f'<body><header><h1><a href="/">waystone</a></h1><span class="grow"></span>'
        f"{session}</header><main>{body}</main></body></html>\n"
    )


def error_page(status: int, message: str) -> str:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"
    login = ' or <a href="/login">log in</a>' if status == 401 else ""
    body = (
        f"<h2>{status} {esc(phrase)}</h2>"
        f'<p class="error" id="error">{esc(message)}</p>'
        f'<p><a href="/">Back to the dashboard</a>{login}</p>'
    )
    return page(f"{status} {phrase}", body)


def state_badge(state: str) -> str:
    return f'<span class="state s-{esc(state)}">{esc(state)}</span>'


def approval_forms(
    status: RunStatus, csrf: str | None = None, waiting_s: float | None = None
) -> str:
    """A pending approval with its Approve and Reject forms; ``waiting_s``: how long the
    run has waited for it, when known."""
    pending = status.pending_approval or {}
    tid = path_segment(status.thread_id)
    forms = (
        f'<form method="post" action="/runs/{tid}/approve" class="approve-form">'
        f"{csrf_field(csrf)}"
        '<label>by <input type="text" name="by" value="web" required></label>'
        '<input type="text" name="comment" placeholder="comment (optional)">'
        '<button type="submit" class="approve">Approve</button></form>'
        f'<form method="post" action="/runs/{tid}/reject" class="reject-form">'
        f"{csrf_field(csrf)}"
        '<label>by <input type="text" name="by" value="web" required></label>'
        '<input type="text" name="reason" placeholder="reason (required)" required>'
        '<button type="submit" class="reject">Reject</button></form>'
    )
    waited = "" if waiting_s is None else f"<div>waiting: {esc(duration(waiting_s))}</div>"
    return (
        f'<div class="approval" id="approval-{esc(status.thread_id)}" '
        f'data-thread-id="{esc(status.thread_id)}">'
        f'<div><a href="/runs/{tid}"><code>{esc(status.thread_id)}</code></a> '
        f"({esc(status.agent)}) wants <b>{esc(pending.get('tool'))}</b> "
        f"<code>{esc(json.dumps(pending.get('args'), sort_keys=True))}</code></div>"
        f"<div>why: {esc(pending.get('reason'))}</div>"
        f"{waited}"
        f"<div>key: <code>{esc(pending.get('idempotency_key'))}</code></div>"
        f"{forms}</div>"
    )


def _table(table_id: str, title: str, columns: Sequence[str], rows: list[list[str]]) -> str:
    """A titled table whose cells are already escaped HTML; "none" when it has no row."""
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    if not rows:
        body = f'<tr><td colspan="{len(columns)}">none</td></tr>'
    return (
        f'<h2>{esc(title)}</h2><table id="{table_id}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _link(thread_id: str) -> str:
    return f'<a href="/runs/{path_segment(thread_id)}"><code>{esc(thread_id)}</code></a>'


def counts_section(counts: Mapping[str, int]) -> str:
    cells = "".join(
        f'<div class="count" data-state="{esc(s)}"><b>{esc(n)}</b>{state_badge(s)}</div>'
        for s, n in counts.items()
    )
    return f'<h2>Runs by state</h2><div class="counts" id="counts">{cells}</div>'


def activity_sections(data: Mapping[str, Any]) -> str:
    """The views of a :func:`waystone.dashboard.snapshot` other than the counts and the
    pending approvals (whose forms need each run's status): as ``waystone dashboard``."""
    active = _table(
        "active-runs",
        "Active runs (oldest first)",
        ("thread", "agent", "state", "age", "owner", "reason"),
        [
            [
                _link(r["thread_id"]),
                esc(r["agent"]),
                state_badge(r["state"]),
                esc(duration(r["age_s"])),
                esc(r["lease_owner"] or "-"),
                esc(r["reason"]),
            ]
            for r in data["active_runs"]
        ],
    )
    retries = _table(
        "retries",
        "Retries by step",
        ("step", "retries"),
        [[esc(r["step"]), esc(r["retries"])] for r in data["retries_by_step"]],
    )
    times = _table(
        "step-times",
        "Step times (ms)",
        ("node", "n", "mean", "p95"),
        [
            [esc(r["node"]), esc(r["n"]), esc(_ms(r["mean_ms"])), esc(_ms(r["p95_ms"]))]
            for r in data["step_times"]
        ],
    )
    signals = _table(
        "pending-signals",
        "Runs waiting for a signal",
        ("thread", "agent", "signal", "waiting", "wakes at"),
        [
            [
                _link(r["thread_id"]),
                esc(r["agent"]),
                f"<code>{esc(r['waiting_for'])}</code>",
                esc(duration(r["waiting_s"])),
                esc(r["wake_at"] or "-"),
            ]
            for r in data["pending_signals"]
        ],
    )
    interrupts = _table(
        "pending-interrupts",
        "Runs waiting on interrupts",
        ("thread", "graph", "waiting", "values"),
        [
            [
                _link(r["thread_id"]),
                esc(r["agent"]),
                esc(duration(r["waiting_s"])),
                f"<code>{esc(shown_interrupts(r))}</code>",
            ]
            for r in data.get("pending_interrupts", [])
        ],
    )
    undelivered = _table(
        "undelivered-signals",
        "Undelivered signals",
        ("thread", "signal", "age"),
        [
            [_link(r["thread_id"]), f"<code>{esc(r['name'])}</code>", esc(duration(r["age_s"]))]
            for r in data["undelivered_signals"]
        ],
    )
    return active + retries + times + signals + interrupts + undelivered
