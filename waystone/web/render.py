"""The pages' HTML: Jinja2 templates shipped in ``waystone/web/templates``, autoescaped
(every value a run holds is text, never markup), with the filters they share. The pages
work without JavaScript; the Content-Security-Policy sent with them allows no script."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.responses import HTMLResponse

from waystone._runs.dashboard import duration, shown_interrupts, shown_node
from waystone.web.security import CSRF_FIELD

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
# What every answer carries, and a page besides, so that a browser neither sniffs, caches,
# frames nor runs it (:class:`waystone.web.guard.Guard` adds them; an error answers with them).
COMMON_HEADERS = {
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    # same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on
    # the page's own form posts, which the origin check must refuse
    "referrer-policy": "same-origin",
}
PAGE_HEADERS = {"content-security-policy": CSP, "x-frame-options": "DENY"}


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def json_text(value: Any) -> str:
    """A value as JSON text, keys sorted where they can be (a dict whose keys mix types
    cannot be sorted: it is shown as given rather than failing the page)."""
    try:
        return json.dumps(value, default=str, sort_keys=True, ensure_ascii=False)
    except TypeError:
        return json.dumps(value, default=str, ensure_ascii=False)


@cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("waystone.web", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=lambda v: "" if v is None else v,  # as an empty cell, not "None"
    )
    env.filters.update(
        segment=lambda v: quote(str(v), safe=""),
        duration=duration,
        ms=_ms,
        tojson_text=json_text,
        interrupts=shown_interrupts,
        node=shown_node,
    )
    env.globals["csrf_field_name"] = CSRF_FIELD
    return env


def page(
    template: str,
    code: int = 200,
    headers: Mapping[str, str] | None = None,
    **values: Any,
) -> HTMLResponse:
    """A page from ``template``; ``csrf`` among ``values``: the session's token when
    logged in (the Log out form carries it)."""
    values.setdefault("csrf", None)
    values.setdefault("root", "")  # the prefix the app is mounted at: links start with it
    text = environment().get_template(template).render(**values)
    return HTMLResponse(text, code, dict(headers or {}))


def error_page(
    status: int, message: str, headers: Mapping[str, str] | None = None, root: str = ""
) -> HTMLResponse:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"
    return page(
        "error.html", status, headers, status=status, phrase=phrase, message=message, root=root
    )
