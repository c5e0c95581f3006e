"""One session's ``session/update`` notifications, sent in order from a task of their own.

The turn never waits for the pipe: items queue while a notification is on the wire, and text chunks of
the same message that queued up meanwhile go out as one chunk. So a fast stream costs the editor fewer,
larger chunks instead of slowing the turn down, and a slow one still goes out delta by delta.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Literal, NamedTuple, Protocol, TypeAlias

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    SessionInfoUpdate,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
    UserMessageChunk,
)

__all__ = ["Outbox", "TextChunk", "Update", "UpdateClient"]

log = logging.getLogger(__name__)

Update: TypeAlias = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AvailableCommandsUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | SessionInfoUpdate
    | UsageUpdate
)


class TextChunk(NamedTuple):
    """A piece of an agent message or thought, kept light until it is sent (a reply may have 20,000)."""

    kind: Literal["message", "thought"]
    message_id: str | None
    text: str

    def joins(self, other: object) -> bool:
        return isinstance(other, TextChunk) and (other.kind, other.message_id) == (self.kind, self.message_id)


class UpdateClient(Protocol):
    async def session_update(self, session_id: str, update: Update) -> None: ...


class Outbox:
    def __init__(self, client: UpdateClient, session_id: str) -> None:
        self._client = client
        self._session_id = session_id
        self._items: deque[Update | TextChunk] = deque()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._broken = False
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"agentcell-acp-outbox-{session_id}")

    def put(self, item: Update | TextChunk) -> None:
        if self._broken:
            return
        self._items.append(item)
        self._idle.clear()
        self._wake.set()

    def put_all(self, items: list[Update | TextChunk]) -> None:
        for item in items:
            self.put(item)

    async def flush(self) -> None:
        """Return once everything put so far was sent."""
        await self._idle.wait()

    async def close(self) -> None:
        await self.flush()
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    def _next(self) -> Update:
        item = self._items.popleft()
        if not isinstance(item, TextChunk):
            return item
        parts = [item.text]
        while self._items and item.joins(self._items[0]):
            parts.append(self._items.popleft().text)
        content = TextContentBlock(type="text", text="".join(parts))
        if item.kind == "thought":
            return AgentThoughtChunk(session_update="agent_thought_chunk", content=content, message_id=item.message_id)
        return AgentMessageChunk(session_update="agent_message_chunk", content=content, message_id=item.message_id)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._items:
                update = self._next()
                try:
                    await self._client.session_update(session_id=self._session_id, update=update)
                except Exception as exc:  # the client went away: the turn goes on, its events are stored
                    log.warning("session/update could not be sent (%s); dropping the rest of this turn's updates", exc)
                    self._broken = True
                    self._items.clear()
            self._idle.set()
