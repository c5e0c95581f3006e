"""The envelope every event of the log carries: its id, its time, its session and its thread.

It lives apart from ``events.py`` so that event families kept in their own modules (the workflow runs' in
``records/workflow_events.py``) share it without importing the union that lists them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["EventEnvelope", "ThreadId"]


def _omit_none(value: object) -> bool:
    return value is None


ThreadId = Annotated[str | None, Field(default=None, exclude_if=_omit_none)]
"""A thread's id; omitted from the wire (not null) for the session's primary thread, as seed 002 says."""


class EventEnvelope(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    created_at: datetime
    session_id: str
    thread_id: ThreadId = None
    """The thread the event belongs to; omitted (``None`` here) for the session's primary thread."""
