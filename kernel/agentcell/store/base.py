"""The Store protocol: what the engine keeps, whatever keeps it.

A store keeps agents and their versions, sessions, each session's append-only event log in order, memory
stores and their notes, and a few settings. A session can be reopened from the store alone. A store knows
rows, not providers: it imports records only.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..records.session import SessionRecord

if TYPE_CHECKING:
    from ..events import Event
    from ..records.agent import Agent
    from ..records.memory import MemoryNote, MemoryStore

__all__ = ["Store"]


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

    # memory stores
    def put_memory_store(self, store: MemoryStore) -> None:
        """Insert a new memory store."""

    def get_memory_store(self, store_id: str) -> MemoryStore | None: ...

    def list_memory_stores(self) -> list[MemoryStore]:
        """Every memory store, oldest first."""

    def put_note(self, store_id: str, note: MemoryNote) -> None:
        """Create or replace the note at ``note.path``."""

    def get_note(self, store_id: str, path: str) -> MemoryNote | None: ...

    def list_notes(self, store_id: str, prefix: str = "") -> list[MemoryNote]:
        """The notes whose path starts with ``prefix``, by path."""

    def delete_note(self, store_id: str, path: str) -> bool:
        """Remove a note; False when there was none."""

    # small key/value settings (e.g. notebook path -> session id)
    def get_value(self, key: str) -> str | None: ...

    def set_value(self, key: str, value: str | None) -> None: ...

    def close(self) -> None: ...
