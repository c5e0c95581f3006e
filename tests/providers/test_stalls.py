"""Issue 21, 4: a stream that stalls fails as a retryable stall within the stall timeout (keep-alive pings
do not count as progress), instead of holding the cell for the ten-minute read timeout."""

from __future__ import annotations

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
    with pytest.raises(ProviderConnectionError, match=r"stalled: nothing arrived for 0\.5 s") as stalled:
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
