"""The memory tools: the agent reads and writes the notes of the memory stores its session attached.

They are registered in the agent's scope by the engine's memory stores (``memory.py``) and find the stores
of the calling session from the call's session id, so sessions of one agent can attach different stores.
A write to a store attached ``read_only`` (or under the ``read-only`` permission preset) is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ...errors import InvalidInputError, NotFoundError
from ...records.memory import MemoryNote, MemoryStore
from ...records.resources import MemoryStoreResource
from ..base import ToolResult
from ..definition import ToolContext, ToolDefinition
from ..functions import function_tool

__all__ = ["MEMORY_TOOL_NAMES", "MemoryAccess", "memory_tools"]

MEMORY_TOOL_NAMES = ("memory_list", "memory_read", "memory_search", "memory_write", "memory_delete")


class MemoryAccess(Protocol):
    """What the memory tools need of the engine's memory stores."""

    def attached(self, session_id: str) -> Sequence[MemoryStoreResource]: ...

    def get(self, store_id: str) -> MemoryStore: ...

    def notes(self, store_id: str, prefix: str = "") -> list[MemoryNote]: ...

    def read(self, store_id: str, path: str) -> MemoryNote: ...

    def write(self, store_id: str, path: str, content: str) -> MemoryNote: ...

    def delete(self, store_id: str, path: str) -> None: ...


def _resolve(
    memory: MemoryAccess, ctx: ToolContext, store: str | None, *, write: bool
) -> MemoryStoreResource | ToolResult:
    attached = memory.attached(ctx.call.session_id)
    if not attached:
        return ToolResult.error("no memory store is attached to this session")
    if store is None:
        if len(attached) > 1:
            ids = ", ".join(r.memory_store_id for r in attached)
            return ToolResult.error(f"several memory stores are attached; name one with store: {ids}")
        chosen = attached[0]
    else:
        found = next((r for r in attached if r.memory_store_id == store), None) or next(
            (r for r in attached if memory.get(r.memory_store_id).name == store), None
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


def memory_tools(memory: MemoryAccess) -> list[ToolDefinition]:
    """The memory tools, answering from ``memory`` (the engine's memory stores)."""

    def memory_list(prefix: str = "", store: str | None = None, *, ctx: ToolContext) -> ToolResult | str:
        """List the notes of a memory store (path, size, last change).

        Args:
            prefix: Only notes whose path starts with this.
            store: The memory store's id or name; needed only when several are attached.
        """
        chosen = _resolve(memory, ctx, store, write=False)
        if isinstance(chosen, ToolResult):
            return chosen
        notes = memory.notes(chosen.memory_store_id, prefix)
        if not notes:
            return f"no notes{f' under {prefix!r}' if prefix else ''} in {chosen.memory_store_id}"
        return "\n".join(f"{n.path}\t{len(n.content):,} chars\t{n.updated_at:%Y-%m-%d %H:%M}" for n in notes)

    def memory_read(path: str, store: str | None = None, *, ctx: ToolContext) -> ToolResult | str:
        """Read one note of a memory store.

        Args:
            path: The note's path, such as 'preferences/units.md'.
            store: The memory store's id or name; needed only when several are attached.
        """
        chosen = _resolve(memory, ctx, store, write=False)
        if isinstance(chosen, ToolResult):
            return chosen
        try:
            return memory.read(chosen.memory_store_id, path).content
        except NotFoundError as exc:
            return ToolResult.error(f"{exc}; memory_list shows what there is")

    def memory_search(query: str, store: str | None = None, *, ctx: ToolContext) -> ToolResult | str:
        """Find the notes whose path or text contains a phrase (case-insensitive).

        Args:
            query: The phrase to look for.
            store: The memory store's id or name; needed only when several are attached.
        """
        chosen = _resolve(memory, ctx, store, write=False)
        if isinstance(chosen, ToolResult):
            return chosen
        needle = query.casefold()
        notes = memory.notes(chosen.memory_store_id)
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
        chosen = _resolve(memory, ctx, store, write=True)
        if isinstance(chosen, ToolResult):
            return chosen
        try:
            note = memory.write(chosen.memory_store_id, path, content)
        except InvalidInputError as exc:
            return ToolResult.error(str(exc), "INVALID_INPUT")
        return f"wrote {note.path} ({len(content):,} characters) in {chosen.memory_store_id}"

    def memory_delete(path: str, store: str | None = None, *, ctx: ToolContext) -> ToolResult | str:
        """Delete a note from a memory store.

        Args:
            path: The note's path.
            store: The memory store's id or name; needed only when several are attached.
        """
        chosen = _resolve(memory, ctx, store, write=True)
        if isinstance(chosen, ToolResult):
            return chosen
        try:
            memory.delete(chosen.memory_store_id, path)
        except NotFoundError as exc:
            return ToolResult.error(str(exc))
        return f"deleted {path} from {chosen.memory_store_id}"

    functions = (memory_list, memory_read, memory_search, memory_write, memory_delete)
    return [
        # Reads may run beside each other; writes one at a time, so a model's write-then-read keeps order.
        function_tool(fn, origin="builtin", parallel_safe=fn.__name__ not in ("memory_write", "memory_delete"))
        for fn in functions
    ]
