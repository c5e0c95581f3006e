"""Who may change what confines the agent: the permission preset, the "always" rules and the budget change
only by the user's hand, never from the code of a tool the agent called.

The pipeline runs every tool inside :func:`tool_code`, which marks the running context (a context variable:
the python tool's worker thread, the tasks and the loop callbacks its code schedules inherit it) and counts
the calls under way. :func:`refuse_from_tool_code` is what each change calls first; it refuses when the
context carries the mark, and, while a tool runs, when the change comes from any thread but the main one
(a thread the tool's code started does not inherit the mark; the user's magics, the widget's answers and
an ACP client's requests all act on the main thread's loop).

This holds against a careless model, which is what the presets are for: code in the kernel's own process
can still undo any in-process check, which is why the python tool asks before it runs under
``workspace-write`` (see :mod:`.permissions`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextvars import ContextVar

from ..errors import PermissionChangeRefused

__all__ = ["refuse_from_tool_code", "tool_code"]

_RUNNING_TOOL: ContextVar[str | None] = ContextVar("agentcell_running_tool", default=None)
_lock = threading.Lock()
_running = [0]  # tool calls under way in this process


@contextlib.contextmanager
def tool_code(name: str) -> Iterator[None]:
    """Mark what runs in this block as the code of the tool ``name``."""
    token = _RUNNING_TOOL.set(name)
    with _lock:
        _running[0] += 1
    try:
        yield
    finally:
        with _lock:
            _running[0] -= 1
        _RUNNING_TOOL.reset(token)


def refuse_from_tool_code(change: str, *, any_thread: bool = False) -> None:
    """Raise :class:`PermissionChangeRefused` when ``change`` (what the caller would do, "setting the
    permission preset") comes from a tool's code rather than from the user. ``any_thread``: the user may do
    it from any thread (answering an approval), so only the context's mark counts."""
    tool = _RUNNING_TOOL.get()
    if tool is None:
        if any_thread:
            return
        with _lock:
            busy = _running[0] > 0
        if not busy or threading.current_thread() is threading.main_thread():
            return
        tool = "a tool"
    else:
        tool = f"the {tool} tool"
    raise PermissionChangeRefused(
        f"refused: {change} was asked by {tool}'s code during the agent's turn. Permissions, their always "
        "rules and the budget change only by the user's hand: run the magic in a cell of your own (or use "
        "your editor's session settings)"
    )
