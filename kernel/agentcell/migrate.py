"""Copying a whole store into another (``agentcell migrate SRC DST``): SQLite to PostgreSQL and back.

Everything moves: every agent version, skill version (with its files), memory store and note, upload,
setting and session, each session's events verbatim (the stored JSON, not a re-serialisation) with their
ids. The destination may already hold things: what is there and identical is left alone, so a migration can
be run again; anything there that differs (another session under the same id, a note with other content)
stops the copy before a single row is written. At the end each session is checked in the destination: the
same event ids, the same count, and the same checksum over its stored events. A session's record and its
events are two writes: a copy cut between them leaves a session without events, which a second run reports
as differing rather than guessing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import NotFoundError, StoreError
from .records.files import StoredFile
from .store.base import EventRow

if TYPE_CHECKING:
    from .core import Engine
    from .records.files import UploadedFile

__all__ = ["MigrationReport", "SessionCopy", "event_checksum", "migrate"]


def event_checksum(rows: Sequence[EventRow]) -> str:
    """SHA-256 over a session's stored events in order: ids, types and JSON bodies."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(f"{row.id}\x1f{row.type}\x1f{row.body}\x1e".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class SessionCopy:
    session_id: str
    events: int
    checksum: str
    copied: bool
    """False: the destination held the very same session already."""


@dataclass
class MigrationReport:
    source: str
    destination: str
    agent_versions: int = 0
    skill_versions: int = 0
    memory_stores: int = 0
    notes: int = 0
    uploads: int = 0
    settings: int = 0
    sessions: list[SessionCopy] = field(default_factory=list)

    @property
    def events(self) -> int:
        return sum(s.events for s in self.sessions if s.copied)


@dataclass
class _Plan:
    conflicts: list[str] = field(default_factory=list)
    agents: list[tuple[str, int]] = field(default_factory=list)
    skills: list[tuple[str, int]] = field(default_factory=list)
    memory_stores: list[str] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)
    uploads: list[UploadedFile] = field(default_factory=list)
    settings: dict[str, str] = field(default_factory=dict)
    sessions: dict[str, list[EventRow]] = field(default_factory=dict)
    present: dict[str, list[EventRow]] = field(default_factory=dict)


def _plan(src: Engine, dst: Engine) -> _Plan:
    plan = _Plan()
    for latest in src.store.list_agents():
        for agent in src.store.list_agent_versions(latest.id):
            there = dst.store.get_agent_version(agent.id, agent.version)
            if there is None:
                plan.agents.append((agent.id, agent.version))
            elif there.model_dump_json() != agent.model_dump_json():
                plan.conflicts.append(f"it holds agent {agent.id} version {agent.version} with other settings")
    for latest_skill in src.store.list_skills():
        for skill in src.store.list_skill_versions(latest_skill.id):
            there_skill = dst.store.get_skill_version(skill.id, skill.version)
            if there_skill is None:
                plan.skills.append((skill.id, skill.version))
            elif there_skill != skill:
                plan.conflicts.append(
                    f"it holds skill {skill.name} ({skill.id}) version {skill.version} with other files"
                )
    for store in src.store.list_memory_stores():
        there_store = dst.store.get_memory_store(store.id)
        if there_store is None:
            plan.memory_stores.append(store.id)
        elif there_store != store:
            plan.conflicts.append(f"it holds memory store {store.id} under another name or date")
        for note in src.store.list_notes(store.id):
            there_note = dst.store.get_note(store.id, note.path) if there_store is not None else None
            if there_note is None:
                plan.notes.append((store.id, note.path))
            elif there_note != note:
                plan.conflicts.append(f"its note {note.path} of memory store {store.id} says something else")
    for upload in src.files.list():
        try:
            there_file = dst.files.get(upload.id)
        except NotFoundError:
            plan.uploads.append(upload)
            blobs = dst.store.files
            if blobs is not None and upload.size > blobs.max_file_bytes:
                plan.conflicts.append(
                    f"the upload {upload.id} ({upload.filename}) is {upload.size:,} bytes, over its cap of "
                    f"{blobs.max_file_bytes:,}"
                )
            continue
        if there_file.sha256 != upload.sha256:
            plan.conflicts.append(f"it holds upload {upload.id} with other content")
    for key, value in src.store.list_values().items():
        there_value = dst.store.get_value(key)
        if there_value is None:
            plan.settings[key] = value
        elif there_value != value:
            plan.conflicts.append(f"its setting {key!r} has another value")
    for record in src.store.list_sessions():
        rows = src.store.event_rows(record.id)
        there_record = dst.store.get_session(record.id)
        if there_record is None:
            plan.sessions[record.id] = rows
            continue
        if there_record != record or event_checksum(dst.store.event_rows(record.id)) != event_checksum(rows):
            plan.conflicts.append(f"it holds session {record.id} with other settings or events")
        else:
            plan.present[record.id] = rows
    return plan


