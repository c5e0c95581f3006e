"""stdio for ``agentcell acp``: only protocol on stdout, and an answer for every bad line.

The process keeps the real stdout for the protocol and points file descriptor 1 at stderr, so a stray
``print`` or a native library writing to stdout cannot corrupt the stream. Each line from the client is
checked before the SDK sees it: one that is not JSON gets a parse error (-32700), one that is not a
JSON-RPC message an invalid-request error (-32600), and the process goes on. The SDK answers unknown
methods (-32601) and malformed params (-32602) itself.

The SDK's own stdio path reads each line through a second stream and parses it twice (here, to check it,
and there), and queues every outgoing message for a writer task that writes it one scheduling round
later. :class:`StdioTransport` is the SDK's message-level ``Transport`` instead: a line is parsed once,
and a message is written to the pipe the moment it is sent (the transport buffers what the pipe does not
take; ``drain`` waits only when that buffer is full), so neither a prompt nor its first text waits for a
task switch on its way.

stdin and stdout may also be regular files (``agentcell acp < requests.jsonl > answers.jsonl``), which the
event loop cannot watch: they are read in a worker thread and written directly. The end of a file is not a
client that went away, as a closed pipe is: every request read from it is answered before the process
ends, and what the agent asks the client meanwhile gets an error, since nobody is there to answer.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import selectors
import stat
import sys
from collections import deque
from typing import Any, Protocol

from acp import run_agent

from .sdk_bytes import byte_streams, message_level_sdk

__all__ = [
    "LIMIT",
    "MAX_DEPTH",
    "FileOutput",
    "Output",
    "PipeOutput",
    "StdioTransport",
    "check_line",
    "parse_line",
    "serve",
]

log = logging.getLogger(__name__)

LIMIT = 50 * 1024 * 1024
"""The longest line taken (images come base64 inside a prompt)."""
MAX_DEPTH = 64
"""The deepest nesting of arrays and objects taken in a message (ACP's own messages nest about ten)."""


def _error(request_id: object, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _deeper_than(value: object, limit: int) -> bool:
    """Whether ``value`` nests arrays and objects more than ``limit`` levels (walked without recursion)."""
    level: list[object] = [value]
    for _ in range(limit + 1):
        level = [
            child
            for item in level
            if isinstance(item, dict | list)
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, dict | list)
        ]
        if not level:
            return False
    return True


def parse_line(line: bytes) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The JSON-RPC message on ``line``, or the error response it deserves (one of the two is None)."""
    too_deep = f"Invalid request: the message nests more than {MAX_DEPTH} levels of arrays and objects"
    try:
        message = json.loads(line)
    except RecursionError:  # the parser recurses per level: a line nested 100,000 deep would end the process
        return None, _error(None, -32600, too_deep)
    except ValueError as exc:
        return None, _error(
            None, -32700, f"Parse error: the line is not JSON ({exc}); send one JSON-RPC message per line"
        )
    if not isinstance(message, dict):
        return None, _error(None, -32600, "Invalid request: a JSON-RPC message is a JSON object")
    request_id = message.get("id")
    if request_id is not None and (isinstance(request_id, bool) or not isinstance(request_id, int | str)):
        return None, _error(None, -32600, "Invalid request: an id is a number or a string")
    if _deeper_than(message, MAX_DEPTH):
        # What parses may still be too deep for what comes after (validation, copies, the store's JSON).
        if "method" not in message and "id" in message:
            return _error(request_id, -32600, f"{too_deep} (the client's answer)"), None
        return None, _error(request_id, -32600, too_deep)
    method = message.get("method")
    if method is None:
        if "id" in message and ("result" in message or "error" in message):
            return message, None  # the client's answer to one of our requests
        return None, _error(request_id, -32600, "Invalid request: a request needs a method")
    if not isinstance(method, str):
        return None, _error(request_id, -32600, "Invalid request: the method is a string")
    params = message.get("params")
    if params is not None and not isinstance(params, dict):
        return None, _error(request_id, -32602, f"Invalid params: the params of {method} are an object")
    return message, None


def check_line(line: bytes) -> dict[str, Any] | None:
    """The error response a line deserves, or None when it is a JSON-RPC message to pass on."""
    return parse_line(line)[1]


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


class Output(Protocol):
    """Where the protocol's lines go: a pipe the event loop watches, or a regular file."""

    def write(self, data: bytes) -> None: ...

    def behind(self) -> bool:
        """The output holds lines it could not pass on yet, or is closed."""
        ...

    async def drain(self) -> None: ...


class PipeOutput:
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    def write(self, data: bytes) -> None:
        self._writer.write(data)

    def behind(self) -> bool:
        pipe = self._writer.transport
        return pipe.is_closing() or bool(pipe.get_write_buffer_size())

    async def drain(self) -> None:
        await self._writer.drain()  # returns at once unless the client stopped reading


class FileOutput:
    """A regular file: a write is complete when it returns (the page cache takes it)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def behind(self) -> bool:
        return False

    async def drain(self) -> None:
        return None


class StdioTransport:
    """JSON-RPC messages on the client's pipes, for the SDK's ``Connection``: bad lines answered here.

    ``finite`` says the input is a file rather than a client: at its end, the requests read are answered
    before :meth:`receive` reports the end, and the agent's own requests get an error in place of the
    answer nobody will send."""

    def __init__(self, source: asyncio.StreamReader, output: Output, *, finite: bool = False) -> None:
        self._source = source
        self._output = output
        self._finite = finite
        self._ended = False
        self._unanswered: set[object] = set()
        """Ids of the requests read (a finite input's): the process ends once each has its answer."""
        self._asked: set[object] = set()
        """Ids of the agent's own requests still waiting for the client's answer."""
        self._replies: deque[dict[str, Any]] = deque()
        self._settled = asyncio.Event()

    async def receive(self) -> dict[str, Any] | None:
        while not self._ended:
            line = await _read_line(self._source)
            if not line:
                self._ended = True
                break
            if not line.strip():
                continue
            message, problem = parse_line(line)
            if message is not None:
                self._track_incoming(message)
                return message
            assert problem is not None
            log.warning("answered a bad message: %s", problem["error"]["message"])
            self.write(problem)
        if not self._finite:
            return None
        for request_id in self._asked:
            self._replies.append(_error(request_id, -32603, "the input ended: no client is there to answer"))
        self._asked.clear()
        while self._replies or self._unanswered:
            if self._replies:
                return self._replies.popleft()
            self._settled.clear()
            await self._settled.wait()
        return None

    def _track_incoming(self, message: dict[str, Any]) -> None:
        if not self._finite or "id" not in message:
            return
        if "method" in message:
            self._unanswered.add(message["id"])
        else:
            self._asked.discard(message["id"])

    def write(self, message: dict[str, Any]) -> None:
        """Hand ``message`` to the pipe now (what it cannot take yet stays in the transport's buffer)."""
        if self._finite and "id" in message:
            self._track_outgoing(message)
        self._output.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def write_bytes(self, line: bytes) -> None:
        """Hand a line the SDK serialized itself to the pipe (its byte-level path, before 0.12)."""
        if self._finite:
            message = json.loads(line)
            if "id" in message:
                self._track_outgoing(message)
        self._output.write(line)

    def _track_outgoing(self, message: dict[str, Any]) -> None:
        request_id = message["id"]
        if "method" not in message:
            self._unanswered.discard(request_id)
        elif self._ended:
            self._replies.append(_error(request_id, -32603, "the input ended: no client is there to answer"))
        else:
            self._asked.add(request_id)
        self._settled.set()

    def write_update(self, params: dict[str, Any]) -> bool:
        """Write a ``session/update`` notification now, unless the pipe is behind or closed (then False:
        the caller queues it and waits its turn, so updates never overtake one another)."""
        if self._output.behind():
            return False
        self.write({"jsonrpc": "2.0", "method": "session/update", "params": params})
        return True

    async def send(self, message: dict[str, Any]) -> None:
        self.write(message)
        await self._output.drain()

    async def close(self) -> None:
        """Nothing to release: the pipes are the process's own and close with it."""


def _regular_file(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


async def _feed_from_file(source: asyncio.StreamReader, fd: int) -> None:
    while chunk := await asyncio.to_thread(os.read, fd, 1 << 20):
        source.feed_data(chunk)
    source.feed_eof()


def _watchable(fd: int) -> bool:
    """Whether the event loop can watch ``fd``: a pipe, a socket or a terminal; not a regular file, nor a
    device such as /dev/null, which the selector refuses (the loop would only say so later, in a callback)."""
    if _regular_file(fd):
        return False
    with selectors.DefaultSelector() as selector:
        try:
            selector.register(fd, selectors.EVENT_READ)
        except (ValueError, PermissionError):
            return False
    return True


async def serve(agent: Any) -> None:
    """Serve ``agent`` on this process's stdin and stdout until the client closes stdin."""
    loop = asyncio.get_running_loop()
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    source = asyncio.StreamReader(limit=LIMIT)
    finite = not _watchable(sys.stdin.fileno())
    feeding: asyncio.Task[None] | None = None
    if finite:
        feeding = loop.create_task(_feed_from_file(source, sys.stdin.fileno()), name="agentcell-acp-stdin")
    else:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(source), sys.stdin)
    output: Output
    if _watchable(protocol_out.fileno()):
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, protocol_out)
        output = PipeOutput(asyncio.StreamWriter(transport, protocol, None, loop))
    else:
        output = FileOutput(protocol_out.fileno())
    stdio = StdioTransport(source, output, finite=finite)
    if hasattr(agent, "write_now"):
        agent.write_now = stdio.write_update
    pump: asyncio.Task[None] | None = None
    try:
        if message_level_sdk():
            await run_agent(agent, stdio, use_unstable_protocol=True)
        else:
            writer, reader, pump = byte_streams(stdio, LIMIT)
            await run_agent(agent, writer, reader, use_unstable_protocol=True)
    finally:
        await agent.aclose()
        for task in (feeding, pump):
            if task is not None:
                task.cancel()
