"""stdio for ``agentcell acp``: only protocol on stdout, and an answer for every bad line.

The process keeps the real stdout for the protocol and points file descriptor 1 at stderr, so a stray
``print`` or a native library writing to stdout cannot corrupt the stream. Each line from the client is
checked before the SDK sees it: one that is not JSON gets a parse error (-32700), one that is not a
JSON-RPC message an invalid-request error (-32600), and the process goes on. The SDK answers unknown
methods (-32601) and malformed params (-32602) itself.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from typing import Any

from acp import run_agent

__all__ = ["LIMIT", "check_line", "serve"]

log = logging.getLogger(__name__)

LIMIT = 50 * 1024 * 1024
"""The longest line taken (images come base64 inside a prompt)."""


def _error(request_id: object, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def check_line(line: bytes) -> dict[str, Any] | None:
    """The error response a line deserves, or None when it is a JSON-RPC message to pass on."""
    try:
        message = json.loads(line)
    except ValueError as exc:
        return _error(None, -32700, f"Parse error: the line is not JSON ({exc}); send one JSON-RPC message per line")
    if not isinstance(message, dict):
        return _error(None, -32600, "Invalid request: a JSON-RPC message is a JSON object")
    request_id = message.get("id")
    if request_id is not None and (isinstance(request_id, bool) or not isinstance(request_id, int | str)):
        return _error(None, -32600, "Invalid request: an id is a number or a string")
    method = message.get("method")
    if method is None:
        if "id" in message and ("result" in message or "error" in message):
            return None  # the client's answer to one of our requests
        return _error(request_id, -32600, "Invalid request: a request needs a method")
    if not isinstance(method, str):
        return _error(request_id, -32600, "Invalid request: the method is a string")
    params = message.get("params")
    if params is not None and not isinstance(params, dict):
        return _error(request_id, -32602, f"Invalid params: the params of {method} are an object")
    return None


async def _read_line(source: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    while True:
        try:
            chunks.append(await source.readuntil(b"\n"))
        except asyncio.LimitOverrunError as exc:  # longer than the buffer: take it in pieces
            chunks.append(await source.readexactly(exc.consumed))
            continue
        except asyncio.IncompleteReadError as exc:
            chunks.append(exc.partial)
        return b"".join(chunks)


async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            line = await _read_line(source)
            if not line:
                return
            if not line.strip():
                continue
            problem = check_line(line)
            if problem is None:
                sink.feed_data(line if line.endswith(b"\n") else line + b"\n")
            else:
                log.warning("answered a bad message: %s", problem["error"]["message"])
                writer.write((json.dumps(problem) + "\n").encode())
    finally:
        sink.feed_eof()


async def serve(agent: Any) -> None:
    """Serve ``agent`` on this process's stdin and stdout until the client closes stdin."""
    loop = asyncio.get_running_loop()
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    source = asyncio.StreamReader(limit=LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(source), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, protocol_out)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    sink = asyncio.StreamReader(limit=LIMIT)
    pump = loop.create_task(_pump(source, sink, writer))
    try:
        await run_agent(agent, writer, sink, use_unstable_protocol=True)
    finally:
        pump.cancel()
        await agent.aclose()
