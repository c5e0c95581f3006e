"""What the code running inside a turn can ask about the turn: which session it runs for.

The supervisor starts each turn's task in a context where :data:`TURN_SESSION` is that session's id; tasks
and worker threads the turn starts copy the context, so anything a tool calls — the memory stores' API
included, from the model's own Python code — knows which session is acting.
"""

from __future__ import annotations

from contextvars import ContextVar

__all__ = ["TURN_SESSION", "acting_session"]

TURN_SESSION: ContextVar[str | None] = ContextVar("agentcell_turn_session", default=None)


def acting_session() -> str | None:
    """The id of the session whose turn is running here; None outside any turn."""
    return TURN_SESSION.get()
