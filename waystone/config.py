"""The settings: every ``WAYSTONE_*`` variable the package reads, parsed and checked here.

The edge that starts (a CLI command, a worker, the caller of ``create_app``) makes one
:class:`Settings` and passes it in; nothing else reads the environment. The CLI's flags
(``--json``, ``--concurrency``, ...) take their variables through Typer's ``envvar``.
"""

from __future__ import annotations

import base64
import binascii
import copy
import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from waystone.errors import BadInput

T = TypeVar("T")

TOOL_MODES = ("ledger", "as-is")  # how a user's graph's ToolNode calls its tools
DEFAULT_PAYMENTS_URL = "http://127.0.0.1:8700"
MAX_BODY = 1 << 20  # 1 MiB unless set: approvals, webhooks and run inputs are small


class BadSetting(BadInput, ValueError):
    """A setting's value is malformed (exit 2); a ``ValueError`` too, as a parse error."""


def check_tools(mode: str, name: str = "tools") -> str:
    """``mode`` if it is one of :data:`TOOL_MODES`; ``name`` says where it was given."""
    if mode not in TOOL_MODES:
        raise BadSetting(
            f"{name}={mode!r}: give 'ledger' (every ToolNode call through the effect ledger, "
            "the default) or 'as-is' (tools called as LangGraph calls them)"
        )
    return mode


def parse_timeouts(text: str) -> dict[str, float]:
    """``"refund=2,notify_customer=5.5"`` -> per-tool timeouts in seconds."""
    found: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if not sep or not name.strip() or seconds <= 0:
            raise BadSetting(f"{part!r} is not TOOL=SECONDS (e.g. refund=10)")
        found[name.strip()] = seconds
    return found


def parse_graphs(text: str) -> tuple[tuple[str, str], ...]:
    """``"support=mypkg.agent:graph,..."`` -> ``(name, "module:attribute")`` pairs."""
    found: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, ref = part.partition("=")
        if not sep or not name.strip() or not ref.strip():
            raise BadSetting(
                f"WAYSTONE_GRAPHS: {part!r} is not name=module:attribute "
                '(e.g. WAYSTONE_GRAPHS="support=mypkg.agent:graph")'
            )
        named = name.strip()  # checked as a name where the graph is imported
        if named in found:
            raise BadSetting(f"WAYSTONE_GRAPHS names {named!r} twice; give each graph one name")
        found[named] = ref.strip()
    return tuple(found.items())


def parse_key(text: str) -> bytes:
    """An encryption key: 32 bytes, hex- or base64-encoded."""
    raw = text.strip()
    for decode in (bytes.fromhex, base64.b64decode):
        try:
            key = decode(raw)
        except (ValueError, binascii.Error):
            continue
        if len(key) == 32:
            return key
    raise BadSetting(
        "WAYSTONE_ENCRYPTION_KEY must be 32 random bytes, hex- or base64-encoded "
        "(e.g. `python -c 'import secrets; print(secrets.token_hex(32))'`)"
    )


