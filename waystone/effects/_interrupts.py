"""Whether a call that raised ``interrupt()`` may simply be made again on resume.

LangGraph runs an interrupted node again from its start, so whatever a tool did before
``interrupt()`` is done again. That is harmless only when the tool did nothing yet: it
sent no request through Waystone's client, and it had answered no earlier ``interrupt()``
in its task (code after an answer may have acted). Otherwise its intent stays open, and is
reconciled as a crash's would be (``needs-human`` for a tool that declares nothing).
"""

from __future__ import annotations

from langgraph._internal._constants import CONFIG_KEY_SCRATCHPAD
from langgraph.config import get_config


def again_on_resume(sent: int, resumed: bool) -> bool:
    """Whether an interrupted call may be recorded ``interrupted`` (made again on resume):
    ``sent`` requests went out during it; ``resumed``: its task had answered interrupts."""
    return sent == 0 and not resumed


def resumed_in_task() -> bool:
    """Whether the running task was given resume values (so an ``interrupt()`` it raises
    now comes after one it answered); ``False`` outside a task."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # not in a LangGraph task
        return False
    scratchpad = configurable.get(CONFIG_KEY_SCRATCHPAD)
    return bool(getattr(scratchpad, "resume", None))
