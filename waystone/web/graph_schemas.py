"""A graph's JSON schemas as the reference server gives them (``/assistants/{id}/schemas``
and each subgraph's under ``/subgraphs``): its input, output and state, the keys of its
config's ``configurable``, its runtime context. A schema LangGraph cannot make is ``None``,
as the reference answers, never an error for the whole graph."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from langgraph.pregel import Pregel

logger = logging.getLogger(__name__)

# Keys of configurable that are LangGraph's and the server's own: not the graph's to show.
NOT_SHOWN = (
    "__pregel_checkpointer",
    "__pregel_store",
    "checkpoint_id",
    "checkpoint_ns",
    "thread_id",
)


def schemas(graph: Pregel[Any, Any, Any, Any]) -> dict[str, Any]:
    return {
        "input_schema": _made(graph, "input", graph.get_input_jsonschema),
        "output_schema": _made(graph, "output", graph.get_output_jsonschema),
        "state_schema": _made(graph, "state", lambda: _state(graph)),
        "config_schema": _made(graph, "config", lambda: _configurable(graph)),
        "context_schema": _made(graph, "context", graph.get_context_jsonschema),
    }


def subgraphs(
    graph: Pregel[Any, Any, Any, Any], namespace: str | None, recurse: bool
) -> dict[str, Any]:
    """Each subgraph's schemas by its namespace (``namespace``'s only, when given)."""
    found = graph.get_subgraphs(namespace=namespace, recurse=recurse)
    return {ns: schemas(sub) for ns, sub in found if isinstance(sub, Pregel)}


def _made(graph: Pregel[Any, Any, Any, Any], what: str, make: Callable[[], Any]) -> Any:
    try:
        return make()
    except Exception as exc:  # a type pydantic cannot describe: that schema only is None
        logger.warning("no %s schema for graph %s: %s", what, graph.name, exc)
        return None


def _state(graph: Pregel[Any, Any, Any, Any]) -> dict[str, Any]:
    """The state's channels and the type of an update of each (``Any`` when pydantic
    cannot describe it), named after the graph's state."""
    from langchain_core.utils.pydantic import create_model

    fields: dict[str, Any] = {}
    for name in graph.stream_channels_list:
        update = getattr(graph.channels[name], "UpdateType", Any)
        try:
            create_model(name, __root__=(update, None)).model_json_schema()
            fields[name] = (update, None)
        except Exception:  # a type pydantic cannot describe
            fields[name] = (Any, None)
    return create_model(graph.get_name("State"), **fields).model_json_schema()


def _configurable(graph: Pregel[Any, Any, Any, Any]) -> dict[str, Any]:
    """The schema of the config's ``configurable`` alone (not the whole config's)."""
    from pydantic import TypeAdapter

    config_schema = graph.config_schema()
    fields = getattr(config_schema, "model_fields", None) or {}
    if "configurable" not in fields:
        return {}
    found: dict[str, Any] = TypeAdapter(fields["configurable"].annotation).json_schema()
    for key in NOT_SHOWN:
        found.get("properties", {}).pop(key, None)
    config_type = getattr(graph, "config_type", None)
    if config_type is not None and hasattr(config_type, "__name__"):
        found["title"] = config_type.__name__
    return found
