"""Whether a call that raised ``interrupt()`` may simply be made again on resume.

LangGraph runs an interrupted node again from its start, so whatever a tool did before
``interrupt()`` is done again. That is harmless only when the tool did nothing yet: it
sent no request through Waystone's client, and it had answered no earlier ``interrupt()``
in its task (code after an answer may have acted). Otherwise its intent stays open, and is
reconciled as a crash's would be (``needs-human`` for a tool that declares nothing).

A resume value that does not match ``interrupt()``'s ``response_schema`` is raised by
``interrupt()`` as a marked ``ValidationError``: LangGraph saves nothing, so the interrupt
is answered again; for the ledger it is an interrupt, never an error of the call.
"""

from __future__ import annotations

from langgraph._internal._constants import CONFIG_KEY_SCRATCHPAD
from langgraph.config import get_config
from langgraph.errors import GraphBubbleUp, is_invalid_resume


def again_on_resume(sent: int, resumed: bool) -> bool:
    """Whether an interrupted call may be recorded ``interrupted`` (made again on resume):
    ``sent`` requests went out during it; ``resumed``: its task had answered interrupts."""
    return sent == 0 and not resumed


def pauses(error: BaseException) -> bool:
    """Whether ``error`` hands the call back to LangGraph (``interrupt()`` and the like, or
    a resume value ``interrupt()`` refused), rather than being the call's outcome."""
    return isinstance(error, GraphBubbleUp) or is_invalid_resume(error)


def resumed_in_task(invalid_resume: bool = False) -> bool:
    """Whether the running task was given resume values (so an ``interrupt()`` it raises
    now comes after one it answered); ``False`` outside a task. ``invalid_resume``: the
    task's last value, which the raising ``interrupt()`` refused, is not counted
    (Waystone answers a graph's interrupts by id, so it is the one asked last)."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # not in a LangGraph task
        return False
    scratchpad = configurable.get(CONFIG_KEY_SCRATCHPAD)
    resume = getattr(scratchpad, "resume", None) or []
    return len(resume) > (1 if invalid_resume else 0)
