"""What a session is, apart from its events."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from ..usage import Budget
from .common import PermissionPreset
from .resources import Resource

__all__ = ["SessionRecord"]


class SessionRecord(BaseModel):
    """A session's identity and settings: the agent version it pins, its budget, resources and preset."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    agent_id: str
    agent_version: int = Field(ge=1)
    title: str | None = None
    metadata: dict[str, str] = {}
    budget: Budget | None = None
    resources: list[Resource] = []
    permissions: PermissionPreset = "workspace-write"
    """The permission preset tools are checked against."""
    max_turns: int = Field(default=25, ge=1)
    """The most model requests one turn may make before it stops with ``max_turns``."""
    created_at: datetime
    terminated_at: datetime | None = None
