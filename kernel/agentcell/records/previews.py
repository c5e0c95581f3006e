"""The previews a session streams beside its durable events: a buffered event's start and its content deltas.

Never stored; the buffered event they preview supersedes them (``events.is_preview``). Re-exported from
:mod:`agentcell.events`, which holds the union they join (``StreamItem``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .content import ContentBlock
from .envelope import ThreadId

__all__ = ["ContentDelta", "EventDelta", "EventStart", "PreviewRef"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PreviewRef(_Model):
    type: Literal["agent.message", "agent.thinking"]
    id: str


class EventStart(_Model):
    """A buffered event with this id has begun; ``agent.thinking`` previews are start-only."""

    type: Literal["event_start"] = "event_start"
    event: PreviewRef
    thread_id: ThreadId = None


class ContentDelta(_Model):
    type: Literal["content_delta"] = "content_delta"
    index: int = Field(ge=0)
    """Entry of the content array: append to it if it exists, else insert this content as the entry."""
    content: ContentBlock


class EventDelta(_Model):
    type: Literal["event_delta"] = "event_delta"
    event_id: str
    delta: ContentDelta
    thread_id: ThreadId = None
