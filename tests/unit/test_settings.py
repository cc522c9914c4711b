"""The settings: one loader reads every ``WAYSTONE_*`` variable, with what is wrong and
what to do for a bad value, and no other module of the package reads the environment."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from waystone.config import (
    DEFAULT_PAYMENTS_URL,
    MAX_BODY,
    BadSetting,
    Settings,
    check_tools,
    variables,
)
from waystone.errors import BadInput

PACKAGE = Path(__file__).resolve().parents[2] / "waystone"
# the loader, and the crash-point seam (a test's processes are told where to die)
READERS = {"config.py", "_crash.py"}
ENVIRON = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def environment_reads(source: str) -> list[int]:
    """The lines of ``source`` that touch the process environment through ``os``."""
    tree = ast.parse(source)
    aliases = {"os"} | {
        a.asname
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for a in node.names
        if a.name == "os" and a.asname
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("os", "posix", "nt"):
            if any(a.name in ENVIRON for a in node.names):
                found.append(node.lineno)
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in ENVIRON
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
        ):
            found.append(node.lineno)
    return found


def test_no_module_but_the_loader_and_the_crash_seam_reads_the_environment() -> None:
    offenders = [
        f"waystone/{path.relative_to(PACKAGE)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if str(path.relative_to(PACKAGE)) not in READERS
        for line in environment_reads(path.read_text())
    ]
    assert not offenders, "read the setting in waystone/config.py:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "source",
    [
        "import os\nos.environ.get('X')",
        "import os as o\no.getenv('X')",
        "from os import environ",
        "import os\nx = os.environ['X']",
        "import os\nos.environ.setdefault('X', 'y')",
    ],
)
def test_the_scan_finds_each_way_of_reading(source: str) -> None:
    assert environment_reads(source)


def test_the_scan_passes_what_is_not_the_environment() -> None:
    assert not environment_reads("import os\nos.path.join('a')\nenviron = {}\nenviron.get('x')")


def _clear(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in variables():
        monkeypatch.delenv(name, raising=False)


def test_unset_variables_give_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear(monkeypatch)
    settings = Settings.from_env()
    assert settings.database_url is None
    assert settings.home == Path(".waystone")
    assert (settings.prepare_threshold, settings.pool_max_size) == (5, 8)
    assert (settings.lease_seconds, settings.model_timeout_s, settings.step_margin_s) == (
        30.0,
        120.0,
        30.0,
    )
    assert settings.tools == "ledger"
    assert settings.tool_timeouts == {} and settings.tool_timeouts is not Settings().tool_timeouts
    assert settings.agents == settings.graphs == settings.allowed_modules == ()
    assert settings.encryption_key is None and settings.api_token is None
    assert settings.max_body_bytes == MAX_BODY
    assert settings.payments_url == DEFAULT_PAYMENTS_URL
    assert (settings.webhook_attempts, settings.webhook_timeout_s) == (6, 10.0)


def test_each_variable_is_read_into_its_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear(monkeypatch)
    given = {
        "WAYSTONE_DATABASE_URL": "postgresql://db/x",
        "WAYSTONE_PREPARE_THRESHOLD": "none",
        "WAYSTONE_POOL_MAX_SIZE": "3",
        "WAYSTONE_LEASE_SECONDS": "2.5",
        "WAYSTONE_TOOL_TIMEOUTS": "refund=2,notify_customer=5.5",
        "WAYSTONE_ALLOWED_MODULES": "mypkg.state, langchain_core.agents:AgentAction",
        "WAYSTONE_TOOLS": "as-is",
        "WAYSTONE_AGENTS": "a.b:c,d.e:f",
        "WAYSTONE_GRAPHS": "support=mypkg.agent:graph",
        "WAYSTONE_ENCRYPTION_KEY": "ab" * 32,
        "WAYSTONE_WEBHOOK_HOSTS": "Hooks.Example.com, *.example.org",
        "WAYSTONE_WEBHOOK_ATTEMPTS": "0",
        "WAYSTONE_PAYMENTS_URL": "http://127.0.0.1:9/",
    }
    for name, value in given.items():
        monkeypatch.setenv(name, value)
    settings = Settings.from_env(lease_seconds=None, pool_max_size=4)
    assert settings.database_url == "postgresql://db/x"
    assert settings.prepare_threshold is None
    assert settings.pool_max_size == 4  # an override wins; None is no override
    assert settings.lease_seconds == 2.5
    assert settings.tool_timeouts == {"refund": 2.0, "notify_customer": 5.5}
    assert settings.allowed_modules == ("mypkg.state", "langchain_core.agents:AgentAction")
    assert settings.tools == "as-is"
    assert settings.agents == ("a.b:c", "d.e:f")
    assert settings.graphs == (("support", "mypkg.agent:graph"),)
    assert settings.encryption_key == bytes.fromhex("ab" * 32)
    assert settings.webhook_hosts == ("hooks.example.com", "*.example.org")
    assert settings.webhook_attempts == 1
    assert settings.payments_url == "http://127.0.0.1:9"
    assert Settings.read("payments_url") == "http://127.0.0.1:9"


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("WAYSTONE_LEASE_SECONDS", "soon", "WAYSTONE_LEASE_SECONDS: 'soon' is not a number"),
        ("WAYSTONE_POOL_MAX_SIZE", "many", "WAYSTONE_POOL_MAX_SIZE: 'many' is not a whole"),
        ("WAYSTONE_TOOL_TIMEOUTS", "refund", "WAYSTONE_TOOL_TIMEOUTS: 'refund' is not TOOL="),
        ("WAYSTONE_TOOLS", "off", "WAYSTONE_TOOLS='off': give 'ledger'"),
        ("WAYSTONE_GRAPHS", "chat", "WAYSTONE_GRAPHS: 'chat' is not name=module:attribute"),
        ("WAYSTONE_GRAPHS", "a=m:g,a=m:h", "WAYSTONE_GRAPHS names 'a' twice"),
        ("WAYSTONE_ENCRYPTION_KEY", "short", "WAYSTONE_ENCRYPTION_KEY must be 32 random bytes"),
        ("WAYSTONE_MAX_BODY_BYTES", "1MiB", "WAYSTONE_MAX_BODY_BYTES='1MiB' is not a number"),
        ("WAYSTONE_WEBHOOK_BACKOFF", "x", "WAYSTONE_WEBHOOK_BACKOFF: 'x' is not a number"),
    ],
)
def test_a_bad_value_says_which_variable_and_what_to_give(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, says: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(BadSetting) as refused:
        Settings.from_env()
    assert str(refused.value).startswith(says), refused.value
    assert isinstance(refused.value, BadInput) and refused.value.exit_code == 2


def test_one_check_for_the_tools_mode_names_where_it_was_given() -> None:
    assert check_tools("ledger") == "ledger"
    with pytest.raises(BadInput, match="^tools='off'"):
        check_tools("off")
    with pytest.raises(BadInput, match="^WAYSTONE_TOOLS='off'"):
        check_tools("off", "WAYSTONE_TOOLS")


def test_secrets_stay_out_of_the_settings_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WAYSTONE_API_TOKEN", "tok-secret")
    monkeypatch.setenv("WAYSTONE_API_TOKENS", "alice=tok-alice")
    monkeypatch.setenv("WAYSTONE_ENCRYPTION_KEY", "ab" * 32)
    shown = repr(Settings.from_env())
    assert "tok-" not in shown and "ab" * 8 not in shown and "\\xab" not in shown
    assert "database_url" in shown


def test_every_setting_has_a_variable_of_its_own() -> None:
    found = variables()
    assert all(name.startswith("WAYSTONE_") for name in found)
    assert len(set(found.values())) == len(found)
    assert "WAYSTONE_CRASH_AT" not in found  # the crash seam's, read where it strikes