def _declared(text: str) -> tuple[str, ...]:
    """``"mypkg.state,langchain_core.agents:AgentAction"`` -> its entries."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _hosts(text: str) -> tuple[str, ...]:
    return tuple(h.lower() for h in _declared(text))


def _text(text: str) -> str:
    return text


def _url(text: str) -> str:
    return text.rstrip("/")


def _optional_int(text: str) -> int | None:
    """A whole number, or ``none`` (psycopg's "never" for prepared statements)."""
    if text.lower() == "none":
        return None
    return _number(int, "a whole number (or none)")(text)


def _pool_size(text: str) -> int:
    return _optional_int(text) or 8  # none, or 0: the default


def _body_bytes(text: str) -> int:
    raw = text.strip()
    if not (raw.isascii() and raw.isdigit()) or int(raw) == 0:
        raise BadSetting(
            f"WAYSTONE_MAX_BODY_BYTES={raw!r} is not a number of bytes: set a whole number "
            f"above 0 (the default is {MAX_BODY}, 1 MiB)"
        )
    return int(raw)


def _number(kind: Callable[[str], T], what: str) -> Callable[[str], T]:
    def parse(text: str) -> T:
        try:
            return kind(text)
        except ValueError:
            raise BadSetting(f"{text!r} is not {what}") from None

    return parse


_seconds = _number(float, "a number of seconds (e.g. 30 or 2.5)")


def _attempts(text: str) -> int:
    return max(1, _number(int, "a whole number of attempts")(text))


def _read(var: str, parse: Callable[[str], Any], default: Any) -> Any:
    raw = os.environ.get(var)
    if raw is None or not raw.strip():
        return copy.copy(default)  # a default dict is each instance's own
    try:
        return parse(raw)
    except BadSetting as exc:
        said = str(exc)
        raise BadSetting(said if said.startswith(var) else f"{var}: {said}") from None


def setting(var: str, parse: Callable[[str], Any], default: Any, *, secret: bool = False) -> Any:
    """A field read from ``var`` (unset or empty: ``default``) with ``parse``, which raises
    :class:`BadSetting` saying what is wrong; a secret stays out of the settings' repr."""
    return field(
        default_factory=lambda: _read(var, parse, default),
        repr=not secret,
        metadata={"env": var, "parse": parse, "default": default},
    )


@dataclass(frozen=True)
class Settings:
    """Every setting, each read from its ``WAYSTONE_*`` variable unless given.

    ``Settings(database_url=...)`` reads the rest from the environment, as
    :meth:`from_env` does; ``dataclasses.replace`` reads nothing.

    ``database_url`` unset means: start (or reuse) the embedded Postgres under ``home``.
    ``prepare_threshold`` is psycopg's; set it to ``None`` behind PgBouncer in transaction mode.
    ``allowed_modules``: the classes a checkpoint is read back as, beyond LangGraph's safe
    types (``module:Class``, or ``module`` for every class it defines; see
    :mod:`waystone._checkpointing.allowlist`).
    ``tools``: ``"ledger"`` routes every call of a user's graph's ``ToolNode`` through the
    effect ledger; ``"as-is"`` calls its tools as LangGraph does (docs/tools.md).
    ``agents``, ``graphs``, ``langgraph_json``: what a process drives beyond what it is
    given (:mod:`waystone.preset._agents`, :mod:`waystone._runtime.graphs`).
    ``encryption_key``: the key of encryption at rest (and of the vault), or none
    (:mod:`waystone._privacy.keys`). ``api_token``, ``api_tokens``, ``api_tokens_file``,
    ``max_body_bytes``, ``allowed_hosts``: the web app's (:mod:`waystone.web.owners`).
    ``webhook_*``: :class:`waystone._webhooks.policy.Policy`. ``payments_url``: where the
    example agents find the example payments provider.
    """

    database_url: str | None = setting("WAYSTONE_DATABASE_URL", _text, None)
    home: Path = setting("WAYSTONE_HOME", Path, Path(".waystone"))
    prepare_threshold: int | None = setting("WAYSTONE_PREPARE_THRESHOLD", _optional_int, 5)
    pool_min_size: int = 1
    pool_max_size: int = setting("WAYSTONE_POOL_MAX_SIZE", _pool_size, 8)
    lease_seconds: float = setting("WAYSTONE_LEASE_SECONDS", _seconds, 30.0)
    model_timeout_s: float = setting("WAYSTONE_MODEL_TIMEOUT", _seconds, 120.0)
    tool_timeouts: dict[str, float] = setting("WAYSTONE_TOOL_TIMEOUTS", parse_timeouts, {})
    tool_settle: dict[str, float] = setting("WAYSTONE_TOOL_SETTLE", parse_timeouts, {})
    # what a step may take beyond its longest model or tool wait (the database, the checks)
    step_margin_s: float = setting("WAYSTONE_STEP_MARGIN", _seconds, 30.0)
    allowed_modules: tuple[str, ...] = setting("WAYSTONE_ALLOWED_MODULES", _declared, ())
    # a user's graph's ToolNode calls: "ledger" (safe by default) or "as-is" (opted out)
    tools: str = setting("WAYSTONE_TOOLS", lambda t: check_tools(t, "WAYSTONE_TOOLS"), "ledger")
    agents: tuple[str, ...] = setting("WAYSTONE_AGENTS", _declared, ())
    graphs: tuple[tuple[str, str], ...] = setting("WAYSTONE_GRAPHS", parse_graphs, ())
    langgraph_json: Path | None = setting("WAYSTONE_LANGGRAPH_JSON", Path, None)
    encryption_key: bytes | None = setting("WAYSTONE_ENCRYPTION_KEY", parse_key, None, secret=True)
    api_token: str | None = setting("WAYSTONE_API_TOKEN", _text, None, secret=True)
    api_tokens: str | None = setting("WAYSTONE_API_TOKENS", _text, None, secret=True)
    api_tokens_file: Path | None = setting("WAYSTONE_API_TOKENS_FILE", Path, None)
    max_body_bytes: int = setting("WAYSTONE_MAX_BODY_BYTES", _body_bytes, MAX_BODY)
    allowed_hosts: str = setting("WAYSTONE_ALLOWED_HOSTS", _text, "")
    webhook_hosts: tuple[str, ...] = setting("WAYSTONE_WEBHOOK_HOSTS", _hosts, ())
    webhook_attempts: int = setting("WAYSTONE_WEBHOOK_ATTEMPTS", _attempts, 6)
    webhook_backoff_s: float = setting("WAYSTONE_WEBHOOK_BACKOFF", _seconds, 2.0)
    webhook_backoff_max_s: float = setting("WAYSTONE_WEBHOOK_BACKOFF_MAX", _seconds, 300.0)
    webhook_timeout_s: float = setting("WAYSTONE_WEBHOOK_TIMEOUT", _seconds, 10.0)
    payments_url: str = setting("WAYSTONE_PAYMENTS_URL", _url, DEFAULT_PAYMENTS_URL)
    # how long a run's stream log is kept once it ended (as the reference's resumable streams)
    stream_retention_s: float = setting("WAYSTONE_STREAM_RETENTION", _seconds, 3600.0)

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """The settings of the environment, with the ``overrides`` that are not ``None``."""
        return cls(**{k: v for k, v in overrides.items() if v is not None})  # type: ignore[arg-type]

    @classmethod
    def read(cls, name: str) -> Any:
        """One setting from the environment, for an edge that needs only it."""
        for f in fields(cls):
            if f.name == name and "env" in f.metadata:
                return _read(f.metadata["env"], f.metadata["parse"], f.metadata["default"])
        raise KeyError(name)


def variables() -> dict[str, str]:
    """Each ``WAYSTONE_*`` variable the settings read, with its field's name."""
    return {f.metadata["env"]: f.name for f in fields(Settings) if "env" in f.metadata}


def set_process_default(name: str, value: Callable[[], str]) -> None:
    """Give a variable a library Waystone loads reads at its import (not Waystone's own)
    a value, unless the process has one."""
    if name not in os.environ:
        os.environ[name] = value()
