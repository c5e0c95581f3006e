"""One session's ``session/update`` notifications, sent in order from a task of their own.

The turn never waits for the pipe: items queue while a notification is on the wire. A message's first
text goes out at once, then at most every :data:`TEXT_INTERVAL` (at once again when someone waits for
the outbox to flush: the end of a turn, a question to the user); the chunks of the same message that
queued up meanwhile go out joined. So a reply of 20,000 deltas made in 0.3 s costs the editor about twenty
notifications rather than 20,000 (each one is parsed, validated and dispatched on its side), and nobody can
see a wait shorter than a frame.

Text that finds the outbox idle (nothing queued, nothing on the wire, the interval past) is written at
once by whoever puts it, through ``write_now`` when the transport gives one: the first text of a reply
reaches the pipe before the turn goes on, without waiting for the outbox's task to be scheduled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal, NamedTuple, Protocol, TypeAlias

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

from ..events import StreamItem

__all__ = ["Item", "MessageEnd", "Outbox", "TextChunk", "Update", "UpdateClient", "WriteNow"]

log = logging.getLogger(__name__)

TEXT_INTERVAL = 1 / 60
"""Seconds between two text chunks of one session (the first goes at once): one frame of a 60 Hz
display, as often as an editor can show new text. Each notification costs both processes a wake-up, a
parse and a dispatch, so a shorter interval only spends CPU on frames nobody sees."""

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


class MessageEnd(NamedTuple):
    """A streamed message is complete: send what is queued of it now rather than at the next tick."""

    message_id: str


Item: TypeAlias = "Update | TextChunk | MessageEnd"
"""What the outbox takes: an update, a piece of a message's text, or the end of a message."""


class _Text:
    """Queued text of one message: the deltas that arrived in a row, joined when sent."""

    __slots__ = ("kind", "message_id", "parts")

    def __init__(self, kind: Literal["message", "thought"], message_id: str | None, text: str) -> None:
        self.kind = kind
        self.message_id = message_id
        self.parts = [text]


class UpdateClient(Protocol):
    async def session_update(self, session_id: str, update: Update) -> None: ...


WriteNow: TypeAlias = Callable[[dict[str, Any]], bool]
"""Write the params of a ``session/update`` notification to the client now; False when it cannot (the
pipe is behind or closed), and the update then goes the queued way."""


def text_params(
    session_id: str, kind: Literal["message", "thought"], message_id: str | None, text: str
) -> dict[str, Any]:
    """The ``session/update`` params of a text chunk, as the SDK's models dump them (no model built)."""
    update: dict[str, Any] = {
        "sessionUpdate": "agent_thought_chunk" if kind == "thought" else "agent_message_chunk",
        "content": {"type": "text", "text": text},
    }
    if message_id is not None:
        update["messageId"] = message_id
    return {"sessionId": session_id, "update": update}


class Outbox:
    def __init__(self, client: UpdateClient, session_id: str, write_now: WriteNow | None = None) -> None:
        self._client = client
        self._session_id = session_id
        self._write_now = write_now
        self._loop = asyncio.get_running_loop()
        self._last_text: tuple[float, str | None] = (-TEXT_INTERVAL, None)
        """When the latest text went out, and of which message."""
        self._items: deque[Update | _Text] = deque()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._hurry = asyncio.Event()
        self._broken = False
        self._task = self._loop.create_task(self._run(), name=f"agentcell-acp-outbox-{session_id}")

    def put(self, item: Item) -> None:
        if isinstance(item, MessageEnd):
            if not self._idle.is_set():
                self._hurry.set()
            return
        if isinstance(item, TextChunk):
            self.put_text(item.kind, item.message_id, item.text)
            return
        if self._broken:
            return
        self._items.append(item)
        self._idle.clear()
        self._wake.set()

    def put_text(self, kind: Literal["message", "thought"], message_id: str | None, text: str) -> None:
        """Queue a piece of a message; called once per delta, so it only appends."""
        items = self._items
        if items:
            tail = items[-1]
            if isinstance(tail, _Text) and tail.message_id == message_id and tail.kind == kind:
                tail.parts.append(text)
                return
        if self._broken:
            return
        if not items and self._sent_now(kind, message_id, text):
            return
        items.append(_Text(kind, message_id, text))
        self._idle.clear()
        self._wake.set()

    def _sent_now(self, kind: Literal["message", "thought"], message_id: str | None, text: str) -> bool:
        """Write the text at once if nothing is on the wire and its message is not within the interval."""
        if self._write_now is None or not self._idle.is_set():
            return False
        now = self._loop.time()
        last_time, last_message = self._last_text
        if last_message == message_id and now - last_time < TEXT_INTERVAL:
            return False
        if not self._write_now(text_params(self._session_id, kind, message_id, text)):
            return False
        self._last_text = (now, message_id)
        return True

    def put_all(self, items: list[Item]) -> None:
        for item in items:
            self.put(item)

    async def forward(self, stream: AsyncIterator[StreamItem], mapped: Callable[[StreamItem], list[Item]]) -> None:
        """Send a running turn's items as they stream: a text delta of the primary thread joins its
        message's queued text, anything else goes through ``mapped`` (the session's update mapper).

        The loop over the turn is here, as the turn's consumer, rather than behind a callback: a reply
        has tens of thousands of deltas, and the common one (more text of the message already queued)
        then costs an append and no call."""
        items = self._items
        put_text, put_all = self.put_text, self.put_all
        async for item in stream:
            # The tag, not isinstance: pydantic's model classes answer isinstance through ABCMeta.
            if item.type == "event_delta" and item.thread_id is None:
                block = item.delta.content
                if block.type == "text":
                    if items:
                        tail = items[-1]
                        if tail.__class__ is _Text and tail.message_id == item.event_id and tail.kind == "message":
                            tail.parts.append(block.text)
                            continue
                    put_text("message", item.event_id, block.text)
                    continue
            put_all(mapped(item))

    async def flush(self) -> None:
        """Return once everything put so far was sent (without waiting out the text interval)."""
        if not self._idle.is_set():
            self._hurry.set()
        await self._idle.wait()

    async def close(self) -> None:
        """Send what is queued, then take nothing more: later puts are dropped, and a flush returns at once."""
        await self.flush()
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        self._broken = True
        self._items.clear()
        self._idle.set()

    def _next(self) -> Update:
        item = self._items.popleft()
        if not isinstance(item, _Text):
            return item
        content = TextContentBlock(type="text", text="".join(item.parts))
        if item.kind == "thought":
            return AgentThoughtChunk(session_update="agent_thought_chunk", content=content, message_id=item.message_id)
        return AgentMessageChunk(session_update="agent_message_chunk", content=content, message_id=item.message_id)

    async def _run(self) -> None:
        loop = self._loop
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._items:
                head = self._items[0]
                if isinstance(head, _Text) and head.message_id == self._last_text[1]:
                    await self._pause(self._last_text[0] + TEXT_INTERVAL - loop.time())
                update = self._next()
                if isinstance(head, _Text):
                    self._last_text = (loop.time(), head.message_id)
                try:
                    await self._client.session_update(session_id=self._session_id, update=update)
                except Exception as exc:  # the client went away: the turn goes on, its events are stored
                    log.warning("session/update could not be sent (%s); dropping the rest of this turn's updates", exc)
                    self._broken = True
                    self._items.clear()
            self._hurry.clear()
            self._idle.set()

    async def _pause(self, seconds: float) -> None:
        """Let more of the message queue up, unless someone is waiting for the flush."""
        if seconds > 0 and not self._hurry.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._hurry.wait(), seconds)
