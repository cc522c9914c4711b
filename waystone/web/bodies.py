"""The LangGraph server API's request bodies, with the reference's field names and JSON
types (``langgraph_sdk`` sends them). A value of the right type that Waystone does not
do is refused by the route with a reason (422), never ignored; a value whose meaning is
checked by the runtime (a cron expression, a node's name) is refused there (400)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from waystone.web.inputs import Body, Paged

JsonObject = dict[str, Any]
Breakpoints = Literal["*"] | list[str]
MultitaskStrategy = Literal["reject", "enqueue", "interrupt", "rollback"]
ThreadStatus = Literal["idle", "busy", "interrupted", "error"]
CronSort = Literal[
    "cron_id", "assistant_id", "thread_id", "next_run_date", "end_time", "created_at", "updated_at"
]
CronField = Literal[
    "cron_id",
    "assistant_id",
    "thread_id",
    "end_time",
    "schedule",
    "timezone",
    "created_at",
    "updated_at",
    "user_id",
    "payload",
    "next_run_date",
    "metadata",
    "on_run_completed",
    "enabled",
]


AssistantSort = Literal["assistant_id", "created_at", "updated_at", "name", "graph_id"]
AssistantField = Literal[
    "assistant_id",
    "graph_id",
    "name",
    "description",
    "config",
    "context",
    "created_at",
    "updated_at",
    "metadata",
    "version",
]


class AssistantCount(Body):
    graph_id: str | None = None
    name: str | None = None
    metadata: JsonObject | None = None


class AssistantSearch(AssistantCount, Paged):
    sort_by: AssistantSort | None = None
    sort_order: Literal["asc", "desc"] | None = None
    select: list[AssistantField] | None = None


class AssistantPatch(Body):
    """What an assistant's update changes: the fields it names."""

    graph_id: str | None = None
    config: JsonObject | None = None
    context: JsonObject | None = None
    metadata: JsonObject | None = None
    name: str | None = None
    description: str | None = None


class AssistantCreate(AssistantPatch):
    graph_id: str
    assistant_id: str | None = None
    if_exists: Literal["raise", "do_nothing"] | None = None


class AssistantVersions(Paged):
    metadata: JsonObject | None = None


class AssistantLatest(Body):
    version: int


class ThreadCreate(Body):
    thread_id: str | None = None
    metadata: JsonObject | None = None
    if_exists: Literal["raise", "do_nothing"] | None = None


class ThreadSearch(Paged):
    metadata: JsonObject | None = None
    status: ThreadStatus | None = None


class ThreadPatch(Body):
    metadata: JsonObject | None = None
    ttl: Any = None


class Checkpoint(Body):
    """A checkpoint's config as the reference takes it (``CheckpointConfig``)."""

    checkpoint_id: str | None = None


class StateUpdate(Body):
    values: Any = None
    checkpoint: Checkpoint | None = None
    checkpoint_id: str | None = None
    as_node: str | None = None


class CheckpointAt(Body):
    checkpoint_id: Annotated[str, StringConstraints(min_length=1)]


class StateAt(Body):
    """Which checkpoint's state to read."""

    checkpoint: CheckpointAt


class History(Body):
    limit: int | None = Field(default=None, ge=0)


class RunCreate(Body):
    """A run (``RunCreateStateful`` / ``RunCreateStateless``): its graph, its input or an
    answer to an interrupt, its options, how it streams."""

    assistant_id: str
    input: Any = None
    command: JsonObject | None = None
    metadata: JsonObject | None = None
    config: JsonObject | None = None
    context: JsonObject | None = None
    interrupt_before: Breakpoints | None = None
    interrupt_after: Breakpoints | None = None
    webhook: str | None = None
    stream_mode: str | list[str] | None = None
    stream_subgraphs: bool | None = None
    multitask_strategy: MultitaskStrategy | None = None
    if_not_exists: Literal["create", "reject"] | None = None
    stream_resumable: bool | None = None  # its live events are logged for a later join
    on_disconnect: Literal["cancel", "continue"] | None = None  # its stream's client leaves
    checkpoint: JsonObject | None = None  # where the run begins (regenerate, edit)
    checkpoint_id: str | None = None
    durability: Literal["sync", "async", "exit"] | None = None
    checkpoint_during: bool | None = None
    # the reference's, not done by Waystone yet: refused when given
    after_seconds: float | None = None
    feedback_keys: list[str] | None = None


class RunsCancel(Body):
    """``POST /runs/cancel``: the runs of a thread, or the runs in a status."""

    thread_id: str | None = None
    run_ids: list[str] | None = None
    status: Literal["pending", "running", "all"] | None = None


class CronFields(Body):
    """What a cron's creation and its update share."""

    schedule: str | None = None
    input: Any = None
    metadata: JsonObject | None = None
    timezone: str | None = None
    end_time: str | None = None
    on_run_completed: Literal["delete", "keep"] | None = None
    multitask_strategy: MultitaskStrategy | None = None
    # the reference's, not done by Waystone's crons yet: refused when given
    config: JsonObject | None = None
    context: JsonObject | None = None
    checkpoint_during: bool | None = None
    interrupt_before: Breakpoints | None = None
    interrupt_after: Breakpoints | None = None
    webhook: str | None = None
    stream_mode: str | list[str] | None = None
    stream_subgraphs: bool | None = None
    stream_resumable: bool | None = None
    durability: str | None = None


class CronCreate(CronFields):
    assistant_id: str
    enabled: bool = True


class CronPatch(CronFields):
    """What a cron's update changes: the fields it names (``end_time: null`` clears it)."""

    enabled: bool | None = None


class CronSearch(Paged):
    assistant_id: str | None = None
    thread_id: str | None = None
    enabled: bool | None = None
    metadata: JsonObject | None = None
    sort_by: CronSort | None = None
    sort_order: str | None = None
    select: list[CronField] | None = None


# -- the store (slice "store") -------------------------------------------------------------

Labels = list[str]


class StorePut(Body):
    namespace: Labels
    key: str
    value: JsonObject
    index: Literal[False] | list[str] | None = None
    ttl: float | None = None


class StoreDelete(Body):
    namespace: Labels | None = None
    key: str


class StoreSearch(Body):
    namespace_prefix: Labels | None = None
    filter: JsonObject | None = None
    limit: int = Field(default=10, ge=0)
    offset: int = Field(default=0, ge=0)
    query: str | None = None
    refresh_ttl: bool | None = None


class StoreNamespaces(Body):
    prefix: Labels | None = None
    suffix: Labels | None = None
    max_depth: int | None = Field(default=None, ge=1)
    limit: int = Field(default=100, ge=0)
    offset: int = Field(default=0, ge=0)
