"""``agentcell acp`` on an ACP SDK without a message-level transport (0.11.x, which ``jupyter-ai-acp-client``
pins): there the connection reads bytes from an asyncio ``StreamReader`` and writes them to a
``StreamWriter``. The agent's side of the protocol is the same in 0.11 and 0.12 (the ``Agent`` and
``Client`` interfaces and the schema agentcell uses are identical); only the transport moved.

So on 0.11 the lines still go through :class:`~agentcell.acp.wire.StdioTransport` (bad lines answered there,
regular files read and written, a finite input drained), and are handed to the SDK as bytes; what the SDK
writes goes back through the transport to the same output. It costs a second parse of each incoming line,
as the SDK's own stdio path always did.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .wire import StdioTransport

__all__ = ["byte_streams", "message_level_sdk"]


def message_level_sdk() -> bool:
    """The installed SDK takes a message-level transport (0.12 and later)."""
    return importlib.util.find_spec("acp._transport") is not None


class _TransportOut(asyncio.WriteTransport):
    """The SDK's writer's transport: each line it writes goes out through ``stdio``."""

    def __init__(self, stdio: StdioTransport) -> None:
        super().__init__()
        self._stdio = stdio
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._stdio.write_bytes(bytes(data))

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True

    def get_write_buffer_size(self) -> int:
        return 0

    def can_write_eof(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default


def byte_streams(
    stdio: StdioTransport, limit: int
) -> tuple[asyncio.StreamWriter, asyncio.StreamReader, asyncio.Task[None]]:
    """A writer and a reader for the SDK's byte-level connection over ``stdio``, and the task that feeds the
    reader (cancel it when the connection ends)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit, loop=loop)

    async def pump() -> None:
        while (message := await stdio.receive()) is not None:
            reader.feed_data(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        reader.feed_eof()

    protocol = asyncio.streams.FlowControlMixin(loop=loop)
    writer = asyncio.StreamWriter(_TransportOut(stdio), protocol, None, loop)
    return writer, reader, loop.create_task(pump(), name="agentcell-acp-sdk-bytes")
