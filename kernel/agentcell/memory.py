"""``engine.memory_stores``: memory stores, their notes, and which sessions attached which.

``engine.memory_stores.create(name=...)`` makes a store (``memstore_...``), kept in the engine's store with
its notes; a session attaches it as a resource, ``read_write`` (the default) or ``read_only``, with optional
guidance that the system prompt's memory section shows the agent. The agent reads and writes notes (a path
and a text each) through the memory tools (``tools/builtin/memory.py``), registered in its agent scope of
the engine's tool registry.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .engine.context import acting_session
from .errors import ConfigurationError, InvalidInputError, NotFoundError
from .ids import new_id
from .records.common import utc_now
from .records.memory import MAX_NOTE_CHARS, MAX_PATH_CHARS, MemoryNote, MemoryStore
from .records.resources import MemoryStoreResource, Resource
from .tools.builtin.memory import MEMORY_TOOL_NAMES, memory_tools

if TYPE_CHECKING:
    from .providers.base import ToolSchema
    from .store.base import Store
    from .tools.definition import ToolDefinition
    from .tools.registry import Disposer

__all__ = ["MemoryNote", "MemoryStore", "MemoryStoresAPI"]


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

    def __init__(self, store: Store) -> None:
        self._store = store
        self._lock = threading.RLock()
        self._attached: dict[str, builtins.list[MemoryStoreResource]] = {}
        """Per session id: the memory resources it attached."""
        self._registered: dict[str, Disposer] = {}
        """Per agent scope: the disposer of the memory tools registered there."""
        self._definitions: tuple[ToolDefinition, ...] = tuple(memory_tools(self))

    # ------------------------------------------------------------------------------------------ stores and notes

    def create(self, *, name: str, description: str | None = None) -> MemoryStore:
        if not isinstance(name, str) or not 0 < len(name.strip()) <= 256:
            raise InvalidInputError("a memory store's name is 1 to 256 characters")
        if description is not None and len(description) > 2048:
            raise InvalidInputError("a memory store's description is at most 2,048 characters")
        store = MemoryStore(new_id("memstore"), name.strip(), description, utc_now())
        self._store.put_memory_store(store)
        return store

    def get(self, store_id: str) -> MemoryStore:
        store = self._store.get_memory_store(store_id)
        if store is None:
            raise NotFoundError(f"no memory store {store_id!r}; create one with engine.memory_stores.create(name=...)")
        return store

    def list(self) -> builtins.list[MemoryStore]:
        return self._store.list_memory_stores()

    def _writable(self, store_id: str) -> None:
        """Refuse a write inside a turn of a session that attached the store read_only, whoever writes: the
        memory tools, or the model's own Python code calling this API."""
        acting = acting_session()
        if acting is None:
            return
        for resource in self._attached.get(acting, []):
            if resource.memory_store_id == store_id and resource.access == "read_only":
                raise InvalidInputError(
                    f"the memory store {store_id} is attached read_only to session {acting}; its notes cannot "
                    "be written or deleted from its turns (attach it read_write to allow that)"
                )

    def write(self, store_id: str, path: str, content: str) -> MemoryNote:
        """Create or replace the note at ``path`` (refused inside a turn of a session that attached the store
        read_only)."""
        self.get(store_id)
        self._writable(store_id)
        clean = _note_path(path)
        if len(content) > MAX_NOTE_CHARS:
            raise InvalidInputError(
                f"a note holds at most {MAX_NOTE_CHARS:,} characters; this one has {len(content):,}"
            )
        note = MemoryNote(clean, content, utc_now())
        self._store.put_note(store_id, note)
        return note

    def read(self, store_id: str, path: str) -> MemoryNote:
        self.get(store_id)
        clean = _note_path(path)
        note = self._store.get_note(store_id, clean)
        if note is None:
            raise NotFoundError(f"the memory store {store_id} has no note {clean!r}")
        return note

    def notes(self, store_id: str, prefix: str = "") -> builtins.list[MemoryNote]:
        """The notes whose path starts with ``prefix``, by path."""
        self.get(store_id)
        return self._store.list_notes(store_id, prefix.lstrip("/"))

    def delete(self, store_id: str, path: str) -> None:
        self.read(store_id, path)
        self._writable(store_id)
        self._store.delete_note(store_id, _note_path(path))

    def close(self) -> None:
        with self._lock:
            for dispose in self._registered.values():
                dispose()
            self._registered.clear()

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

    def attach(self, session_id: str, scope: str, resources: Sequence[Resource], host: object) -> None:
        """Give the session's agent the memory tools (in its tool ``scope`` of ``host``) and remember which
        stores the session attached."""
        attached = [r for r in resources if isinstance(r, MemoryStoreResource)]
        if not attached:
            return
        from .tools.registry import ToolRegistry

        if not isinstance(host, ToolRegistry):
            raise ConfigurationError("memory stores need the engine's tools to be a ToolRegistry")
        with self._lock:
            self._attached[session_id] = attached
            if scope not in self._registered:
                self._registered[scope] = host.register_all(self._definitions, scope=scope)

    def attached(self, session_id: str) -> Sequence[MemoryStoreResource]:
        return self._attached.get(session_id, [])

    def visible(
        self, session_id: str, owner_scope: str, scope: str, schemas: builtins.list[ToolSchema], host: object
    ) -> builtins.list[ToolSchema]:
        """Hide the memory tools from a thread that has no store: another session of the same agent may have
        registered them in the agent's scope, and spawned threads run on other agents. ``owner_scope`` is
        the session's own tool scope; ``scope`` the one the thread's calls are made in."""
        if scope == owner_scope and self._attached.get(session_id):
            return schemas
        get = getattr(host, "get", None)
        if get is None:
            return schemas
        return [
            s
            for s in schemas
            if s.name not in MEMORY_TOOL_NAMES or not any(get(s.name, scope) is d for d in self._definitions)
        ]

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
