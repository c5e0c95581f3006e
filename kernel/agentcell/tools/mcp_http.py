"""A streamable-HTTP MCP server's answers, with every message longer than a cap shortened on the way in.

The same rule as a stdio server's relay (``mcp_relay.py``), for the other transport: a JSON-RPC message
above ``AGENTCELL_MCP_MAX_RESULT_BYTES`` reaches the SDK with its strings cut to the cap and a note saying
how large it was and which file under the kept folder holds it whole. Without it, a JSON answer was read
whole into the kernel whatever its size, and an event-stream answer over the SDK's 1 MiB event limit
failed the call with an error about server-sent events.

:class:`CappedTransport` wraps the client's transport: it asks for an uncompressed body (so the bytes it
cuts are the JSON's own) and hands the SDK a body that passes small messages through as they come: a
``application/json`` body is one message; an ``text/event-stream`` body carries one message per ``data:``
line (the SDK's own servers never split one over several lines). A message that reaches
``mcp_relay.MAX_KEPT_BYTES`` is not read further: it goes on cut, its note saying so, and the body is
closed, so a server that never ends a message holds neither the temporary folder nor the call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2

from .mcp_relay import LineCapper, LongLine

__all__ = ["CappedTransport", "sse_event_limit"]

_DATA = b"data:"


def sse_event_limit(cap: int) -> int:
    """The SDK's event-size limit to use beside a cap: room for a shortened message and its note."""
    return 4 * cap + 65536


class CappedTransport(httpx2.AsyncBaseTransport):
    """``inner`` with each JSON-RPC message of a response over ``cap`` bytes shortened (see the module)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, *, cap: int, keep_dir: str | None, name: str) -> None:
        self._inner = inner
        self._cap = cap
        self._keep_dir = keep_dir
        self._name = name

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.headers["accept-encoding"] = "identity"
        response = await self._inner.handle_async_request(request)
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        encoded = response.headers.get("content-encoding", "identity").lower() != "identity"
        if encoded or kind not in ("application/json", "text/event-stream"):
            return response
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        shorten = self._json if kind == "application/json" else self._event_stream
        headers = [(k, v) for k, v in response.headers.raw if k.lower() != b"content-length"]
        return httpx2.Response(
            response.status_code,
            headers=headers,
            stream=_Body(shorten(response.stream), response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def _json(self, body: httpx2.AsyncByteStream) -> AsyncIterator[bytes]:
        pending = bytearray()
        long: LongLine | None = None
        async for chunk in body:
            if long is None:
                pending += chunk
                if len(pending) > self._cap:
                    long = LongLine(self._cap, self._keep_dir)
                    long.feed(bytes(pending))
                    pending.clear()
            else:
                long.feed(chunk)
            if long is not None and long.full:
                long.stopped = True  # a body that does not end is not read on (nor kept past the limit)
                break
        yield long.finish(self._name) if long is not None else bytes(pending)

    async def _event_stream(self, body: httpx2.AsyncByteStream) -> AsyncIterator[bytes]:
        """Lines up to the cap as they come; a longer ``data:`` line shortened at its end (another kind of
        line that long, which carries no message, is dropped)."""
        lines = LineCapper(self._cap, self._keep_dir, self._name, prefix=_DATA, stop=True)
        async for chunk in body:
            if out := lines.feed(chunk):
                yield out
            if lines.stopped:
                return  # a message past what is ever kept: it went out cut, and the rest is not read
        if rest := lines.finish():
            yield rest


class _Body(httpx2.AsyncByteStream):
    def __init__(self, chunks: AsyncIterator[bytes], source: httpx2.AsyncByteStream) -> None:
        self._chunks = chunks
        self._source = source

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._chunks:
            yield chunk

    async def aclose(self) -> None:
        await self._source.aclose()
