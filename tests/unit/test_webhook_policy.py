"""Which webhook URLs a run may name: http(s) only; without an allowlist, only hosts whose
addresses are all public; with one, only its hosts."""

from __future__ import annotations

import pytest

from waystone._webhooks.policy import Policy
from waystone.errors import BadInput


@pytest.mark.parametrize(
    "url",
    [
        "ftp://93.184.216.34/hook",
        "/relative/hook",
        "http:///no-host",
        "http://127.0.0.1:8000/hook",
        "http://[::1]/hook",
        "http://10.1.2.3/hook",
        "http://169.254.169.254/latest/meta-data",  # a cloud's metadata address
        "http://0.0.0.0/hook",
        42,
    ],
)
def test_without_an_allowlist_only_public_http_urls_pass(url: object) -> None:
    with pytest.raises(BadInput, match="webhook"):
        Policy().check(url)


def test_a_public_address_passes() -> None:
    assert Policy().check("https://93.184.216.34/hook") == "https://93.184.216.34/hook"


def test_with_an_allowlist_only_its_hosts_pass() -> None:
    listed = Policy(hosts=("127.0.0.1", "*.example.com"))
    assert listed.check("http://127.0.0.1:9/hook")
    assert listed.check("https://hooks.example.com/x")
    for url in ("https://example.com/x", "https://93.184.216.34/hook", "ftp://127.0.0.1/"):
        with pytest.raises(BadInput):
            listed.check(url)
