"""Driving a logged run's graph: ``graph.stream`` in place of ``invoke``, its live chunks
to the stream log, and what ``invoke`` would have returned (the last values, with the
interrupts it stopped on under ``__interrupt__``, as ``Pregel.invoke`` makes them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from waystone._streams import render

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.graph.state import CompiledStateGraph

    from waystone._streams.log import StreamLog

INTERRUPT = "__interrupt__"
# what the drive reads itself: the values and interrupts it returns, and each checkpoint
_OWN = ("updates", "values", "checkpoints")
# the native modes whose chunks are logged: a model's tokens and custom writes
_LIVE = tuple(render.native_modes(("messages-tuple", "custom")))


class Output:
    """What ``invoke`` would return, gathered from the root's chunks."""

    def __init__(self) -> None:
        self.latest: Any = None
        self.interrupts: list[Any] = []

    def take(self, ns: tuple[str, ...], mode: str, chunk: Any, log: StreamLog) -> None:
        if mode in _LIVE:
            for event, data in render.render(ns, mode, chunk, subgraphs=True):
                log.add(event, data)
        elif ns:
            return
        elif mode == "updates" and isinstance(chunk, dict) and chunk.get(INTERRUPT) is not None:
            self.interrupts.extend(chunk[INTERRUPT])
        elif mode == "values":
            self.latest = chunk
        elif mode == "checkpoints":
            log.at(str(chunk["config"]["configurable"]["checkpoint_id"]))

    def result(self) -> Any:
        if not self.interrupts:
            return self.latest
        if isinstance(self.latest, dict):
            return {**self.latest, INTERRUPT: self.interrupts}
        return {INTERRUPT: self.interrupts}


def stream(
    graph: CompiledStateGraph[Any],
    payload: Any,
    config: RunnableConfig,
    log: StreamLog,
    **kwargs: Any,
) -> Any:
    """``graph.invoke(payload, config, **kwargs)``, its live events logged."""
    out = Output()
    modes: Any = [*_OWN, *_LIVE]
    try:
        for part in graph.stream(payload, config, stream_mode=modes, subgraphs=True, **kwargs):
            ns, mode, chunk = cast("tuple[tuple[str, ...], str, Any]", part)
            out.take(ns, mode, chunk, log)
    finally:
        log.flush()  # before the run is settled: a stream that sees it settled has them all
    return out.result()


async def astream(
    graph: CompiledStateGraph[Any],
    payload: Any,
    config: RunnableConfig,
    log: StreamLog,
    **kwargs: Any,
) -> Any:
    """:func:`stream` on an event loop (``ainvoke``)."""
    import asyncio

    out = Output()
    modes: Any = [*_OWN, *_LIVE]
    try:
        async for part in graph.astream(
            payload, config, stream_mode=modes, subgraphs=True, **kwargs
        ):
            ns, mode, chunk = cast("tuple[tuple[str, ...], str, Any]", part)
            out.take(ns, mode, chunk, log)
    finally:
        await asyncio.to_thread(log.flush)
    return out.result()
