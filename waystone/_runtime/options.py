"""What a run is created with besides its input (the LangGraph server API's run options):
its metadata, the graph's ``configurable`` and ``recursion_limit``, LangGraph's runtime
``context``, breakpoints (``interrupt_before`` / ``interrupt_after``), the checkpoint of
its thread it begins from (a fork: regenerate, edit), and the webhook to call when it
stops (armed in the same transaction: see :mod:`waystone._webhooks.store`).

They are kept with the run in Postgres (``waystone.run_options``, redacted and sealed as
its input), written in the transaction that creates it, and read once by each drive of
it: whichever worker drives it, after whatever crash, applies the same ones.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from waystone._runs.registry import run_id_of
from waystone.errors import BadInput

if TYPE_CHECKING:
    from waystone._db.database import Conn
    from waystone._runtime.parts import Parts

# The configurable key under which LangGraph finds the caller a server's auth identified
# (its ``runtime.server_info.user``): kept with the run as a dict, given as an AuthUser.
AUTH_USER = "langgraph_auth_user"

# Waystone's own configurable keys: a run's config may not set them.
RESERVED = frozenset(
    {"thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map", "lease_token"}
    | {"key_namespace", "waystone_run", "__waystone__"}
)


class AuthUser(dict[str, Any]):
    """A caller as the reference's servers hand it to a graph: a dict whose keys are
    attributes too (``user["identity"]`` and ``user.identity``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


@dataclass(frozen=True)
class RunOptions:
    metadata: dict[str, Any] = field(default_factory=dict)
    configurable: dict[str, Any] = field(default_factory=dict)
    recursion_limit: int | None = None
    context: Any = None
    interrupt_before: list[str] | str | None = None  # node names, or "*" for every node
    interrupt_after: list[str] | str | None = None
    webhook: str | None = None  # a URL its webhook policy allowed
    stream_log: bool = False  # its live events are logged from its start (waystone._streams)
    checkpoint_id: str | None = None  # the thread's checkpoint the run begins from

    @property
    def breakpoints(self) -> bool:
        return bool(self.interrupt_before or self.interrupt_after)

    def invoke_kwargs(self) -> dict[str, Any]:
        """What each invocation of the graph is given besides its input and config."""
        given = {
            "context": self.context,
            "interrupt_before": self.interrupt_before,
            "interrupt_after": self.interrupt_after,
        }
        return {k: v for k, v in given.items() if v is not None}

    def apply(self, configurable: dict[str, Any]) -> None:
        """The run's ``configurable`` keys added to Waystone's (which they never replace)."""
        for key, value in self.configurable.items():
            if key == AUTH_USER and isinstance(value, dict):
                value = AuthUser(value)
            configurable.setdefault(key, value)

    def check(self, nodes: set[str]) -> RunOptions:
        """These options, if a graph with ``nodes`` can take them; :class:`BadInput` if
        not, saying what is wrong."""
        if not isinstance(self.metadata, dict) or not isinstance(self.configurable, dict):
            raise BadInput("a run's metadata and config's configurable must be JSON objects")
        taken = sorted(RESERVED & set(self.configurable))
        if taken:
            raise BadInput(f"configurable {', '.join(taken)} is Waystone's own: leave it out")
        limit = self.recursion_limit
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise BadInput("recursion_limit must be a whole number")
        if limit is not None and limit < 1:
            raise BadInput("recursion_limit must be at least 1")
        for name in ("interrupt_before", "interrupt_after"):
            given = getattr(self, name)
            if given is None or given == "*":
                continue
            if not isinstance(given, list) or not all(isinstance(n, str) for n in given):
                raise BadInput(f'{name} must be a list of node names, or "*"')
            unknown = sorted(set(given) - nodes)
            if unknown:
                raise BadInput(
                    f"{name} names no node of the graph: {', '.join(unknown)} "
                    f"(its nodes: {', '.join(sorted(nodes))})"
                )
        return self

    @property
    def empty(self) -> bool:
        return self == RunOptions()


def store(parts: Parts, conn: Conn, thread_id: str, number: int, options: RunOptions) -> None:
    """Keep ``options`` with the thread's run ``number``, in the caller's transaction (the
    one creating it), and arm its webhook there: no run is made without it."""
    from waystone._webhooks.store import arm_new

    run_id = run_id_of(thread_id, number)
    own = ("metadata", "webhook", "stream_log")
    rest = {k: v for k, v in asdict(options).items() if k not in own}
    parts.db.execute(
        "store_run_options",
        conn=conn,
        run_id=run_id,
        thread_id=thread_id,
        metadata=parts.protect(options.metadata),
        options=parts.protect(rest),
    )
    if options.webhook is not None:
        arm_new(parts, conn, thread_id, number, options.webhook)
    if options.stream_log:  # before any worker can claim it: its first event is logged
        parts.db.execute(
            "stream_log_mark", conn=conn, thread_id=thread_id, number=number, run_id=run_id
        )


def load(parts: Parts, run_id: str) -> RunOptions:
    """The options the run was created with (none for a run made without)."""
    row = parts.db.fetch_one("run_options", run_id=run_id)
    if row is None:
        return RunOptions()
    return RunOptions(metadata=parts.reveal(row["metadata"]), **parts.reveal(row["options"]))


def metadata_of(parts: Parts, thread_id: str) -> dict[str, dict[str, Any]]:
    """Each of the thread's runs' metadata, by run id (runs made with some only)."""
    rows = parts.db.fetch_all("thread_run_metadata", thread_id=thread_id)
    return {row["run_id"]: parts.reveal(row["metadata"]) for row in rows}
