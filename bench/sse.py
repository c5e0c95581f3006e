"""SSE throughput over loopback: 20,000 Anthropic text deltas in one response.

Three readers of the same bytes from the same local server (a separate process, so it does not share the
client's GIL): our AnthropicProvider (SSE decode, JSON, typed stream events, retry bookkeeping), raw
httpx + httpx-sse + json.loads (the limit: no events built at all), and the official anthropic SDK's
``messages.stream`` (the peer). Prints deltas per second and the ratios.

    .venv/bin/python bench/sse.py [--deltas 20000] [--repeat 5]

Targets: ours >= 0.8x raw, and >= 5x the SDK.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WRITE_SIZE = 16 * 1024
"""The server writes the body in pieces of this size, about what one loopback read returns anyway."""


def build_body(deltas: int) -> bytes:
    def event(name: str, payload: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()

    usage = {
        "input_tokens": 10,
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    message: dict[str, Any] = {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    parts = [
        event("message_start", {"type": "message_start", "message": message}),
        event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
    ]
    words = ["Hello", " wörld", ", this", " is", " token", " 日本", " text", "."]
    for i in range(deltas):
        delta = {"type": "text_delta", "text": words[i % len(words)]}
        parts.append(event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}))
    parts += [
        event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": deltas},
            },
        ),
        event("message_stop", {"type": "message_stop"}),
    ]
    return b"".join(parts)


def serve(deltas: int) -> None:
    body = build_body(deltas)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            for start in range(0, len(body), WRITE_SIZE):
                self.wfile.write(body[start : start + WRITE_SIZE])
            self.wfile.flush()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


# ---------------------------------------------------------------------------------------------- readers


async def ours(url: str) -> int:
    from agentcell.providers.anthropic import AnthropicProvider
    from agentcell.providers.base import Message, ModelRequest, TextDelta, TextPart

    provider = AnthropicProvider(api_key="bench-key", base_url=url)
    request = ModelRequest(model="claude-sonnet-5-5", messages=[Message(role="user", content=[TextPart(text="hi")])])
    count = 0
    try:
        async for event in provider.stream(request):
            if type(event) is TextDelta:
                count += 1
    finally:
        await provider.aclose()
    return count


async def raw(url: str) -> int:
    import httpx
    from httpx_sse import aconnect_sse

    count = 0
    body = {"model": "claude-sonnet-5-5", "max_tokens": 10, "messages": [], "stream": True}
    async with (
        httpx.AsyncClient() as client,
        aconnect_sse(client, "POST", url + "/v1/messages", json=body) as source,
    ):
        async for sse in source.aiter_sse():
            data = json.loads(sse.data)
            if data["type"] == "content_block_delta":
                count += 1
    return count


async def sdk(url: str) -> int:
    import anthropic

    client = anthropic.AsyncAnthropic(api_key="bench-key", base_url=url, max_retries=0)
    count = 0
    try:
        async with client.messages.stream(
            model="claude-sonnet-5-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            async for event in stream:
                if event.type == "text":
                    count += 1
    finally:
        await client.close()
    return count


async def measure(reader: Callable[[str], Awaitable[int]], url: str, deltas: int, repeat: int) -> float:
    rates = []
    for _ in range(repeat):
        started = time.perf_counter()
        count = await reader(url)
        elapsed = time.perf_counter() - started
        if count != deltas:
            raise SystemExit(f"{reader.__name__} saw {count} deltas, expected {deltas}")
        rates.append(count / elapsed)
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.deltas)
        return
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--deltas", str(args.deltas)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        url = f"http://127.0.0.1:{child.stdout.readline().strip()}"

        async def run() -> dict[str, float]:
            await ours(url)  # warm up imports and the server
            return {r.__name__: await measure(r, url, args.deltas, args.repeat) for r in (raw, ours, sdk)}

        rates = asyncio.run(run())
    finally:
        child.terminate()
        child.wait(5)
    print(f"{args.deltas} text deltas per response, median of {args.repeat} runs, 127.0.0.1")
    for name, label in (
        ("raw", "raw httpx-sse + json.loads"),
        ("ours", "agentcell AnthropicProvider"),
        ("sdk", "anthropic SDK messages.stream"),
    ):
        print(f"  {label:32} {rates[name]:>10,.0f} deltas/s")
    print(f"  ours / raw = {rates['ours'] / rates['raw']:.2f}x  (target >= 0.8x)")
    print(f"  ours / sdk = {rates['ours'] / rates['sdk']:.2f}x  (target >= 5x)")


if __name__ == "__main__":
    main()
