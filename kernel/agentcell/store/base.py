"""The Store protocol: what the engine keeps, whatever keeps it.

A store keeps agents and their versions, skills and their versions (each file's content once, by its
SHA-256), sessions, each session's append-only event log in order, memory
stores and their notes, and a few settings; a store on a server (PostgreSQL) keeps the uploaded files too.
A session can be reopened from the store alone. A store knows rows, not providers: it imports records only.

Several kernels may share one store. Any of them may read a session, follow its log as it commits
(:meth:`Store.follow`) and copy it; one at a time drives it: a turn runs under the session's lease
(:meth:`Store.take_lease`), and an append that would interleave with another kernel's is refused with
:class:`~agentcell.errors.SessionDrivenElsewhereError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

from ..records.session import SessionRecord

if TYPE_CHECKING:
    from ..events import Event
    from ..records.agent import Agent
    from ..records.files import StoredFile
    from ..records.memory import MemoryNote, MemoryStore
    from ..records.skill import Skill

__all__ = ["EventRow", "FileBlobs", "Lease", "Store"]


class EventRow(NamedTuple):
    """An event as stored: its id, type and JSON body, unparsed (what a copy of a store moves verbatim)."""

    id: str
    type: str
    body: str


class Lease(Protocol):
    """The right to drive one session, renewed by the store in the background until released."""

    def release(self) -> None:
        """Give the session up (idempotent); another kernel may take it at once."""


class FileBlobs(Protocol):
    """Uploaded files kept by the store itself, content included, each at most ``max_file_bytes``."""

    @property
    def max_file_bytes(self) -> int: ...

    def put_file(self, file: StoredFile, content: bytes) -> None:
        """Insert a new upload; an existing id is never overwritten."""

    def get_file(self, file_id: str) -> StoredFile | None: ...

    def file_content(self, file_id: str) -> bytes | None: ...

    def list_files(self) -> list[StoredFile]:
        """Every upload, by id (ids sort by creation time)."""

    def delete_file(self, file_id: str) -> bool:
        """Remove an upload; False when there was none."""


@runtime_checkable
class Store(Protocol):
    @property
    def location(self) -> str:
        """Where the store is, fit to show: a file path, or a URL without its password."""

    @property
    def files(self) -> FileBlobs | None:
        """The uploads the store keeps itself; None when they live in a folder beside it (SQLite)."""

    # agents
    def put_agent_version(self, agent: Agent) -> None:
        """Insert a new version; an existing (id, version) is never overwritten (the same one again is no
        change)."""

    def get_agent_version(self, agent_id: str, version: int | None) -> Agent | None:
        """The given version, or the latest when ``version`` is None."""

    def list_agents(self) -> list[Agent]: ...

    def list_agent_versions(self, agent_id: str) -> list[Agent]: ...

    # skills
    def put_skill_version(self, skill: Skill, contents: Mapping[str, bytes]) -> None:
        """Insert a new version with its files' contents (by SHA-256: a content kept already is kept once);
        an existing (id, version) is never overwritten (the same one again is no change)."""

    def get_skill_version(self, skill_id: str, version: int | None) -> Skill | None:
        """The given version, or the latest when ``version`` is None."""

    def list_skills(self) -> list[Skill]:
        """The latest version of every skill, by id (ids sort by creation time)."""

    def list_skill_versions(self, skill_id: str) -> list[Skill]: ...

    def skill_content(self, sha256: str) -> bytes | None:
        """The content of a skill's file, by its SHA-256."""

    def delete_skill(self, skill_id: str) -> bool:
        """Remove every version (and the contents no other version holds); False when there was none."""

    # sessions
    def put_session(self, record: SessionRecord, event: Event | None = None) -> None:
        """Insert or update the record, appending ``event`` in the same transaction."""

    def get_session(self, session_id: str) -> SessionRecord | None: ...

    def list_sessions(self) -> list[SessionRecord]: ...

    # events
    def append(self, event: Event) -> None:
        """Append durably: once this returns, a crash of the process does not lose the event."""

    def append_many(self, events: Sequence[Event]) -> None:
        """Append events of one session durably and in order, together where the store can (one
        transaction): once this returns, a crash loses none of them."""

    def events(
        self, session_id: str, *, types: Collection[str] | None = None, after_id: str | None = None
    ) -> Iterator[Event]:
        """The session's events in append order, optionally only some types or those after an event."""

    def last_event(self, session_id: str, event_type: str | None) -> Event | None:
        """The newest event of that type (of any type when None)."""

    def count_events(self, session_id: str) -> int: ...

    def follow(self, session_id: str, *, after_id: str | None = None) -> AsyncIterator[Event]:
        """The session's events from the start (or after ``after_id``), then each one as it commits, from
        any process, exactly once and in order; ends after ``session.status_terminated``. Raises
        InvalidInputError when ``after_id`` is not an event of the session."""

    # driving a session
    def take_lease(self, session_id: str) -> Lease:
        """Become the one kernel driving the session until ``release()``; raises
        SessionDrivenElsewhereError while another live kernel holds it."""

    # copying a whole store (agentcell migrate)
    def event_rows(self, session_id: str) -> list[EventRow]:
        """The session's events as stored, in order."""

    def put_event_rows(self, session_id: str, rows: Sequence[EventRow]) -> None:
        """Append stored events verbatim, in order, in one transaction."""

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

    def list_values(self) -> dict[str, str]:
        """Every setting, by key."""

    def close(self) -> None: ...
