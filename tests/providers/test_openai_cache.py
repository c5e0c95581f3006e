"""Prompt caching on OpenAI-compatible servers: cached prompt tokens they report count as cache reads, and a
llama.cpp server is asked to keep its prompt cache (against a real socket)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from agentcell import Engine
from agentcell import events as ev
from agentcell.providers.openai import OpenAIProvider, llamacpp_provider
from agentcell.records.model import ModelConfig
from agentcell.usage import Usage

from .conftest import FAST, Reply, SSEServer, collect, request, sse_body


def _reply(usage: dict[str, object], **extra: object) -> Reply:
    text = {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hi."}, "finish_reason": None}]}
    stop = {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    tail = {"id": "c1", "model": "m", "choices": [], "usage": usage, **extra}
    return Reply(body=sse_body(text, stop, tail, "[DONE]"), headers={"content-type": "text/event-stream"})


async def test_vllm_cached_tokens_are_cache_reads_and_priced_so(server: SSEServer, tmp_path: Path) -> None:
    # vLLM (--enable-prompt-tokens-details) sends OpenAI's shape: prompt_tokens includes the cached ones.
    usage = {"prompt_tokens": 1200, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 1024}}
    server.queue(_reply(usage))
    provider = OpenAIProvider(name="vllm", base_url=server.url + "/v1", key_env="(none)", retry=FAST)
    with Engine(tmp_path / "db", providers={"vllm": provider}) as engine:
        agent = engine.agents.create(name="a", model="vllm:qwen")
        session = engine.sessions.create(agent=agent.id)
        result = await session.ask("hi")
        await provider.aclose()
    [end] = [e for e in result.events if isinstance(e, ev.SpanModelRequestEnd)]
    assert end.model_usage.input_tokens == 176 and end.model_usage.cache_read_input_tokens == 1024
    assert end.model_usage.list_cost == end.model_usage.uncached_cost == Decimal(0)  # self-hosted: free
    assert "cache" not in server.requests[0].body and "cache_prompt" not in server.requests[0].body


async def test_openai_cached_tokens_lower_the_list_cost_below_uncached(server: SSEServer, tmp_path: Path) -> None:
    usage = {"prompt_tokens": 2006, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 1920}}
    server.queue(_reply(usage))
    provider = OpenAIProvider(api_key="sk-test", base_url=server.url + "/v1", retry=FAST)
    with Engine(tmp_path / "db", providers={"openai": provider}) as engine:
        agent = engine.agents.create(name="a", model="openai:gpt-4o")
        session = engine.sessions.create(agent=agent.id)
        await session.ask("hi")
        await provider.aclose()
        spent = session.usage
    # gpt-4o: $2.50 in, $1.25 cached, $10 out per MTok (genai-prices).
    assert spent.list_cost == (86 * Decimal("2.5") + 1920 * Decimal("1.25") + 9 * 10) / 1_000_000
    assert spent.uncached_cost == (2006 * Decimal("2.5") + 9 * 10) / 1_000_000
    assert spent.saved_by_cache == 1920 * Decimal("1.25") / 1_000_000


@pytest.mark.parametrize(("option", "kept"), [(None, True), ("5m", True), ("1h", True), ("off", False)])
async def test_a_llama_cpp_server_is_asked_to_keep_its_prompt_cache(
    server: SSEServer, option: str | None, kept: bool
) -> None:
    server.queue(_reply({"prompt_tokens": 10, "completion_tokens": 2}))
    provider = llamacpp_provider(ModelConfig(id="smollm2", base_url=server.url + "/v1"))
    extra = {} if option is None else {"cache": option}
    try:
        await collect(provider, request(extra=extra))
    finally:
        await provider.aclose()
    [sent] = server.requests
    assert sent.body["cache_prompt"] is kept
    assert "cache" not in sent.body  # our option never reaches a server


async def test_llama_cpp_timings_stand_in_for_a_missing_cached_count(server: SSEServer) -> None:
    # An older llama-server reports the tokens it took from its cache only in its timings.
    timings = {"cache_n": 300, "prompt_n": 12, "predicted_n": 2}
    server.queue(_reply({"prompt_tokens": 312, "completion_tokens": 2}, timings=timings))
    provider = llamacpp_provider(ModelConfig(id="smollm2", base_url=server.url + "/v1"))
    try:
        _, response = await collect(provider, request())
    finally:
        await provider.aclose()
    assert response.usage == Usage(input_tokens=12, output_tokens=2, cache_read_input_tokens=300)


async def test_the_official_api_is_never_sent_a_field_it_would_refuse(server: SSEServer) -> None:
    server.queue(_reply({"prompt_tokens": 10, "completion_tokens": 2}))
    provider = OpenAIProvider(api_key="sk-test", base_url=server.url + "/v1", retry=FAST)
    try:
        await collect(provider, request(extra={"cache": "off"}).model_copy(update={"model": "gpt-4o"}))
    finally:
        await provider.aclose()
    assert not {"cache", "cache_prompt"} & set(server.requests[0].body)
