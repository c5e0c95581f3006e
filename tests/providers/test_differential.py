"""Differential tests: the official SDKs read the same bytes from the same server; the results must agree.

The SDKs are the reference for how a stream accumulates. The only intended difference: server-side blocks
(server_tool_use, web_search_tool_result, container_upload) have no provider-neutral part yet, so they are
left out of the SDK's content before comparing.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest

from agentcell.errors import ProviderError
from agentcell.providers.anthropic import AnthropicProvider
from agentcell.providers.base import (
    ModelResponse,
    RedactedThinkingPart,
    ResponsePart,
    ServerToolCallPart,
    ServerToolResultPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from agentcell.providers.openai import OpenAIProvider
from agentcell.usage import CacheCreation, ServerToolUse, Usage

from .conftest import API_KEY, FAST, Reply, SSEServer, collect, fixture, request, sse_reply

ANTHROPIC_FIXTURES = [
    "anthropic_text.sse",
    "anthropic_thinking_tool.sse",
    "anthropic_cache.sse",
    "anthropic_pause_turn.sse",
    "anthropic_refusal.sse",
    "anthropic_unknown.sse",
    "anthropic_redacted.sse",
]


def _sdk_part(block: Any) -> ResponsePart | None:
    match block.type:
        case "text":
            citations = [c.model_dump(mode="json", exclude_none=True) for c in block.citations or []]
            return TextPart(text=block.text, citations=citations or None)
        case "thinking":
            return ThinkingPart(thinking=block.thinking, signature=block.signature or None)
        case "redacted_thinking":
            return RedactedThinkingPart(data=block.data)
        case "tool_use":
            return ToolCallPart(id=block.id, name=block.name, input=block.input)
        case "server_tool_use":
            return ServerToolCallPart(id=block.id, name=block.name, input=block.input)
        case "web_search_tool_result" | "web_fetch_tool_result":
            content = block.model_dump(mode="json", exclude_none=True)["content"]
            return ServerToolResultPart(call_id=block.tool_use_id, kind=block.type, content=content)
    return None


def _sdk_usage(usage: Any) -> Usage:
    split = usage.cache_creation
    five = split.ephemeral_5m_input_tokens if split else (usage.cache_creation_input_tokens or 0)
    hour = split.ephemeral_1h_input_tokens if split else 0
    tools = usage.server_tool_use
    return Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_input_tokens=usage.cache_read_input_tokens or 0,
        cache_creation=CacheCreation(ephemeral_5m_input_tokens=five, ephemeral_1h_input_tokens=hour),
        server_tool_use=ServerToolUse(web_search_requests=tools.web_search_requests) if tools else None,
    )


async def _anthropic_sdk(server: SSEServer) -> Any:
    client = anthropic.AsyncAnthropic(api_key=API_KEY, base_url=server.url, max_retries=0)
    try:
        async with client.messages.stream(
            model="claude-sonnet-5-5", max_tokens=4096, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            return await stream.get_final_message()
    finally:
        await client.close()


async def _ours(server: SSEServer) -> ModelResponse:
    provider = AnthropicProvider(api_key=API_KEY, base_url=server.url, retry=FAST)
    try:
        return (await collect(provider, request()))[1]
    finally:
        await provider.aclose()


@pytest.mark.parametrize("name", ANTHROPIC_FIXTURES)
@pytest.mark.parametrize("split", ["whole", "utf8"])
async def test_anthropic_sdk_and_we_agree(server: SSEServer, name: str, split: str) -> None:
    # This SDK parses the JSON of events it does not know; we skip them unread. Leave out the one unknown
    # event whose data is not JSON (test_anthropic covers it) so the SDK can read the rest.
    body = fixture(name).replace(b"event: future_event_without_json\ndata: not json at all\n\n", b"")
    splits = [i for i in range(1, len(body)) if body[i] & 0xC0 == 0x80] if split == "utf8" else []
    reply = Reply(body=body, headers={"content-type": "text/event-stream"}, splits=splits, pause=0)
    server.queue(reply, reply)
    reference = await _anthropic_sdk(server)
    ours = await _ours(server)
    expected = [p for p in map(_sdk_part, reference.content) if p is not None]
    assert ours.content == expected
    assert ours.stop_reason == reference.stop_reason
    if reference.stop_details is not None:
        assert ours.stop_details == reference.stop_details.model_dump(mode="json")
    assert ours.usage == _sdk_usage(reference.usage)
    assert ours.model == reference.model


@pytest.mark.parametrize("name", ["anthropic_error_midstream.sse", "anthropic_malformed.sse"])
async def test_anthropic_sdk_and_we_both_fail_on_a_broken_stream(server: SSEServer, name: str) -> None:
    server.queue(sse_reply(name), sse_reply(name))
    with pytest.raises((anthropic.APIError, ValueError)) as reference:  # malformed JSON: a bare ValueError
        await _anthropic_sdk(server)
    with pytest.raises(ProviderError) as ours:
        await _ours(server)
    if name == "anthropic_error_midstream.sse":
        assert isinstance(reference.value, anthropic.APIStatusError)
        assert ours.value.error_type == reference.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]


OPENAI_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


@pytest.mark.parametrize("name", ["openai_text.sse", "openai_tools.sse", "openai_reasoning.sse"])
async def test_openai_sdk_and_we_agree(server: SSEServer, name: str) -> None:
    body = fixture(name)
    splits = [i for i in range(1, len(body)) if body[i] & 0xC0 == 0x80]
    server.queue(sse_reply(name, splits=splits, pause=0), sse_reply(name, splits=splits, pause=0))
    client = openai.AsyncOpenAI(api_key=API_KEY, base_url=server.url + "/v1", max_retries=0)
    try:
        async with client.chat.completions.stream(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            async for _ in stream:
                pass
            # The snapshot, not get_final_completion(), which refuses a "length" finish.
            reference = stream.current_completion_snapshot
    finally:
        await client.close()
    provider = OpenAIProvider(api_key=API_KEY, base_url=server.url + "/v1", retry=FAST)
    _, ours = await collect(provider, request())
    await provider.aclose()

    choice = reference.choices[0]
    assert ours.text == (choice.message.content or "")
    assert ours.tool_calls == [
        ToolCallPart(id=c.id, name=c.function.name, input=json.loads(c.function.arguments))
        for c in choice.message.tool_calls or []
    ]
    assert ours.stop_reason == OPENAI_STOP[choice.finish_reason]
    usage = reference.usage
    assert usage is not None
    cached = usage.prompt_tokens_details.cached_tokens if usage.prompt_tokens_details else 0
    assert ours.usage.total_input_tokens == usage.prompt_tokens
    assert ours.usage.cache_read_input_tokens == (cached or 0)
    assert ours.usage.output_tokens == usage.completion_tokens
