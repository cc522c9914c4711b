"""The LangGraph config of a run: its thread, recursion limit, lease token (which fences
every write it causes) and the namespace its idempotency keys derive from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig


def graph_config(
    thread_id: str,
    recursion_limit: int | None = 200,
    lease_token: int | None = None,
    key_namespace: str | None = None,
) -> RunnableConfig:
    """The LangGraph config of a run; with ``lease_token`` every write it causes is fenced.
    ``key_namespace`` is the thread id its idempotency keys derive from (a fork's root)."""
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if lease_token is not None:
        configurable["lease_token"] = lease_token
    if key_namespace is not None:
        configurable["key_namespace"] = key_namespace
    config: RunnableConfig = {"configurable": configurable}
    if recursion_limit is not None:  # None: LangGraph's own default
        config["recursion_limit"] = recursion_limit
    return config
