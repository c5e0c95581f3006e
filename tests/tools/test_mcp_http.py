"""The HTTP side of the cap, on bodies fed in awkward chunks: small lines of an event stream pass byte for
byte as they come, a long ``data:`` line arrives shortened with its note, any other long line is dropped,
and a JSON body over the cap is shortened as one message."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest

from agentcell.tools import mcp_relay
from agentcell.tools.mcp_http import CappedTransport


class _Chunks(httpx2.AsyncByteStream):
    def __init__(self, body: bytes, size: int) -> None:
        self._pieces = [body[i : i + size] for i in range(0, len(body), size)]

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self._pieces:
            yield piece


class _Server(httpx2.AsyncBaseTransport):
    def __init__(self, body: bytes, content_type: str, size: int) -> None:
        self.body, self.content_type, self.size = body, content_type, size
        self.asked: list[str] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.asked.append(request.headers.get("accept-encoding", ""))
        headers = {"content-type": self.content_type, "content-length": str(len(self.body))}
        return httpx2.Response(200, headers=headers, stream=_Chunks(self.body, self.size))


def _message(request_id: int, text: str) -> bytes:
    result = {"content": [{"type": "text", "text": text}]}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


async def _fetch(tmp_path: Path, body: bytes, content_type: str, size: int) -> tuple[bytes, _Server]:
    server = _Server(body, content_type, size)
    transport = CappedTransport(server, cap=5000, keep_dir=str(tmp_path / "kept"), name="web")
    async with httpx2.AsyncClient(transport=transport) as client:
        response = await client.get("http://mcp.test/mcp")
        return await response.aread(), server


async def test_an_event_stream_passes_small_lines_and_shortens_a_long_message(tmp_path: Path) -> None:
    small = b"event: message\r\ndata: " + _message(1, "hi") + b"\r\n\r\n"
    long = b"event: message\ndata: " + _message(2, "z" * 50_000) + b"\n\n"
    comment = b": " + b"c" * 20_000 + b"\n"
    body = small + comment + long + b"data: " + _message(3, "tail")
    for size in (1, 7, 4096, len(body)):
        got, server = await _fetch(tmp_path, body, "text/event-stream", size)
        assert server.asked == ["identity"]
        assert got.startswith(small)
        lines = got[len(small) :].split(b"\n")
        assert lines[0] == b"event: message" and lines[1].startswith(b"data: ")
        message = json.loads(lines[1][len(b"data:") :])
        text = message["result"]["content"][0]["text"]
        assert message["id"] == 2 and text.startswith("z" * 4000) and len(text) < 6000
        assert "over the cap of 5,000 bytes per message" in text
        assert lines[2:] == [b"", b"data: " + _message(3, "tail")]  # the comment line is gone
    assert len(list((tmp_path / "kept").iterdir())) == 4  # one per fetch of the long message, each whole


async def test_a_json_body_over_the_cap_is_one_shortened_message_and_a_short_one_is_untouched(
    tmp_path: Path,
) -> None:
    short = _message(4, "ok")
    got, _ = await _fetch(tmp_path, short, "application/json", 3)
    assert got == short
    got, _ = await _fetch(tmp_path, _message(5, "q" * 80_000), "application/json; charset=utf-8", 1000)
    message = json.loads(got)
    assert message["id"] == 5 and len(message["result"]["content"][0]["text"]) < 6000
    (kept,) = (tmp_path / "kept").iterdir()
    assert kept.read_bytes() == _message(5, "q" * 80_000)


class _Endless(httpx2.AsyncByteStream):
    """A hostile server's body: a message that starts and never ends; counts what was read of it."""

    def __init__(self, start: bytes) -> None:
        self.start, self.read = start, 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.start
        while True:
            self.read += 65536
            yield b"w" * 65536


class _EndlessServer(httpx2.AsyncBaseTransport):
    def __init__(self, content_type: str, start: bytes) -> None:
        self.content_type, self.body = content_type, _Endless(start)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": self.content_type}, stream=self.body)


@pytest.mark.parametrize(
    ("content_type", "start"),
    [
        ("application/json", b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"'),
        (
            "text/event-stream",
            b'event: message\ndata: {"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"',
        ),
    ],
    ids=["json", "event-stream"],
)
async def test_a_message_that_never_ends_is_cut_at_the_kept_limit_and_not_read_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content_type: str, start: bytes
) -> None:
    monkeypatch.setattr(mcp_relay, "MAX_KEPT_BYTES", 1 << 20)
    server = _EndlessServer(content_type, start)
    transport = CappedTransport(server, cap=5000, keep_dir=str(tmp_path / "kept"), name="web")
    async with httpx2.AsyncClient(transport=transport) as client:
        response = await client.get("http://mcp.test/mcp")
        got = await response.aread()  # it ends: the reader stopped
    assert server.body.read <= (1 << 20) + 65536, "the body was read past the kept limit"
    (kept,) = (tmp_path / "kept").iterdir()
    assert kept.stat().st_size == 1 << 20, "no more than the limit is kept"
    line = got.split(b"data:", 1)[-1].strip() if content_type == "text/event-stream" else got
    message = json.loads(line)
    text = message["result"]["content"][0]["text"]
    assert message["id"] == 7 and message["result"]["isError"] is True
    assert text.startswith("The answer was not read to its end.")
    assert "agentcell stopped reading it there" in text and f"kept in {kept}" in text
