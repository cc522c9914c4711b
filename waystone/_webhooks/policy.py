"""Which webhook URLs a run may name, and how hard a worker tries to deliver one.

A webhook makes a worker send a request to a URL an API caller chose: without a limit,
a caller who may start runs could reach what only the workers can (a cloud's metadata
address, an admin port on loopback, the private network). So, as the reference server
does by default, a URL whose host resolves to a loopback, private, link-local or other
non-public address is refused, unless the operator lists its host in
``WAYSTONE_WEBHOOK_HOSTS`` (comma-separated: ``hooks.example.com``, ``*.example.com``,
``127.0.0.1``); with the list set, only its hosts are allowed. The address is checked when
the run is created and again right before each send (a name may resolve elsewhere later).
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from waystone.config import Settings
from waystone.errors import BadInput

MAX_URL = 2048  # as the reference's default


class Unresolved(BadInput):
    """The URL's host does not resolve (now): refused when a run names it, retried when
    a delivery meets it (a name server's hiccup)."""


@dataclass(frozen=True)
class Policy:
    hosts: tuple[str, ...] = ()  # the allowlist; empty: any public host
    attempts: int = 6  # the budget: sends before the delivery is recorded failed
    backoff_s: float = 2.0  # the first retry's delay, doubled each time ...
    backoff_max_s: float = 300.0  # ... up to this
    timeout_s: float = 10.0  # one request's

    @classmethod
    def of(cls, settings: Settings) -> Policy:
        """The policy the ``WAYSTONE_WEBHOOK_*`` settings give."""
        return cls(
            hosts=settings.webhook_hosts,
            attempts=settings.webhook_attempts,
            backoff_s=settings.webhook_backoff_s,
            backoff_max_s=settings.webhook_backoff_max_s,
            timeout_s=settings.webhook_timeout_s,
        )

    @property
    def lease_s(self) -> float:
        """How long a claimed delivery is a worker's: its request's timeout and a margin."""
        return self.timeout_s + 5.0

    def check(self, url: object) -> str:
        """``url`` if a run may name it; :class:`BadInput` saying why not otherwise."""
        if not isinstance(url, str) or not url:
            raise BadInput("webhook must be a URL (a string), e.g. https://hooks.example.com/run")
        if len(url) > MAX_URL:
            raise BadInput(f"the webhook URL is longer than {MAX_URL} characters")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BadInput(f"webhook must be an http(s) URL with a host, not {parts.scheme!r}")
        self.check_host(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
        return url

    def check_host(self, host: str, port: int) -> None:
        host = host.lower()
        if self.hosts:
            if not any(
                host == h or (h.startswith("*.") and host.endswith(h[1:])) for h in self.hosts
            ):
                raise BadInput(
                    f"webhook host {host!r} is not in WAYSTONE_WEBHOOK_HOSTS; "
                    "ask the operator to add it"
                )
            return
        for address in _addresses(host, port):
            if not address.is_global:
                raise BadInput(
                    f"webhook host {host!r} resolves to {address}, which is not a public "
                    "address; name a public host, or have the operator list this one in "
                    "WAYSTONE_WEBHOOK_HOSTS"
                )


def _addresses(host: str, port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        found = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise Unresolved(f"webhook host {host!r} does not resolve: {exc.strerror}") from None
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found]
