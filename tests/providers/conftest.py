"""A real HTTP server on 127.0.0.1 that plays recorded SSE bytes, for the provider tests.

Each test queues replies; each reply is a status, headers and a body written in the chunks the test asks
for (one TCP write each, with a pause between them so the client reads them apart), optionally followed by
a cut connection. Every request is recorded (path, headers, JSON body).
"""

from __future__ import annotations

import itertools
import json
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentcell.errors import ProviderError
from agentcell.providers._http import RetryPolicy
from agentcell.providers.base import (
    Message,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    Provider,
    ResponseAccumulator,
    StreamEvent,
    TextPart,
)

FIXTURES = Path(__file__).parent / "fixtures"
API_KEY = "sk-ant-fake-SECRET-42"  # short enough not to look like a real key to scanners


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    splits: Sequence[int] = ()
    """Byte offsets at which the body is cut into separate TCP writes."""
    chunk_size: int | None = None
    """Alternatively, write the body this many bytes at a time."""
    pause: float = 0.002
    """Seconds between writes, so that the client reads them one by one."""
    cut_after: int | None = None
    """Close the connection after this many body bytes, in the middle of the chunked body."""
    framing: str = "chunked"
    """chunked, or close (no length: the body ends when the connection closes)."""

    def pieces(self) -> list[bytes]:
        body = self.body if self.cut_after is None else self.body[: self.cut_after]
        if self.chunk_size:
            return [body[i : i + self.chunk_size] for i in range(0, len(body), self.chunk_size)]
        bounds = [0, *sorted(s for s in self.splits if 0 < s < len(body)), len(body)]
        return [body[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def sse_reply(name: str, **kwargs: Any) -> Reply:
    return Reply(body=fixture(name), headers={"content-type": "text/event-stream"}, **kwargs)


def json_reply(status: int, payload: Any, headers: dict[str, str] | None = None) -> Reply:
    return Reply(
        status=status,
        body=json.dumps(payload).encode(),
        headers={"content-type": "application/json", **(headers or {})},
    )


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 10  # an idle keep-alive connection ends its thread eventually

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw
        owner = self.server.owner
        recorded = Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        owner.requests.append(recorded)
        with owner.lock:
            reply = owner.replies.pop(0) if owner.replies else json_reply(500, {"error": "no reply queued"})
        self._send(reply(recorded) if callable(reply) else reply)

    def _send(self, reply: Reply) -> None:
        lines = [f"HTTP/1.1 {reply.status} {self.responses.get(reply.status, ('X',))[0]}"]
        lines += [f"{k}: {v}" for k, v in reply.headers.items()]
        chunked = reply.framing == "chunked"
        lines.append("transfer-encoding: chunked" if chunked else "connection: close")
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.wfile.flush()
        for piece in reply.pieces():
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            self.wfile.flush()
            if reply.pause:
                time.sleep(reply.pause)
        if reply.cut_after is not None or not chunked:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: SSEServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that give up on a stream reset the connection; that is the point of several tests.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


QueuedReply = Reply | Callable[[Recorded], Reply]
"""A reply, or a function of the request that makes it (the prompt-cache emulation, ``prefix_cache``)."""


class SSEServer:
    def __init__(self) -> None:
        self.replies: list[QueuedReply] = []
        self.requests: list[Recorded] = []
        self.lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def queue(self, *replies: QueuedReply) -> None:
        with self.lock:
            self.replies.extend(replies)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


@pytest.fixture
def server() -> Iterator[SSEServer]:
    instance = SSEServer()
    try:
        yield instance
    finally:
        instance.close()


@pytest.fixture(autouse=True)
def _no_provider_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # No test may reach a real API with the developer's credentials or endpoints.
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "AGENTCELL_MODEL",
        "AGENTCELL_CLAUDE_MODEL",
        "AGENTCELL_OPENAI_MODEL",
    ):
        monkeypatch.delenv(name, raising=False)


async def collect(provider: Provider, request: ModelRequest) -> tuple[list[StreamEvent], ModelResponse]:
    """Every event of one stream, and the response they fold into."""
    accumulator = ResponseAccumulator()
    events: list[StreamEvent] = []
    async for event in provider.stream(request):
        events.append(event)
        accumulator.add(event)
    return events, accumulator.finish()


async def collect_error(provider: Provider, request: ModelRequest) -> tuple[list[StreamEvent], ProviderError]:
    """The events yielded before the stream failed, and the error (the test fails if it did not)."""
    events: list[StreamEvent] = []
    try:
        async for event in provider.stream(request):
            events.append(event)
    except ProviderError as error:
        return events, error
    pytest.fail("the stream did not fail")


def sse_body(*payloads: object) -> bytes:
    """``data:`` events with these JSON payloads (a str is sent as is, e.g. ``[DONE]``)."""
    return b"".join(b"data: %s\n\n" % (p.encode() if isinstance(p, str) else json.dumps(p).encode()) for p in payloads)


def request(text: str = "hi", **settings: Any) -> ModelRequest:
    return ModelRequest(
        model="claude-sonnet-4-5",
        messages=[Message(role="user", content=[TextPart(text=text)])],
        settings=ModelSettings(**settings),
    )


FAST = RetryPolicy(initial_delay=0.0, max_delay=0.0)
"""Retries without waiting, so fault tests stay fast."""
