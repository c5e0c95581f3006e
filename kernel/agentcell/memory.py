"""Memory stores: notes that outlive a session, kept in SQLite next to the database (``<db>.memory.db``).

``engine.memory_stores.create(name=...)`` makes a store (``memstore_...``); a session attaches it as a
resource, ``read_write`` (the default) or ``read_only``, with optional guidance that the system prompt's
memory section shows the agent. The agent reads and writes notes (a path and a text each) through the
``memory_*`` tools, registered in its agent scope of the engine's tool registry; the tools find the stores
of the calling session from the call's session id, so sessions of one agent can attach different stores.
A write to a store attached ``read_only`` (or under the ``read-only`` permission preset) is refused.
"""

from __future__ import annotations

import builtins
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ConfigurationError, InvalidInputError, NotFoundError, StoreError
from .events import utc_now
from .ids import new_id
from .resources import MemoryStoreResource, Resource
from .tools.base import ToolResult
from .tools.definition import ToolContext, ToolDefinition
from .tools.functions import function_tool

if TYPE_CHECKING:
    from .agents import Agent
    from .providers.base import ToolSchema
    from .sessions import Session
    from .tools.registry import Disposer

__all__ = ["MEMORY_TOOL_NAMES", "MemoryNote", "MemoryStore", "MemoryStoresAPI", "visible_schemas"]

MAX_NOTE_CHARS = 100_000
MAX_PATH_CHARS = 256
MEMORY_TOOL_NAMES = ("memory_list", "memory_read", "memory_search", "memory_write", "memory_delete")

_SCHEMA = """
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
"""


@dataclass(frozen=True, slots=True)
class MemoryStore:
    id: str
    name: str
    description: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class MemoryNote:
    path: str
    content: str
    updated_at: datetime


def _note_path(path: str) -> str:
    clean = path.strip().lstrip("/")
    if not clean or len(clean) > MAX_PATH_CHARS or "\0" in clean or ".." in clean.split("/"):
        raise InvalidInputError(
            f"a note path is 1 to {MAX_PATH_CHARS} characters without '..' segments, such as 'projects/x.md'; "
            f"not {path[:80]!r}"
        )
    return clean


