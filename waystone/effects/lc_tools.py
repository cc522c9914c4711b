"""langchain-core tools whose calls go through the effect ledger, for ``ToolNode`` and
``create_react_agent``: :func:`durable_tool`.

Under ``ToolNode`` a model's tool calls run in parallel, so a count of calls could differ
between two executions of the node; each call is told apart by the model's tool call id
instead, which the checkpointed ``AIMessage`` keeps.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from pydantic import ConfigDict

from waystone.effects._keys import canonical_json
from waystone.effects._kinds import DECLARED, ToolKind
from waystone.effects.context import call_site
from waystone.effects.inline import EffectSpec, _adapt, _dict
from waystone.effects.tools import Receipt, RetryPolicy

_TOOL_CALL: ContextVar[str | None] = ContextVar("waystone_tool_call", default=None)


class DurableTool(BaseTool):
    """A tool whose every call is an effect made exactly once (see :func:`durable_tool`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    inner: BaseTool
    spec: EffectSpec
    passes_key: bool = False  # the inner tool takes the key as an injected argument

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        token = _TOOL_CALL.set(_call_id(input))
        try:
            return super().invoke(input, config, **kwargs)
        finally:
            _TOOL_CALL.reset(token)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        token = _TOOL_CALL.set(_call_id(input))
        try:
            return await super().ainvoke(input, config, **kwargs)
        finally:
            _TOOL_CALL.reset(token)

    def _run(self, *args: Any, config: RunnableConfig, **kwargs: Any) -> Any:
        given = self._arguments(args, kwargs)
        site = call_site(self.name)
        spec = self._bound_to(config)
        if site is None:
            return spec.direct(given)
        return spec.perform(site, given, _TOOL_CALL.get())

    async def _arun(self, *args: Any, config: RunnableConfig, **kwargs: Any) -> Any:
        given = self._arguments(args, kwargs)
        site = call_site(self.name)
        spec = self._bound_to(config, run_async=True)
        if site is None:
            return await spec.direct(given)
        return await spec.aperform(site, given, _TOOL_CALL.get())

    def _arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        kwargs.pop("run_manager", None)
        if args:
            raise TypeError(
                f"{self.name}: a durable tool takes named arguments (a structured tool, "
                "such as one made with @tool from a typed function)"
            )
        try:
            canonical_json(kwargs)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{self.name}: a durable tool's arguments must be JSON: {exc}") from exc
        return kwargs

    def _bound_to(self, config: RunnableConfig, run_async: bool = False) -> EffectSpec:
        """The spec whose ``apply`` invokes the inner tool under the call's ``config``."""
        inner, passes_key = self.inner, self.passes_key

        def apply(given: dict[str, Any]) -> Any:
            args = {k: v for k, v in given.items() if k not in ("key", "timeout_s")}
            if passes_key:
                args["key"] = given["key"]
            return inner.ainvoke(args, config) if run_async else inner.invoke(args, config)

        return EffectSpec(
            name=self.spec.name,
            description=self.spec.description,
            apply=apply,
            lookup=self.spec.lookup,
            confirm=self.spec.confirm,
            idempotent_by_key=self.spec.idempotent_by_key,
            timeout_s=self.spec.timeout_s,
            retry=self.spec.retry,
            settle_s=self.spec.settle_s,
            receipt_of=self.spec.receipt_of,
            result_of=self.spec.result_of,
        )


def durable_tool(
    tool: BaseTool,
    *,
    read_only: bool = False,
    effects_inside: bool = False,
    idempotent_by_key: bool = False,
    lookup: Callable[..., Any] | None = None,
    confirm: Callable[..., Any] | None = None,
    timeout_s: float = 30.0,
    retry: RetryPolicy | None = None,
    settle_s: float | None = None,
) -> BaseTool:
    """``tool`` (a structured langchain-core tool) with every call made exactly once
    through the effect ledger, like an :func:`~waystone.effects.inline.effect`: give the
    result to ``ToolNode`` or ``create_react_agent`` in its place.

    A tool declared ``read_only`` (it changes nothing) or ``effects_inside`` (every
    effect it makes is an ``@effect``, reconciled by its own key) is given back as a copy
    that says so, called as it is: under a ``ToolNode`` of a graph Waystone drives, a
    read-only tool is called again after a crash and on a transient error, and a tool
    with its effects inside is run again. A tool given to ``ToolNode`` without any of
    this is called at most once (see docs/tools.md).

    The key derives from the run's key namespace, the task, the model's tool call id (the
    count of identical calls, for a call without one), the tool's name and the canonical
    arguments. A tool that declares an argument ``key: Annotated[str, InjectedToolArg]``
    is given it (the model does not see it); send it to the provider. What the tool
    returns must be JSON; on a re-executed node the call returns what the ledger kept.
    ``lookup`` (called with the arguments it names, of the call's and ``key``) returns
    what the tool returned for the effect made with the key, ``None`` when the provider
    proves it absent; ``confirm`` also gets ``receipt`` (what the tool returned) and
    returns what the provider shows, a dict. The rest as for ``effect``.
    """
    if read_only or effects_inside:
        return _declared(
            tool,
            ToolKind.READ_ONLY if read_only else ToolKind.EFFECTS_INSIDE,
            ledger_options=bool(idempotent_by_key or lookup or confirm or retry or settle_s),
            both=read_only and effects_inside,
        )
    schema = tool.tool_call_schema  # what the model sees: no injected arguments
    visible = _fields(schema)
    passes_key = "key" in _fields(tool.get_input_schema()) and "key" not in visible
    spec = EffectSpec(
        name=tool.name,
        description=tool.description,
        apply=lambda given: None,  # bound to each call's config (DurableTool._bound_to)
        lookup=_adapt(lookup) if lookup is not None else None,
        confirm=_adapt(confirm) if confirm is not None else None,
        idempotent_by_key=idempotent_by_key,
        timeout_s=timeout_s,
        retry=retry or RetryPolicy(),
        settle_s=settle_s,
        receipt_of=_output_receipt,
        result_of=lambda receipt: receipt.get("output"),
    )
    return DurableTool(
        name=tool.name,
        description=tool.description,
        args_schema=schema,
        inner=tool,
        spec=spec,
        passes_key=passes_key,
        return_direct=tool.return_direct,
    )


def _declared(tool: BaseTool, kind: ToolKind, *, ledger_options: bool, both: bool) -> BaseTool:
    """A copy of ``tool`` whose metadata declares ``kind`` (the user's tool unchanged)."""
    if both:
        raise TypeError(f"{tool.name}: declare read_only or effects_inside, not both")
    if ledger_options:
        raise TypeError(
            f"{tool.name}: a {kind.value} tool is called again, not through the ledger: "
            "idempotent_by_key, lookup, confirm, retry and settle_s are for a tool that is"
        )
    if isinstance(tool, DurableTool):
        raise TypeError(f"{tool.name} is a durable tool already: declare it on the tool it wraps")
    return tool.model_copy(update={"metadata": {**(tool.metadata or {}), DECLARED: kind.value}})


def _output_receipt(name: str, output: Any) -> Receipt:
    return _dict(name, {"output": output})


def _call_id(input: Any) -> str | None:
    """The model's id of a tool call (``ToolNode`` invokes a tool with the call itself)."""
    if isinstance(input, dict) and input.get("type") == "tool_call" and input.get("id"):
        return str(input["id"])
    return None


def _fields(schema: Any) -> set[str]:
    if isinstance(schema, dict):
        return set(schema.get("properties") or {})
    return set(getattr(schema, "model_fields", {}) or {})
