"""The embedded SQLite store (stdlib sqlite3, WAL).

Each append is its own committed transaction in WAL mode with ``synchronous=NORMAL``: a committed event
survives the process being killed at any moment (the WAL is in the OS's hands once the commit returns);
after a power loss the last few commits may roll back, but the database stays consistent. Events are
append-only, enforced by triggers. Only two indexes (by id, and by session in order) are kept: each index
costs about a third of the append rate, and lookups by type are rare and read recent rows.
``PRAGMA user_version`` holds the schema version, and a database written by a newer agentcell is refused
before anything touches it.

SQLite is the store of one person: uploads live in a folder beside the file (``store.files`` is None), a
turn's lease is a lock on a file beside it too (:mod:`.sqlite_lease`: two kernels of one person cannot
drive one session at once), and a follower in another process polls the file every ``POLL_SECONDS``.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
from collections.abc import AsyncIterator, Collection, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InvalidInputError, StoreError, StoreVersionError
from ..events import event_adapter
from ..records.memory import MemoryNote, MemoryStore
from ..records.session import SessionRecord
from .base import EventRow
from .follow import FOLLOW_BATCH, PollWakeups, follow_log
from .pg_url import is_postgres_url
from .sqlite_lease import FileLease, NoLease, take_file_lease

if TYPE_CHECKING:
    from ..events import Event
    from ..records.agent import Agent
    from ..records.skill import Skill

__all__ = ["SCHEMA_VERSION", "SQLiteStore", "default_db_path"]

SCHEMA_VERSION = 3
"""1: agents, sessions, events, kv. 2: memory stores and notes (before, a separate ``<db>.memory.db``).
3: skills (their versions, their files, and the files' contents by SHA-256)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS agent_versions (
    agent_id   TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    body       TEXT    NOT NULL,
    PRIMARY KEY (agent_id, version)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sessions (
    id         TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    body       TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    seq        INTEGER PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL,
    type       TEXT NOT NULL,
    body       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_session ON events (session_id, seq);
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
CREATE TABLE IF NOT EXISTS kv (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS memory_stores (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    description TEXT,
    created_at  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS memory_notes (
    store_id   TEXT NOT NULL REFERENCES memory_stores (id) ON DELETE CASCADE,
    path       TEXT NOT NULL,
    content    TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (store_id, path)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS skill_versions (
    skill_id TEXT    NOT NULL,
    version  INTEGER NOT NULL,
    body     TEXT    NOT NULL,
    PRIMARY KEY (skill_id, version)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS skill_contents (
    sha256  TEXT PRIMARY KEY,
    content BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS skill_files (
    skill_id TEXT    NOT NULL,
    version  INTEGER NOT NULL,
    path     TEXT    NOT NULL,
    sha256   TEXT    NOT NULL REFERENCES skill_contents (sha256),
    PRIMARY KEY (skill_id, version, path)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS skill_files_by_content ON skill_files (sha256);
"""


def _jupyter_data_dir() -> Path:
    # The same places jupyter_core uses, without importing Jupyter into the engine.
    if env := os.environ.get("JUPYTER_DATA_DIR"):
        return Path(env)
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Jupyter"
    if os.name == "nt":
        appdata = os.environ.get("APPDATA")
        return Path(appdata) / "jupyter" if appdata else home / ".jupyter" / "data"
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg) if xdg else home / ".local" / "share") / "jupyter"


def default_db_path() -> Path:
    """``$AGENTCELL_DB``, else ``<jupyter data dir>/agentcell/agentcell.db``."""
    if env := os.environ.get("AGENTCELL_DB"):
        if is_postgres_url(env):
            raise StoreError("AGENTCELL_DB names a PostgreSQL database, not a file; open it with Engine()")
        return Path(env).expanduser()
    return _jupyter_data_dir() / "agentcell" / "agentcell.db"


def _read_schema_version(path: Path) -> int:
    """Read the version without writing anything (not even the WAL switch)."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path} is not an agentcell database ({exc}); point AGENTCELL_DB at another file") from exc


class SQLiteStore:
    """A Store in one SQLite file. Thread-safe; several processes may share the file."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, busy_timeout: float = 10.0) -> None:
        """``busy_timeout``: seconds a write waits for another process's write to finish."""
        self._path = Path(path) if path is not None else default_db_path()
        if self._path.exists():
            found = _read_schema_version(self._path)
            if found > SCHEMA_VERSION:
                raise StoreVersionError(str(self._path), found, SCHEMA_VERSION)
        else:
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the directory for {self._path}: {exc}") from exc
        self._lock = threading.RLock()
        try:
            self._conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
            with self._transaction():
                for statement in _SCHEMA.split(";\n"):
                    if statement.strip():
                        self._conn.execute(statement)
                self._conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open the database {self._path}: {exc}") from exc

    # ------------------------------------------------------------------------------------------ plumbing

    @property
    def location(self) -> str:
        return str(self._path)

    @property
    def files(self) -> None:
        """Uploads live in a folder beside the file (``engine.files``), not in it."""
        return None

    class _Tx:
        def __init__(self, store: SQLiteStore) -> None:
            self.store = store

        def __enter__(self) -> sqlite3.Connection:
            self.store._lock.acquire()
            try:
                self.store._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                # Another process kept the write lock past busy_timeout: give our lock back, or every
                # other thread of this process would block on it forever.
                self.store._lock.release()
                raise self.store._error("start a write", exc) from exc
            return self.store._conn

        def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
            try:
                self.store._conn.execute("COMMIT" if exc_type is None else "ROLLBACK")
            except sqlite3.Error as error:
                if exc_type is None:
                    raise self.store._error("commit", error) from error
            finally:
                self.store._lock.release()

    def _error(self, doing: str, exc: sqlite3.Error) -> StoreError:
        return StoreError(f"cannot {doing} in {self._path}: {exc}; nothing was written (is another process busy?)")

    def _transaction(self) -> SQLiteStore._Tx:
        return SQLiteStore._Tx(self)

    def _query(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[str, ...]]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # ------------------------------------------------------------------------------------------ agents

    def put_agent_version(self, agent: Agent) -> None:
        body = agent.model_dump_json()
        try:
            with self._transaction() as conn:
                conn.execute(
                    "INSERT INTO agent_versions (agent_id, version, body) VALUES (?, ?, ?)",
                    (agent.id, agent.version, body),
                )
        except sqlite3.IntegrityError as exc:
            stored = self._query(
                "SELECT body FROM agent_versions WHERE agent_id = ? AND version = ?", (agent.id, agent.version)
            )
            if stored and stored[0][0] == body:  # the very same version again: nothing to change
                return
            raise StoreError(
                f"agent {agent.id} version {agent.version} already exists; versions are immutable"
            ) from exc

    def get_agent_version(self, agent_id: str, version: int | None) -> Agent | None:
        from ..records.agent import Agent

        if version is None:
            rows = self._query(
                "SELECT body FROM agent_versions WHERE agent_id = ? ORDER BY version DESC LIMIT 1",
                (agent_id,),
            )
        else:
            rows = self._query(
                "SELECT body FROM agent_versions WHERE agent_id = ? AND version = ?", (agent_id, version)
            )
        return Agent.model_validate_json(rows[0][0]) if rows else None

    def list_agents(self) -> list[Agent]:
        from ..records.agent import Agent

        rows = self._query(
            "SELECT body FROM agent_versions AS a WHERE version = "
            "(SELECT MAX(version) FROM agent_versions WHERE agent_id = a.agent_id) ORDER BY agent_id"
        )
        return [Agent.model_validate_json(body) for (body,) in rows]

    def list_agent_versions(self, agent_id: str) -> list[Agent]:
        from ..records.agent import Agent

        rows = self._query("SELECT body FROM agent_versions WHERE agent_id = ? ORDER BY version", (agent_id,))
        return [Agent.model_validate_json(body) for (body,) in rows]

    # ------------------------------------------------------------------------------------------ skills

    def put_skill_version(self, skill: Skill, contents: Mapping[str, bytes]) -> None:
        body = skill.model_dump_json()
        with self._transaction() as conn:
            stored = conn.execute(
                "SELECT body FROM skill_versions WHERE skill_id = ? AND version = ?", (skill.id, skill.version)
            ).fetchall()
            if stored:
                if stored[0][0] == body:  # the very same version again: nothing to change
                    return
                raise StoreError(f"skill {skill.id} version {skill.version} already exists; versions are immutable")
            conn.executemany(
                "INSERT OR IGNORE INTO skill_contents (sha256, content) VALUES (?, ?)",
                [(f.sha256, contents[f.sha256]) for f in skill.files],
            )
            conn.execute(
                "INSERT INTO skill_versions (skill_id, version, body) VALUES (?, ?, ?)", (skill.id, skill.version, body)
            )
            conn.executemany(
                "INSERT INTO skill_files (skill_id, version, path, sha256) VALUES (?, ?, ?, ?)",
                [(skill.id, skill.version, f.path, f.sha256) for f in skill.files],
            )

    def get_skill_version(self, skill_id: str, version: int | None) -> Skill | None:
        from ..records.skill import stored_skill

        if version is None:
            rows = self._query(
                "SELECT body FROM skill_versions WHERE skill_id = ? ORDER BY version DESC LIMIT 1", (skill_id,)
            )
        else:
            rows = self._query(
                "SELECT body FROM skill_versions WHERE skill_id = ? AND version = ?", (skill_id, version)
            )
        return stored_skill(rows[0][0]) if rows else None

    def list_skills(self) -> list[Skill]:
        from ..records.skill import stored_skill

        rows = self._query(
            "SELECT body FROM skill_versions AS s WHERE version = "
            "(SELECT MAX(version) FROM skill_versions WHERE skill_id = s.skill_id) ORDER BY skill_id"
        )
        return [stored_skill(body) for (body,) in rows]

    def list_skill_versions(self, skill_id: str) -> list[Skill]:
        from ..records.skill import stored_skill

        rows = self._query("SELECT body FROM skill_versions WHERE skill_id = ? ORDER BY version", (skill_id,))
        return [stored_skill(body) for (body,) in rows]

    def skill_content(self, sha256: str) -> bytes | None:
        with self._lock:
            row = self._conn.execute("SELECT content FROM skill_contents WHERE sha256 = ?", (sha256,)).fetchone()
        return bytes(row[0]) if row is not None else None

    def delete_skill(self, skill_id: str) -> bool:
        with self._transaction() as conn:
            conn.execute("DELETE FROM skill_files WHERE skill_id = ?", (skill_id,))
            done = conn.execute("DELETE FROM skill_versions WHERE skill_id = ?", (skill_id,)).rowcount
            conn.execute(
                "DELETE FROM skill_contents WHERE NOT EXISTS "
                "(SELECT 1 FROM skill_files WHERE skill_files.sha256 = skill_contents.sha256)"
            )
            return done > 0

    # ------------------------------------------------------------------------------------------ sessions

    def put_session(self, record: SessionRecord, event: Event | None = None) -> None:
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO sessions (id, created_at, body) VALUES (?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET body = excluded.body",
                (record.id, record.created_at.isoformat(), record.model_dump_json()),
            )
            if event is not None:
                self._insert_event(conn, event)

    def get_session(self, session_id: str) -> SessionRecord | None:
        rows = self._query("SELECT body FROM sessions WHERE id = ?", (session_id,))
        return SessionRecord.model_validate_json(rows[0][0]) if rows else None

    def list_sessions(self) -> list[SessionRecord]:
        rows = self._query("SELECT body FROM sessions ORDER BY created_at, id")
        return [SessionRecord.model_validate_json(body) for (body,) in rows]

    # ------------------------------------------------------------------------------------------ events

    @staticmethod
    def _insert_event(conn: sqlite3.Connection, event: Event) -> None:
        conn.execute(
            "INSERT INTO events (id, session_id, type, body) VALUES (?, ?, ?, ?)",
            (event.id, event.session_id, event.type, event.model_dump_json()),
        )

    def append(self, event: Event) -> None:
        body = event.model_dump_json()
        with self._lock:
            # One autocommit statement is one transaction: durable once execute() returns.
            try:
                self._conn.execute(
                    "INSERT INTO events (id, session_id, type, body) VALUES (?, ?, ?, ?)",
                    (event.id, event.session_id, event.type, body),
                )
            except sqlite3.Error as exc:
                raise self._error(f"append event {event.id}", exc) from exc

    def append_many(self, events: Sequence[Event]) -> None:
        if not events:
            return
        if len(events) == 1:
            self.append(events[0])
            return
        rows = [(event.id, event.session_id, event.type, event.model_dump_json()) for event in events]
        # One transaction: one commit for the lot, which is most of what an append costs.
        with self._transaction() as conn:
            try:
                conn.executemany("INSERT INTO events (id, session_id, type, body) VALUES (?, ?, ?, ?)", rows)
            except sqlite3.Error as exc:
                raise self._error(f"append events {events[0].id}..{events[-1].id}", exc) from exc

    def events(
        self, session_id: str, *, types: Collection[str] | None = None, after_id: str | None = None
    ) -> Iterator[Event]:
        sql = "SELECT body FROM events WHERE session_id = ?"
        params: list[object] = [session_id]
        if types is not None:
            types = list(types)
            sql += f" AND type IN ({', '.join('?' * len(types))})"
            params.extend(types)
        if after_id is not None:
            sql += " AND seq > (SELECT seq FROM events WHERE id = ?)"
            params.append(after_id)
        rows = self._query(sql + " ORDER BY seq", tuple(params))
        return (event_adapter.validate_json(body) for (body,) in rows)

    def last_event(self, session_id: str, event_type: str | None) -> Event | None:
        if event_type is None:
            rows = self._query("SELECT body FROM events WHERE session_id = ? ORDER BY seq DESC LIMIT 1", (session_id,))
        else:
            rows = self._query(
                "SELECT body FROM events WHERE session_id = ? AND type = ? ORDER BY seq DESC LIMIT 1",
                (session_id, event_type),
            )
        return event_adapter.validate_json(rows[0][0]) if rows else None

    def count_events(self, session_id: str) -> int:
        return int(self._query("SELECT COUNT(*) FROM events WHERE session_id = ?", (session_id,))[0][0])

    def follow(self, session_id: str, *, after_id: str | None = None) -> AsyncIterator[Event]:
        start = 0
        if after_id is not None:
            rows = self._query("SELECT seq FROM events WHERE session_id = ? AND id = ?", (session_id, after_id))
            if not rows:
                raise InvalidInputError(f"no event {after_id!r} in session {session_id}; follow from an event of it")
            start = int(rows[0][0])
        return follow_log(lambda seq: self._rows_after(session_id, seq), PollWakeups(), start)

    def _rows_after(self, session_id: str, seq: int) -> list[tuple[int, Event]]:
        # seq is global in this file, not per session: still the session's order, which is all a follower keeps.
        rows = self._query(
            "SELECT seq, body FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (session_id, seq, FOLLOW_BATCH),
        )
        return [(int(s), event_adapter.validate_json(body)) for s, body in rows]

    # ------------------------------------------------------------------------------------------ driving

    def take_lease(self, session_id: str) -> FileLease | NoLease:
        return take_file_lease(self._path, session_id)

    # ------------------------------------------------------------------------------------------ copying

    def event_rows(self, session_id: str) -> list[EventRow]:
        rows = self._query("SELECT id, type, body FROM events WHERE session_id = ? ORDER BY seq", (session_id,))
        return [EventRow(*row) for row in rows]

    def put_event_rows(self, session_id: str, rows: Sequence[EventRow]) -> None:
        with self._transaction() as conn:
            conn.executemany(
                "INSERT INTO events (id, session_id, type, body) VALUES (?, ?, ?, ?)",
                [(row.id, session_id, row.type, row.body) for row in rows],
            )

    # ------------------------------------------------------------------------------------------ memory

    def put_memory_store(self, store: MemoryStore) -> None:
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO memory_stores (id, name, description, created_at) VALUES (?, ?, ?, ?)",
                (store.id, store.name, store.description, store.created_at.isoformat()),
            )

    def get_memory_store(self, store_id: str) -> MemoryStore | None:
        rows = self._query("SELECT id, name, description, created_at FROM memory_stores WHERE id = ?", (store_id,))
        return _memory_store(rows[0]) if rows else None

    def list_memory_stores(self) -> list[MemoryStore]:
        rows = self._query("SELECT id, name, description, created_at FROM memory_stores ORDER BY created_at, id")
        return [_memory_store(row) for row in rows]

    def put_note(self, store_id: str, note: MemoryNote) -> None:
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO memory_notes (store_id, path, content, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (store_id, path) "
                "DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at",
                (store_id, note.path, note.content, note.updated_at.isoformat()),
            )

    def get_note(self, store_id: str, path: str) -> MemoryNote | None:
        rows = self._query(
            "SELECT path, content, updated_at FROM memory_notes WHERE store_id = ? AND path = ?", (store_id, path)
        )
        return _note(rows[0]) if rows else None

    def list_notes(self, store_id: str, prefix: str = "") -> list[MemoryNote]:
        rows = self._query(
            "SELECT path, content, updated_at FROM memory_notes WHERE store_id = ? AND substr(path, 1, ?) = ? "
            "ORDER BY path",
            (store_id, len(prefix), prefix),
        )
        return [_note(row) for row in rows]

    def delete_note(self, store_id: str, path: str) -> bool:
        with self._transaction() as conn:
            done = conn.execute("DELETE FROM memory_notes WHERE store_id = ? AND path = ?", (store_id, path))
            return done.rowcount > 0

    def import_memory(self, legacy: Path) -> int:
        """Copy the memory stores of a ``<db>.memory.db`` written before schema 2 into this database, then
        rename that file to ``*.imported`` (it is kept). Returns how many stores were copied."""
        try:
            source = sqlite3.connect(f"{legacy.resolve().as_uri()}?mode=ro", uri=True)
            try:
                stores = source.execute("SELECT id, name, description, created_at FROM memory_stores").fetchall()
                notes = source.execute("SELECT store_id, path, content, updated_at FROM memory_notes").fetchall()
            finally:
                source.close()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the memory database {legacy}: {exc}; it was left as it is") from exc
        with self._transaction() as conn:
            conn.executemany("INSERT OR IGNORE INTO memory_stores VALUES (?, ?, ?, ?)", stores)
            conn.executemany("INSERT OR IGNORE INTO memory_notes VALUES (?, ?, ?, ?)", notes)
        legacy.rename(legacy.with_name(legacy.name + ".imported"))
        return len(stores)

    # ------------------------------------------------------------------------------------------ settings

    def get_value(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM kv WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def set_value(self, key: str, value: str | None) -> None:
        with self._transaction() as conn:
            if value is None:
                conn.execute("DELETE FROM kv WHERE key = ?", (key,))
            else:
                conn.execute(
                    "INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )

    def list_values(self) -> dict[str, str]:
        return {str(row[0]): str(row[1]) for row in self._query("SELECT key, value FROM kv ORDER BY key")}


def _memory_store(row: tuple[str, ...]) -> MemoryStore:
    store_id, name, description, created = row
    return MemoryStore(store_id, name, description, datetime.fromisoformat(created))


def _note(row: tuple[str, ...]) -> MemoryNote:
    path, content, updated = row
    return MemoryNote(path, content, datetime.fromisoformat(updated))
