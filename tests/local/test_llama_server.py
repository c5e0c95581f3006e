"""A real peer: the engine's OpenAI-compatible provider against ``llama_cpp.server`` on the bundled model."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import jsonschema
import pytest

from agentcell.providers.base import TextDelta, ToolCallPart, ToolInputDelta
from agentcell.providers.local import LocalProvider
from agentcell.providers.openai import OpenAIProvider, build_body, llamacpp_provider
from agentcell.records.model import ModelConfig

from .conftest import WEATHER_TOOL, collect, request

pytestmark = pytest.mark.slow


@pytest.fixture
async def peer(llama_server: str) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider(name="llama-cpp", base_url=llama_server, key_env="(none)")
    yield provider
    await provider.aclose()


async def _sse(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    chunks: list[dict[str, Any]] = []
    async with client.stream("POST", url, json=body) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                chunks.append(json.loads(line.removeprefix("data: ")))
    return chunks


async def test_the_server_accepts_our_request_shapes(llama_server: str) -> None:
    body = build_body(request("Say hello.", max_tokens=12))
    async with httpx.AsyncClient(timeout=30) as client:
        chunks = await _sse(client, f"{llama_server}/chat/completions", body)
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
        assert text.strip() and chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length")
        # llama_cpp.server ignores stream_options.include_usage: streamed replies carry no usage, so
        # OpenAIProvider cannot count tokens against it. It counts them when not streaming.
        assert not any(c.get("usage") for c in chunks)
        reply = (await client.post(f"{llama_server}/chat/completions", json={**body, "stream": False})).json()
    assert reply["choices"][0]["message"]["content"] == text
    assert reply["usage"]["prompt_tokens"] > 10 and 0 < reply["usage"]["completion_tokens"] <= 12


async def test_openai_provider_streams_the_same_text_as_the_embedded_model(peer: OpenAIProvider) -> None:
    req = request("What is the capital of France?", max_tokens=16)
    events, response = await collect(peer, req)
    assert any(isinstance(e, TextDelta) for e in events) and response.text.strip()
    assert response.stop_reason in ("end_turn", "max_tokens")
    assert peer.pricing("smollm2")(response.usage) == 0
    # Same weights, same chat template, greedy decoding: in-process llama.cpp answers identically, and
    # its exact prompt count matches the server's own.
    local = LocalProvider("smollm2", n_ctx=2048)
    try:
        _, embedded = await collect(local, req)
    finally:
        await local.aclose()
    assert embedded.text == response.text
    async with httpx.AsyncClient(timeout=30) as client:
        body = {**build_body(req), "stream": False}
        reply = (await client.post(f"{peer.base_url}/chat/completions", json=body)).json()
    assert embedded.usage.input_tokens == reply["usage"]["prompt_tokens"]
    assert embedded.usage.output_tokens == reply["usage"]["completion_tokens"]
    # The server streams no usage; the provider counts one output token per content chunk (exact here)
    # and estimates the input.
    assert response.usage.output_tokens == reply["usage"]["completion_tokens"]
    assert response.usage.input_tokens > 0


async def test_openai_provider_receives_a_forced_tool_call(peer: OpenAIProvider) -> None:
    req = request(
        "Will it rain in Lyon over the next three days?",
        max_tokens=120,
        tools=[WEATHER_TOOL],
        tool_choice="get_weather",
    )
    events, response = await collect(peer, req)
    assert response.stop_reason == "tool_use"
    [call] = response.content
    assert isinstance(call, ToolCallPart) and call.name == "get_weather" and call.id
    jsonschema.validate(call.input, WEATHER_TOOL.input_schema)
    assert any(isinstance(e, ToolInputDelta) for e in events)


async def test_the_llama_cpp_provider_asks_the_real_server_to_keep_its_prompt_cache(llama_server: str) -> None:
    # llama_cpp.server (llama-cpp-python's) reuses its prompt's prefix on its own and ignores the field;
    # llama.cpp's own llama-server honours it (older ones default it to off). Either must accept it.
    provider = llamacpp_provider(ModelConfig(id="smollm2", base_url=llama_server))
    req = request("What is the capital of France?", max_tokens=8)
    assert build_body(req, llama_cpp=True)["cache_prompt"] is True
    try:
        first = (await collect(provider, req))[1]
        again = (await collect(provider, req))[1]
    finally:
        await provider.aclose()
    assert first.text.strip() and again.text == first.text
