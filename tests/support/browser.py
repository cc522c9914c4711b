"""A headless Chromium (Debian's, driven by Playwright) for the tests of the pages, and a
log-in through the form as a person does it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def chromium() -> Iterator[Browser]:
    """The browser until the block ends; a test that needs it fails without it."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium); "
            "this test never skips"
        )
    # Playwright loads only in the tests that drive a browser.
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def log_in(page: Page, origin: str, token: str) -> None:
    """Log in with the token through the login form; back on the runs page."""
    page.goto(origin + "/login")
    page.fill('input[name="token"]', token)
    page.click('#login button[type="submit"]')
    page.wait_for_url(origin + "/")
