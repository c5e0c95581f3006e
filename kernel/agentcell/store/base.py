"""The Store protocol and the session record it keeps.

A store keeps agents and their versions, sessions, and each session's append-only event log in order.
A session can be reopened from the store alone.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..resources import Resource
from ..usage import Budget

if TYPE_CHECKING:
    from ..agents import Agent
    from ..events import Event

__all__ = ["PermissionPreset", "SessionRecord", "Store"]

PermissionPreset = Literal["read-only", "workspace-write", "danger-full-access"]


class SessionRecord(BaseModel):
    """What a session is, apart from its events."""

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


@runtime_checkable
class Store(Protocol):
    @property
    def location(self) -> str: ...

    # agents
    def put_agent_version(self, agent: Agent) -> None:
        """Insert a new version; an existing (id, version) is never overwritten."""

    def get_agent_version(self, agent_id: str, version: int | None) -> Agent | None:
        """The given version, or the latest when ``version`` is None."""

    def list_agents(self) -> list[Agent]: ...

    def list_agent_versions(self, agent_id: str) -> list[Agent]: ...

    # sessions
    def put_session(self, record: SessionRecord, event: Event | None = None) -> None:
        """Insert or update the record, appending ``event`` in the same transaction."""

    def get_session(self, session_id: str) -> SessionRecord | None: ...

    def list_sessions(self) -> list[SessionRecord]: ...

    # events
    def append(self, event: Event) -> None:
        """Append durably: once this returns, a crash of the process does not lose the event."""

    def events(
        self, session_id: str, *, types: Collection[str] | None = None, after_id: str | None = None
    ) -> Iterator[Event]:
        """The session's events in append order, optionally only some types or those after an event."""

    def last_event(self, session_id: str, event_type: str | None) -> Event | None:
        """The newest event of that type (of any type when None)."""

    def count_events(self, session_id: str) -> int: ...

    # small key/value settings (e.g. notebook path -> session id)
    def get_value(self, key: str) -> str | None: ...

    def set_value(self, key: str, value: str | None) -> None: ...

    def close(self) -> None: ...
