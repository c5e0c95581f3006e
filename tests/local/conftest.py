"""Fixtures for the local-model tests: the bundled GGUF file, requests, and a real llama.cpp server."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentcell.providers.base import (
    Message,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    Provider,
    ResponseAccumulator,
    StreamEvent,
    TextPart,
    ToolSchema,
)
from agentcell.providers.local import LocalProvider, resolve_model_path

SEED = 1234

WEATHER_TOOL = ToolSchema(
    name="get_weather",
    description="Get the weather forecast for a city.",
    input_schema={
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer"},
            "hourly": {"type": "boolean"},
            "fields": {
                "type": "array",
                "items": {"type": "string", "enum": ["rain", "wind", "sun"]},
                "maxItems": 3,
            },
            "place": {
                "type": "object",
                "properties": {"country": {"type": "string"}, "region": {"type": "string"}},
                "required": ["country"],
            },
        },
        "required": ["city", "unit", "days", "place"],
        "additionalProperties": False,
    },
)
CLOCK_TOOL = ToolSchema(
    name="get_time",
    description="Get the current time in a time zone.",
    input_schema={"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]},
)


def request(
    prompt: str,
    *,
    max_tokens: int = 24,
    tools: list[ToolSchema] | None = None,
    tool_choice: str | None = None,
    stop: list[str] | None = None,
) -> ModelRequest:
    """A deterministic request: greedy decoding, fixed seed."""
    settings = ModelSettings(
        max_tokens=max_tokens,
        temperature=0,
        tool_choice=tool_choice,
        stop_sequences=stop or [],
        extra={"seed": SEED, "repeat_penalty": 1.0},  # llama_cpp.server would default to 1.1
    )
    return ModelRequest(
        model="smollm2",
        messages=[Message(role="user", content=[TextPart(text=prompt)])],
        tools=tools or [],
        settings=settings,
    )


async def collect(provider: Provider, req: ModelRequest) -> tuple[list[StreamEvent], ModelResponse]:
    events: list[StreamEvent] = []
    accumulator = ResponseAccumulator()
    async for event in provider.stream(req):
        events.append(event)
        accumulator.add(event)
    return events, accumulator.finish()


@pytest.fixture(scope="session")
def gguf() -> Path:
    return resolve_model_path("smollm2")


@pytest.fixture
async def provider() -> AsyncIterator[LocalProvider]:
    local = LocalProvider("smollm2")
    yield local
    await local.aclose()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def llama_server(gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``llama_cpp.server`` on a free loopback port; yields its OpenAI-compatible base URL."""
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--seed", str(SEED)]
    with log_path.open("wb") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_until_up(server, base_url, log_path)
        yield base_url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _wait_until_up(server: subprocess.Popen[Any], base_url: str, log_path: Path) -> None:
    deadline = time.monotonic() + 30
    with httpx.Client(timeout=2) as client:
        while time.monotonic() < deadline:
            if server.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {server.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                if client.get(f"{base_url}/models").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
    pytest.fail(f"llama_cpp.server did not answer within 30 s:\n{log_path.read_text()[-3000:]}")