class MemoryStoresAPI:
    """``engine.memory_stores``: the stores, their notes, and which sessions attached which."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        self._attached: dict[str, list[MemoryStoreResource]] = {}
        """Per session id: the memory resources it attached."""
        self._registered: dict[str, Disposer] = {}
        """Per agent scope: the disposer of the memory tools registered there."""
        self._definitions: tuple[ToolDefinition, ...] = tuple(self._tool_definitions())

    # ------------------------------------------------------------------------------------------ storage

    def _db(self) -> sqlite3.Connection:
        # Opened on first use: an engine that never uses memory creates no file.
        with self._lock:
            if self._conn is None:
                try:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
                    conn.execute("PRAGMA journal_mode=WAL")
                    conn.execute("PRAGMA foreign_keys=ON")
                    conn.executescript(_SCHEMA)
                except (OSError, sqlite3.Error) as exc:
                    raise StoreError(f"cannot open the memory database {self.path}: {exc}") from exc
                self._conn = conn
            return self._conn

    def _rows(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[str, ...]]:
        with self._lock:
            return self._db().execute(sql, params).fetchall()

    def create(self, *, name: str, description: str | None = None) -> MemoryStore:
        if not isinstance(name, str) or not 0 < len(name.strip()) <= 256:
            raise InvalidInputError("a memory store's name is 1 to 256 characters")
        if description is not None and len(description) > 2048:
            raise InvalidInputError("a memory store's description is at most 2,048 characters")
        store = MemoryStore(new_id("memstore"), name.strip(), description, utc_now())
        self._rows(
            "INSERT INTO memory_stores (id, name, description, created_at) VALUES (?, ?, ?, ?)",
            (store.id, store.name, store.description, store.created_at.isoformat()),
        )
        return store

    def get(self, store_id: str) -> MemoryStore:
        rows = self._rows("SELECT id, name, description, created_at FROM memory_stores WHERE id = ?", (store_id,))
        if not rows:
            raise NotFoundError(f"no memory store {store_id!r}; create one with engine.memory_stores.create(name=...)")
        sid, name, description, created = rows[0]
        return MemoryStore(sid, name, description, datetime.fromisoformat(created))

    def list(self) -> list[MemoryStore]:
        rows = self._rows("SELECT id FROM memory_stores ORDER BY id")
        return [self.get(sid) for (sid,) in rows]

    def write(self, store_id: str, path: str, content: str) -> MemoryNote:
        """Create or replace the note at ``path``."""
        self.get(store_id)
        clean = _note_path(path)
        if len(content) > MAX_NOTE_CHARS:
            raise InvalidInputError(
                f"a note holds at most {MAX_NOTE_CHARS:,} characters; this one has {len(content):,}"
            )
        now = utc_now()
        self._rows(
            "INSERT INTO memory_notes (store_id, path, content, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (store_id, path) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at",
            (store_id, clean, content, now.isoformat()),
        )
        return MemoryNote(clean, content, now)

    def read(self, store_id: str, path: str) -> MemoryNote:
        self.get(store_id)
        clean = _note_path(path)
        rows = self._rows(
            "SELECT content, updated_at FROM memory_notes WHERE store_id = ? AND path = ?", (store_id, clean)
        )
        if not rows:
            raise NotFoundError(f"the memory store {store_id} has no note {clean!r}")
        return MemoryNote(clean, rows[0][0], datetime.fromisoformat(rows[0][1]))

    def notes(self, store_id: str, prefix: str = "") -> builtins.list[MemoryNote]:
        """The notes whose path starts with ``prefix``, by path."""
        self.get(store_id)
        rows = self._rows(
            "SELECT path, content, updated_at FROM memory_notes WHERE store_id = ? AND substr(path, 1, ?) = ? "
            "ORDER BY path",
            (store_id, len(prefix.lstrip("/")), prefix.lstrip("/")),
        )
        return [MemoryNote(p, c, datetime.fromisoformat(u)) for p, c, u in rows]

    def delete(self, store_id: str, path: str) -> None:
        self.read(store_id, path)
        self._rows("DELETE FROM memory_notes WHERE store_id = ? AND path = ?", (store_id, _note_path(path)))

    def close(self) -> None:
        with self._lock:
            for dispose in self._registered.values():
                dispose()
            self._registered.clear()
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # ------------------------------------------------------------------------------------------ sessions

    def check(self, resources: Sequence[Resource], host: object) -> None:
        """Refuse, before the session is stored, resources naming a memory store that does not exist, or
        memory for an engine whose tools cannot take the memory tools."""
        from .tools.registry import ToolRegistry

        seen: set[str] = set()
        for resource in resources:
            if isinstance(resource, MemoryStoreResource):
                if not isinstance(host, ToolRegistry):
                    raise ConfigurationError("memory stores need the engine's tools to be a ToolRegistry")
                try:
                    self.get(resource.memory_store_id)
                except NotFoundError as exc:
                    raise InvalidInputError(str(exc)) from None
                if resource.memory_store_id in seen:
                    raise InvalidInputError(f"the memory store {resource.memory_store_id} is attached twice")
                seen.add(resource.memory_store_id)

    def attach(self, session: Session) -> None:
        """Give the session's agent the memory tools and remember which stores the session attached."""
        attached = [r for r in session.record.resources if isinstance(r, MemoryStoreResource)]
        if not attached:
            return
        from .tools.registry import ToolRegistry

        host = session.tool_host
        if not isinstance(host, ToolRegistry):
            raise ConfigurationError("memory stores need the engine's tools to be a ToolRegistry")
        with self._lock:
            self._attached[session.id] = attached
            scope = session.agent.id
            if scope not in self._registered:
                self._registered[scope] = host.register_all(self._definitions, scope=scope)

    def has_memory(self, session_id: str) -> bool:
        return bool(self._attached.get(session_id))

    def owns(self, definition: object) -> bool:
        return any(definition is d for d in self._definitions)

    def section(self, session_id: str) -> str | None:
        """The system prompt's memory section for the session, or None when it attached no store."""
        attached = self._attached.get(session_id)
        if not attached:
            return None
        lines = [
            "# Memory",
            "You have memory stores: notes that last beyond this conversation. Read them with memory_list, "
            "memory_read and memory_search before you start, and keep them current with memory_write and "
            "memory_delete. Name a store by its id when there is more than one.",
        ]
        for resource in attached:
            store = self.get(resource.memory_store_id)
            access = "read only" if resource.access == "read_only" else "read and write"
            about = f" — {store.description}" if store.description else ""
            lines.append(f"- {store.name} (id {store.id}, {access}){about}")
            if resource.instructions:
                lines.append(f"  Guidance: {resource.instructions}")
        return "\n".join(lines)

    # ------------------------------------------------------------------------------------------ tools

    def _resolve(self, ctx: ToolContext, store: str | None, *, write: bool) -> MemoryStoreResource | ToolResult:
        attached = self._attached.get(ctx.call.session_id, [])
        if not attached:
            return ToolResult.error("no memory store is attached to this session")
        if store is None:
            if len(attached) > 1:
                ids = ", ".join(r.memory_store_id for r in attached)
                return ToolResult.error(f"several memory stores are attached; name one with store: {ids}")
            chosen = attached[0]
        else:
            found = next((r for r in attached if r.memory_store_id == store), None) or next(
                (r for r in attached if self.get(r.memory_store_id).name == store), None
            )
            if found is None:
                ids = ", ".join(r.memory_store_id for r in attached)
                return ToolResult.error(f"no memory store {store!r} is attached; attached: {ids}")
            chosen = found
        if write and chosen.access == "read_only":
            return ToolResult.error(
                f"the memory store {chosen.memory_store_id} is attached read_only to this session; "
                "its notes cannot be written or deleted",
                "READ_ONLY",
            )
        if write and ctx.call.preset == "read-only":
            return ToolResult.error("the read-only permission preset does not allow writing memory", "DENIED")
        return chosen

    def _tool_definitions(self) -> builtins.list[ToolDefinition]:
        def memory_list(prefix: str = "", store: str | None = None, *, ctx: ToolContext) -> ToolResult | str:
            """List the notes of a memory store (path, size, last change).

            Args:
                prefix: Only notes whose path starts with this.
                store: The memory store's id or name; needed only when several are attached.
            """
            chosen = self._resolve(ctx, store, write=False)
            if isinstance(chosen, ToolResult):
                return chosen
            notes = self.notes(chosen.memory_store_id, prefix)
            if not notes:
                return f"no notes{f' under {prefix!r}' if prefix else ''} in {chosen.memory_store_id}"
            return "\n".join(f"{n.path}\t{len(n.content):,} chars\t{n.updated_at:%Y-%m-%d %H:%M}" for n in notes)

        def memory_read(path: str, store: str | None = None, *, ctx: ToolContext) -> ToolResult | str:
            """Read one note of a memory store.

            Args:
                path: The note's path, such as 'preferences/units.md'.
                store: The memory store's id or name; needed only when several are attached.
            """
            chosen = self._resolve(ctx, store, write=False)
            if isinstance(chosen, ToolResult):
                return chosen
            try:
                return self.read(chosen.memory_store_id, path).content
            except NotFoundError as exc:
                return ToolResult.error(f"{exc}; memory_list shows what there is")

        def memory_search(query: str, store: str | None = None, *, ctx: ToolContext) -> ToolResult | str:
            """Find the notes whose path or text contains a phrase (case-insensitive).

            Args:
                query: The phrase to look for.
                store: The memory store's id or name; needed only when several are attached.
            """
            chosen = self._resolve(ctx, store, write=False)
            if isinstance(chosen, ToolResult):
                return chosen
            needle = query.casefold()
            notes = self.notes(chosen.memory_store_id)
            hits = [n for n in notes if needle in n.path.casefold() or needle in n.content.casefold()]
            if not hits:
                return f"no note mentions {query!r}"
            return "\n\n".join(f"## {n.path}\n{n.content[:500]}" for n in hits[:20])

        def memory_write(path: str, content: str, store: str | None = None, *, ctx: ToolContext) -> ToolResult | str:
            """Create or replace a note in a memory store.

            Args:
                path: The note's path, such as 'preferences/units.md'.
                content: The note's whole new text.
                store: The memory store's id or name; needed only when several are attached.
            """
            chosen = self._resolve(ctx, store, write=True)
            if isinstance(chosen, ToolResult):
                return chosen
            try:
                note = self.write(chosen.memory_store_id, path, content)
            except InvalidInputError as exc:
                return ToolResult.error(str(exc), "INVALID_INPUT")
            return f"wrote {note.path} ({len(content):,} characters) in {chosen.memory_store_id}"

        def memory_delete(path: str, store: str | None = None, *, ctx: ToolContext) -> ToolResult | str:
            """Delete a note from a memory store.

            Args:
                path: The note's path.
                store: The memory store's id or name; needed only when several are attached.
            """
            chosen = self._resolve(ctx, store, write=True)
            if isinstance(chosen, ToolResult):
                return chosen
            try:
                self.delete(chosen.memory_store_id, path)
            except NotFoundError as exc:
                return ToolResult.error(str(exc))
            return f"deleted {path} from {chosen.memory_store_id}"

        functions = (memory_list, memory_read, memory_search, memory_write, memory_delete)
        return [
            # Reads may run beside each other; writes one at a time, so a model's write-then-read keeps order.
            function_tool(fn, origin="builtin", parallel_safe=fn.__name__ not in ("memory_write", "memory_delete"))
            for fn in functions
        ]


def visible_schemas(session: Session, agent: Agent, schemas: list[ToolSchema]) -> list[ToolSchema]:
    """Hide the memory tools from a thread that has no store: another session of the same agent may have
    registered them in the agent's scope, and spawned threads run on other agents."""
    memory = session.engine.memory_stores
    if agent.id == session.agent.id and memory.has_memory(session.id):
        return schemas
    host = session.tool_host
    get = getattr(host, "get", None)
    if get is None:
        return schemas
    return [s for s in schemas if s.name not in MEMORY_TOOL_NAMES or not memory.owns(get(s.name, agent.id))]
