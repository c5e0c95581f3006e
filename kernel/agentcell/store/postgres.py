"""The PostgreSQL store (psycopg 3 and psycopg-pool), for a team sharing one database.

The same Store as SQLite's, on a server: the engine, the kernel, the widgets and ACP see no difference.
What a shared database adds is in the schema (:mod:`.pg_schema`), the one-driver lease (:mod:`.pg_lease`),
LISTEN/NOTIFY for followers (:mod:`.pg_follow`), uploads in the database (:mod:`.pg_files`) and skills
(:mod:`.pg_skills`).

Each append is one autocommitted statement: durable once it returns (with the server's default
``synchronous_commit``). It assigns the session's next ``seq`` and the next global ``position`` and checks,
in the same statement, that no other kernel holds a live lease on the session (a change to the session's
record checks the same); a refused or interleaving write raises
:class:`~agentcell.errors.SessionDrivenElsewhereError` and writes nothing. When the server
is unreachable (a restart, a failover) an operation is retried for up to ``reconnect_seconds``; an append
whose acknowledgement was lost is recognised by its event id on the retry, so it is stored once.

The URL's password is used to connect and nowhere else: ``location``, errors and logs show the URL without
it (:mod:`.pg_url`). Prefer a URL without one and the password in ``PGPASSWORD`` or ``~/.pgpass``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from psycopg_pool import ConnectionPool

from ..errors import InvalidInputError, StoreError, StoreVersionError
from ..events import event_adapter
from ..records.memory import MemoryNote, MemoryStore
from ..records.session import SessionRecord
from .base import EventRow
from .follow import FOLLOW_BATCH, follow_log
from .pg_append import APPEND_GUARDED, APPEND_LEASED
from .pg_files import MAX_FILE_BYTES, PgFiles
from .pg_follow import NotifyWakeups
from .pg_lease import LEASE_SECONDS, LIVE_HOLDER, OTHER_LIVE_HOLDER, PgLease, PgLeases, driven_elsewhere
from .pg_schema import POSITION_LOCK, SCHEMA_DDL, SCHEMA_VERSION
from .pg_skills import PgSkills
from .pg_url import DEFAULT_CONNECT_TIMEOUT, conninfo, public_url, scrub, scrubber, transient
from .pg_versions import AGENT_VERSIONS, insert_version

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from ..events import Event
    from ..records.agent import Agent

__all__ = ["SCHEMA_VERSION", "PostgresStore"]

T = TypeVar("T")
Conn = psycopg.Connection[tuple[Any, ...]]

RECONNECT_SECONDS = 30.0
"""How long an operation keeps trying while the server is unreachable before it fails."""

_DDL_LOCK = 0x6167656E7463656C  # "agentcel": serializes schema changes between kernels starting together

_DELETE_VALUE = "DELETE FROM agentcell.kv WHERE key = %s"


class _IdTakenError(Exception):
    """An insert found its event id stored already: a retried append that had committed, or a real clash."""


class PostgresStore:
    """A Store in the ``agentcell`` schema of a PostgreSQL database. Thread-safe; any number of kernels
    may share the database."""

    def __init__(
        self,
        url: str,
        *,
        lease_seconds: float = LEASE_SECONDS,
        reconnect_seconds: float = RECONNECT_SECONDS,
        max_file_bytes: int = MAX_FILE_BYTES,
        pool_size: int = 4,
    ) -> None:
        """``lease_seconds``: how long a session's lease lasts unless renewed (see :mod:`.pg_lease`)."""
        self._secrets = scrubber(url)
        self._public = public_url(url)
        self._reconnect_seconds = reconnect_seconds
        try:
            self._conninfo = conninfo(url)
        except psycopg.Error as exc:
            raise self._error("read the database URL", exc) from None
        try:
            with psycopg.connect(self._conninfo, autocommit=True) as conn:
                self._prepare_schema(conn)
        except psycopg.Error as exc:
            raise self._error("open the database", exc) from None
        self._pool: ConnectionPool[Conn] = ConnectionPool(
            self._conninfo,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True},
            name="agentcell",
            open=False,
        )
        try:
            self._pool.open(wait=True, timeout=DEFAULT_CONNECT_TIMEOUT)
        except psycopg.Error as exc:
            self._pool.close()
            raise self._error("open the database", exc) from None
        self._append_lock = threading.Lock()
        self._writer: Conn | None = None
        self._next_seq: dict[str, int] = {}
        """While this kernel holds a session's lease nobody else writes it: its next seq, kept here."""
        self._leases = PgLeases(self._run, lease_seconds, on_release=self._forget_seq)
        self._files = PgFiles(self._run, max_file_bytes)
        skills = PgSkills(self._run)
        self.put_skill_version, self.get_skill_version = skills.put_skill_version, skills.get_skill_version
        self.list_skills, self.list_skill_versions = skills.list_skills, skills.list_skill_versions
        self.skill_content, self.delete_skill = skills.skill_content, skills.delete_skill

    def __repr__(self) -> str:
        return f"PostgresStore({self._public!r})"

    # ------------------------------------------------------------------------------------------ plumbing

    @property
    def location(self) -> str:
        return self._public

    @property
    def files(self) -> PgFiles:
        return self._files

    def _error(self, doing: str, exc: Exception) -> StoreError:
        reason = scrub(str(exc).strip() or type(exc).__name__, self._secrets)
        hint = ""
        if isinstance(exc, psycopg.OperationalError) and exc.sqlstate is None:
            hint = "; is the server running, and does the URL (AGENTCELL_DB) name the right host, database and user?"
        return StoreError(f"cannot {doing} in {self._public}: {reason}{hint}")

    def _prepare_schema(self, conn: Conn) -> None:
        found = _schema_version(conn)
        if found is not None and found > SCHEMA_VERSION:
            raise StoreVersionError(self._public, found, SCHEMA_VERSION)
        if found == SCHEMA_VERSION:
            return  # no DDL: a role that may only read and write rows can use the database
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
            found = _schema_version(conn)  # another kernel may have done it while this one waited
            if found is not None and found > SCHEMA_VERSION:
                raise StoreVersionError(self._public, found, SCHEMA_VERSION)
            if found != SCHEMA_VERSION:
                conn.execute(SCHEMA_DDL)
                conn.execute(
                    "INSERT INTO agentcell.schema_version (version) VALUES (%s) "
                    "ON CONFLICT (only_row) DO UPDATE SET version = excluded.version",
                    (SCHEMA_VERSION,),
                )

    def _run(
        self,
        doing: str,
        work: Callable[[Conn], T],
        connection: Callable[[float], AbstractContextManager[Conn]] | None = None,
    ) -> T:
        """Run ``work`` on a pooled connection (or ``connection``), trying again while the server is
        unreachable."""
        deadline = time.monotonic() + self._reconnect_seconds
        delay = 0.05
        connect = connection or (lambda timeout: self._pool.connection(timeout=timeout))
        while True:
            try:
                with connect(max(0.1, deadline - time.monotonic())) as conn:
                    return work(conn)
            except psycopg.Error as exc:
                if not transient(exc) or time.monotonic() + delay > deadline:
                    raise self._error(doing, exc) from None
            time.sleep(delay)
            delay = min(delay * 2, 1.0)

    def _query(self, doing: str, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        return self._run(doing, lambda conn: conn.execute(sql, params).fetchall())

    @contextmanager
    def _writer_connection(self, timeout: float) -> Iterator[Conn]:
        """The connection appends use, one at a time (under the append lock): a pool checkout per event
        would cost a tenth of the append; replaced when it breaks."""
        if self._writer is None or self._writer.closed:
            self._writer = psycopg.connect(self._conninfo, autocommit=True, connect_timeout=max(1, int(timeout)))
        try:
            yield self._writer
        except psycopg.Error:
            if self._writer.broken or self._writer.closed:
                self._writer.close()
                self._writer = None
            raise

    def close(self) -> None:
        self._leases.close()
        with self._append_lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None
        self._pool.close()

    # ------------------------------------------------------------------------------------------ agents

    def put_agent_version(self, agent: Agent) -> None:
        body = agent.model_dump_json()

        def work(conn: Conn) -> None:
            insert_version(conn, AGENT_VERSIONS, agent.id, agent.version, body)

        self._run(f"store agent {agent.id} version {agent.version}", work)

    def get_agent_version(self, agent_id: str, version: int | None) -> Agent | None:
        from ..records.agent import Agent

        if version is None:
            rows = self._query(
                f"read agent {agent_id}",
                "SELECT body FROM agentcell.agent_versions WHERE agent_id = %s ORDER BY version DESC LIMIT 1",
                (agent_id,),
            )
        else:
            rows = self._query(
                f"read agent {agent_id}",
                "SELECT body FROM agentcell.agent_versions WHERE agent_id = %s AND version = %s",
                (agent_id, version),
            )
        return Agent.model_validate_json(rows[0][0]) if rows else None

    def list_agents(self) -> list[Agent]:
        from ..records.agent import Agent

        rows = self._query(
            "list agents",
            "SELECT DISTINCT ON (agent_id) body FROM agentcell.agent_versions ORDER BY agent_id, version DESC",
        )
        return [Agent.model_validate_json(body) for (body,) in rows]

    def list_agent_versions(self, agent_id: str) -> list[Agent]:
        from ..records.agent import Agent

        rows = self._query(
            f"list the versions of agent {agent_id}",
            "SELECT body FROM agentcell.agent_versions WHERE agent_id = %s ORDER BY version",
            (agent_id,),
        )
        return [Agent.model_validate_json(body) for (body,) in rows]

    # ------------------------------------------------------------------------------------------ sessions

    def put_session(self, record: SessionRecord, event: Event | None = None) -> None:
        body = record.model_dump_json()
        row = EventRow(event.id, event.type, event.model_dump_json()) if event is not None else None

        def work(conn: Conn) -> None:
            with conn.transaction():
                # A record changed under the kernel driving the session would be overwritten by its next
                # update: settings change where the session is driven, like its events.
                holder = conn.execute(OTHER_LIVE_HOLDER, (record.id, self._leases.holder)).fetchone()
                if holder is not None:
                    raise driven_elsewhere(record.id, (str(holder[0]), int(holder[1]), holder[2]))
                conn.execute(
                    "INSERT INTO agentcell.sessions (id, created_at, body) VALUES (%s, %s, %s) "
                    "ON CONFLICT (id) DO UPDATE SET body = excluded.body",
                    (record.id, record.created_at, body),
                )
                if row is not None:
                    self._insert_event(conn, record.id, row)

        if row is None:
            self._run(f"store session {record.id}", work)
        else:
            self._write_event(f"update session {record.id}", record.id, row, work)

    def get_session(self, session_id: str) -> SessionRecord | None:
        rows = self._query(
            f"read session {session_id}", "SELECT body FROM agentcell.sessions WHERE id = %s", (session_id,)
        )
        return SessionRecord.model_validate_json(rows[0][0]) if rows else None

    def list_sessions(self) -> list[SessionRecord]:
        rows = self._query("list sessions", "SELECT body FROM agentcell.sessions ORDER BY created_at, id")
        return [SessionRecord.model_validate_json(body) for (body,) in rows]

    # ------------------------------------------------------------------------------------------ events

    def _insert_event(self, conn: Conn, session_id: str, row: EventRow) -> None:
        seq = self._next_seq.get(session_id)
        lease = self._leases.held(session_id) if seq is not None else None
        try:
            if lease is not None and lease.live():
                conn.execute(APPEND_LEASED, (session_id, seq, *row))
                inserted: tuple[Any, ...] | None = (seq,)
            else:
                params = {"session": session_id, "holder": self._leases.holder, **row._asdict()}
                inserted = conn.execute(APPEND_GUARDED, params).fetchone()
        except psycopg.errors.UniqueViolation as exc:
            self._next_seq.pop(session_id, None)
            if exc.diag.constraint_name == "events_id_unique":
                raise _IdTakenError(row.id) from None
            # Another writer took this seq: it wrote between our read of the last one and our insert.
            raise driven_elsewhere(session_id, None) from None
        if inserted is None:  # the guard found another kernel's live lease
            self._next_seq.pop(session_id, None)
            holder = conn.execute(LIVE_HOLDER, (session_id,)).fetchone()
            raise driven_elsewhere(session_id, (str(holder[0]), int(holder[1]), holder[2]) if holder else None)
        if session_id in self._next_seq:  # still held (a lost lease forgets it)
            self._next_seq[session_id] = int(inserted[0]) + 1

    def _append_leased(self, session_id: str, row: EventRow) -> bool:
        """A turn's append, the hot path: this kernel certainly holds the lease and knows the next seq, on
        a healthy connection. False: anything else, for the general path (which retries and explains)."""
        seq, writer, lease = self._next_seq.get(session_id), self._writer, self._leases.held(session_id)
        if seq is None or writer is None or writer.closed or lease is None or not lease.live():
            return False
        try:
            writer.execute(APPEND_LEASED, (session_id, seq, *row))
        except psycopg.Error:
            return False
        self._next_seq[session_id] = seq + 1
        return True

    def _write_event(self, doing: str, session_id: str, row: EventRow, work: Callable[[Conn], None]) -> None:
        with self._append_lock:  # this process's appends take seq in turn; other kernels are fenced out
            try:
                self._run(doing, work, self._writer_connection)
            except _IdTakenError:
                stored = self._query(doing, "SELECT body FROM agentcell.events WHERE id = %s", (row.id,))
                if not stored or stored[0][0] != row.body:
                    raise StoreError(f"cannot {doing}: an event with id {row.id} is already stored") from None

    def append(self, event: Event) -> None:
        row = EventRow(event.id, event.type, event.model_dump_json())
        session_id = event.session_id
        with self._append_lock:
            if self._append_leased(session_id, row):
                return
        self._write_event(f"append event {event.id}", session_id, row, lambda c: self._insert_event(c, session_id, row))

    def append_many(self, events: Sequence[Event]) -> None:
        # One by one: each append takes its position under the position lock and its seq from the lease (see
        # pg_append.py); a batch in one transaction would need both for several rows at once.
        for event in events:
            self.append(event)

    def events(
        self, session_id: str, *, types: Collection[str] | None = None, after_id: str | None = None
    ) -> Iterator[Event]:
        sql = "SELECT body FROM agentcell.events WHERE session_id = %s"
        params: list[object] = [session_id]
        if types is not None:
            sql += " AND type = ANY(%s)"
            params.append(list(types))
        if after_id is not None:
            sql += " AND seq > (SELECT seq FROM agentcell.events WHERE id = %s)"
            params.append(after_id)
        rows = self._query(f"read the events of session {session_id}", sql + " ORDER BY seq", params)
        return (event_adapter.validate_json(body) for (body,) in rows)

    def last_event(self, session_id: str, event_type: str | None) -> Event | None:
        sql = "SELECT body FROM agentcell.events WHERE session_id = %s"
        params: list[object] = [session_id]
        if event_type is not None:
            sql += " AND type = %s"
            params.append(event_type)
        rows = self._query(f"read the events of session {session_id}", sql + " ORDER BY seq DESC LIMIT 1", params)
        return event_adapter.validate_json(rows[0][0]) if rows else None

    def count_events(self, session_id: str) -> int:
        rows = self._query(
            f"count the events of session {session_id}",
            "SELECT count(*) FROM agentcell.events WHERE session_id = %s",
            (session_id,),
        )
        return int(rows[0][0])

    def follow(self, session_id: str, *, after_id: str | None = None) -> AsyncIterator[Event]:
        start = 0
        if after_id is not None:
            rows = self._query(
                f"find event {after_id}",
                "SELECT seq FROM agentcell.events WHERE session_id = %s AND id = %s",
                (session_id, after_id),
            )
            if not rows:
                raise InvalidInputError(f"no event {after_id!r} in session {session_id}; follow from an event of it")
            start = int(rows[0][0])
        wakeups = NotifyWakeups(
            self._conninfo, session_id, error=self._error, reconnect_seconds=self._reconnect_seconds
        )
        return follow_log(lambda seq: self._rows_after(session_id, seq), wakeups, start)

    def _rows_after(self, session_id: str, seq: int) -> list[tuple[int, Event]]:
        rows = self._query(
            f"read the events of session {session_id}",
            "SELECT seq, body FROM agentcell.events WHERE session_id = %s AND seq > %s ORDER BY seq LIMIT %s",
            (session_id, seq, FOLLOW_BATCH),
        )
        return [(int(s), event_adapter.validate_json(body)) for s, body in rows]

    # ------------------------------------------------------------------------------------------ driving

    def _forget_seq(self, session_id: str) -> None:
        with self._append_lock:
            self._next_seq.pop(session_id, None)

    def take_lease(self, session_id: str) -> PgLease:
        lease = self._leases.take(session_id)
        rows = self._query(
            f"read the events of session {session_id}",
            "SELECT COALESCE(max(seq), 0) + 1 FROM agentcell.events WHERE session_id = %s",
            (session_id,),
        )
        with self._append_lock:
            self._next_seq[session_id] = int(rows[0][0])
        return lease

    # ------------------------------------------------------------------------------------------ copying

    def event_rows(self, session_id: str) -> list[EventRow]:
        rows = self._query(
            f"read the events of session {session_id}",
            "SELECT id, type, body FROM agentcell.events WHERE session_id = %s ORDER BY seq",
            (session_id,),
        )
        return [EventRow(*row) for row in rows]

    def put_event_rows(self, session_id: str, rows: Sequence[EventRow]) -> None:
        if not rows:
            return

        def work(conn: Conn) -> None:
            with conn.transaction():
                # Positions are drawn under the position lock, held until commit: they stay in commit order.
                conn.execute(f"SELECT pg_advisory_xact_lock({POSITION_LOCK})")
                drawn = conn.execute("SELECT nextval('agentcell.event_position')").fetchone()
                first_position = int(drawn[0])  # type: ignore[index]
                conn.execute("SELECT setval('agentcell.event_position', %s)", (first_position + len(rows) - 1,))
                top = conn.execute(
                    "SELECT COALESCE(max(seq), 0) FROM agentcell.events WHERE session_id = %s", (session_id,)
                ).fetchone()
                first_seq = int(top[0]) + 1  # type: ignore[index]
                with conn.cursor().copy(
                    "COPY agentcell.events (session_id, seq, position, id, type, body) FROM STDIN"
                ) as copy:
                    for i, row in enumerate(rows):
                        copy.write_row((session_id, first_seq + i, first_position + i, row.id, row.type, row.body))

        with self._append_lock:
            self._run(f"copy the events of session {session_id}", work)

    # ------------------------------------------------------------------------------------------ memory

    def put_memory_store(self, store: MemoryStore) -> None:
        def work(conn: Conn) -> None:
            try:
                conn.execute(
                    "INSERT INTO agentcell.memory_stores (id, name, description, created_at) VALUES (%s, %s, %s, %s)",
                    (store.id, store.name, store.description, store.created_at),
                )
            except psycopg.errors.UniqueViolation:
                if self._memory_store(conn, store.id) != store:
                    raise StoreError(f"a memory store with id {store.id} already exists") from None

        self._run(f"store the memory store {store.id}", work)

    @staticmethod
    def _memory_store(conn: Conn, store_id: str) -> MemoryStore | None:
        row = conn.execute(
            "SELECT id, name, description, created_at FROM agentcell.memory_stores WHERE id = %s", (store_id,)
        ).fetchone()
        return _memory_store(row) if row is not None else None

    def get_memory_store(self, store_id: str) -> MemoryStore | None:
        return self._run(f"read the memory store {store_id}", lambda conn: self._memory_store(conn, store_id))

    def list_memory_stores(self) -> list[MemoryStore]:
        rows = self._query(
            "list the memory stores",
            "SELECT id, name, description, created_at FROM agentcell.memory_stores ORDER BY created_at, id",
        )
        return [_memory_store(row) for row in rows]

    def put_note(self, store_id: str, note: MemoryNote) -> None:
        self._run(
            f"write the note {note.path}",
            lambda conn: conn.execute(
                "INSERT INTO agentcell.memory_notes (store_id, path, content, updated_at) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (store_id, path) "
                "DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at",
                (store_id, note.path, note.content, note.updated_at),
            ),
        )

    def get_note(self, store_id: str, path: str) -> MemoryNote | None:
        rows = self._query(
            f"read the note {path}",
            "SELECT path, content, updated_at FROM agentcell.memory_notes WHERE store_id = %s AND path = %s",
            (store_id, path),
        )
        return _note(rows[0]) if rows else None

    def list_notes(self, store_id: str, prefix: str = "") -> list[MemoryNote]:
        rows = self._query(
            "list the notes",
            "SELECT path, content, updated_at FROM agentcell.memory_notes "
            "WHERE store_id = %s AND left(path, %s) = %s ORDER BY path",
            (store_id, len(prefix), prefix),
        )
        return [_note(row) for row in rows]

    def delete_note(self, store_id: str, path: str) -> bool:
        done = self._run(
            f"delete the note {path}",
            lambda conn: (
                conn.execute(
                    "DELETE FROM agentcell.memory_notes WHERE store_id = %s AND path = %s", (store_id, path)
                ).rowcount
            ),
        )
        return bool(done)

    # ------------------------------------------------------------------------------------------ settings

    def get_value(self, key: str) -> str | None:
        rows = self._query(f"read the setting {key}", "SELECT value FROM agentcell.kv WHERE key = %s", (key,))
        return str(rows[0][0]) if rows else None

    def set_value(self, key: str, value: str | None) -> None:
        if value is None:
            self._run(f"remove the setting {key}", lambda c: c.execute(_DELETE_VALUE, (key,)))
            return
        self._run(
            f"write the setting {key}",
            lambda c: c.execute(
                "INSERT INTO agentcell.kv (key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            ),
        )

    def list_values(self) -> dict[str, str]:
        rows = self._query("list the settings", "SELECT key, value FROM agentcell.kv ORDER BY key")
        return {str(key): str(value) for key, value in rows}


def _schema_version(conn: Conn) -> int | None:
    """The stored version; None when the database has no agentcell schema yet (0: the table but no row)."""
    exists = conn.execute("SELECT to_regclass('agentcell.schema_version')").fetchone()
    if exists is None or exists[0] is None:
        return None
    row = conn.execute("SELECT version FROM agentcell.schema_version").fetchone()
    return int(row[0]) if row is not None else 0


def _memory_store(row: tuple[Any, ...]) -> MemoryStore:
    store_id, name, description, created = row
    return MemoryStore(store_id, name, description, _utc(created))


def _note(row: tuple[Any, ...]) -> MemoryNote:
    path, content, updated = row
    return MemoryNote(path, content, _utc(updated))


def _utc(value: datetime) -> datetime:
    return value.astimezone(UTC)
