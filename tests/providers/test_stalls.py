"""Issue 21, 4: a stream that stalls fails as a retryable stall within the stall timeout (keep-alive pings
do not count as progress), instead of holding the cell for the ten-minute read timeout."""

from __future__ import annotations

import asyncio
import re
import time

import pytest

from agentcell.errors import ProviderConnectionError
from agentcell.providers._http import RetryPolicy
from agentcell.providers.anthropic import AnthropicProvider

from .conftest import API_KEY, Reply, SSEServer, collect, fixture, request, sse_reply

START = fixture("anthropic_text.sse").split(b"\n\n")[0] + b"\n\n"  # message_start only
PING = b'event: ping\ndata: {"type": "ping"}\n\n'


def _stalling(body: bytes, pause: float) -> Reply:
    pieces = body.split(b"|")
    offsets, at = [], 0
    for piece in pieces[:-1]:
        at += len(piece)
        offsets.append(at)
    return Reply(
        body=body.replace(b"|", b""), headers={"content-type": "text/event-stream"}, splits=offsets, pause=pause
    )


@pytest.mark.parametrize("pings", [False, True], ids=["silent", "pinging"])
async def test_a_stalled_stream_fails_as_a_retryable_stall(server: SSEServer, pings: bool) -> None:
    # After message_start: nothing for 3 s, or only pings every 0.1 s for 3 s.
    body = START + b"|" + (PING + b"|") * 30 if pings else START + b"|" + PING
    server.queue(_stalling(body, 0.1 if pings else 3.0))
    retry = RetryPolicy(max_retries=0, stall_seconds=0.5)
    provider = AnthropicProvider(api_key=API_KEY, base_url=server.url, retry=retry)
    started = time.monotonic()
    limit = r"stalled: nothing arrived for 0\.[5-9] s \(the stall limit is 0\.5 s"
    with pytest.raises(ProviderConnectionError, match=limit) as stalled:
        await collect(provider, request())
    assert time.monotonic() - started < 2.5
    assert stalled.value.retryable
    await provider.aclose()


async def test_a_stall_before_any_output_is_retried_and_the_second_attempt_answers(server: SSEServer) -> None:
    server.queue(_stalling(START + b"|" + PING, 3.0), sse_reply("anthropic_text.sse"))
    retry = RetryPolicy(max_retries=2, initial_delay=0, max_delay=0, stall_seconds=0.5)
    provider = AnthropicProvider(api_key=API_KEY, base_url=server.url, retry=retry)
    _, response = await collect(provider, request())
    assert response.text and len(server.requests) == 2
    await provider.aclose()


async def test_retries_are_bounded_in_total_time(server: SSEServer) -> None:
    server.queue(*[_stalling(START + b"|" + PING, 3.0) for _ in range(5)])
    retry = RetryPolicy(max_retries=10, initial_delay=0, max_delay=0, stall_seconds=0.3, max_total_seconds=0.7)
    provider = AnthropicProvider(api_key=API_KEY, base_url=server.url, retry=retry)
    started = time.monotonic()
    with pytest.raises(ProviderConnectionError, match="stalled"):
        await collect(provider, request())
    assert time.monotonic() - started < 2.0 and len(server.requests) <= 3
    await provider.aclose()


async def test_the_stall_error_says_how_long_nothing_arrived_even_when_the_reader_was_busy(server: SSEServer) -> None:
    # The first text delta, then silence; the consumer takes 0.6 s over that delta (past the 0.5 s limit), so
    # the watch finds the reader busy at its check. It looks again soon, not a whole limit later, and the
    # error says the time that really passed without anything arriving.
    first_text = fixture("anthropic_text.sse").split(b"\n\n")[:4]
    server.queue(_stalling(b"\n\n".join(first_text) + b"\n\n|" + PING, 3.0))
    provider = AnthropicProvider(
        api_key=API_KEY, base_url=server.url, retry=RetryPolicy(max_retries=0, stall_seconds=0.5)
    )
    arrived: list[float] = []

    async def read_slowly() -> None:
        async for _event in provider.stream(request()):
            if not arrived:
                arrived.append(time.monotonic())
                await asyncio.sleep(0.6)  # the reader's own work, not the server's silence

    with pytest.raises(ProviderConnectionError, match=r"the stall limit is 0\.5 s") as stalled:
        await read_slowly()
    failed = time.monotonic()
    found = re.search(r"nothing arrived for (\d+\.\d) s", str(stalled.value))
    assert found is not None, stalled.value
    waited = float(found.group(1))
    assert waited == pytest.approx(failed - arrived[0], abs=0.15), "the error states the time that passed"
    assert waited < 0.95, f"the stall waited {waited} s for a 0.5 s limit"
    await provider.aclose()