def migrate(src: Engine, dst: Engine) -> MigrationReport:
    """Copy everything in ``src`` that ``dst`` lacks, then check every session there; raises StoreError
    (having written nothing) when ``dst`` holds something that differs."""
    report = MigrationReport(src.store.location, dst.store.location)
    plan = _plan(src, dst)
    if plan.conflicts:
        more = len(plan.conflicts) - 5
        shown = "; ".join(plan.conflicts[:5]) + (f"; and {more} more" if more > 0 else "")
        raise StoreError(
            f"cannot copy {src.store.location} into {dst.store.location}: {shown}. Nothing was copied; "
            "migrate into an empty database, or settle these first."
        )
    for agent_id, version in plan.agents:
        agent = src.store.get_agent_version(agent_id, version)
        assert agent is not None  # listed a moment ago, and versions are never deleted
        dst.store.put_agent_version(agent)
    for skill_id, skill_version in plan.skills:
        skill = src.store.get_skill_version(skill_id, skill_version)
        assert skill is not None
        contents = {f.sha256: src.store.skill_content(f.sha256) for f in skill.files}
        if missing := [f.path for f in skill.files if contents[f.sha256] is None]:
            raise StoreError(f"skill {skill.name} version {skill.version} in {src.store.location} lacks {missing[0]}")
        dst.store.put_skill_version(skill, {sha: content for sha, content in contents.items() if content is not None})
    for store_id in plan.memory_stores:
        memory = src.store.get_memory_store(store_id)
        assert memory is not None
        dst.store.put_memory_store(memory)
    for store_id, path in plan.notes:
        note = src.store.get_note(store_id, path)
        if note is not None:
            dst.store.put_note(store_id, note)
    for upload in plan.uploads:
        described = StoredFile(upload.id, upload.filename, upload.size, upload.sha256, upload.created_at)
        dst.files.import_file(described, src.files.read_bytes(upload.id))
    for key, value in plan.settings.items():
        dst.store.set_value(key, value)
    for session_id, rows in plan.sessions.items():
        record = src.store.get_session(session_id)
        assert record is not None
        dst.store.put_session(record)
        dst.store.put_event_rows(session_id, rows)
    report.agent_versions, report.memory_stores = len(plan.agents), len(plan.memory_stores)
    report.skill_versions = len(plan.skills)
    report.notes, report.uploads, report.settings = len(plan.notes), len(plan.uploads), len(plan.settings)
    for session_id, rows in [*plan.sessions.items(), *plan.present.items()]:
        copied = dst.store.event_rows(session_id)
        if [r.id for r in copied] != [r.id for r in rows] or event_checksum(copied) != event_checksum(rows):
            raise StoreError(
                f"session {session_id} does not read back the same from {dst.store.location} "
                f"({len(copied)} events there, {len(rows)} here); the copy is incomplete"
            )
        report.sessions.append(SessionCopy(session_id, len(rows), event_checksum(rows), session_id in plan.sessions))
    return report
