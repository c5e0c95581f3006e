"""The OpenAI-compatible provider against a real socket, including the quirks of Ollama-like servers."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agentcell.errors import (
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderProtocolError,
    ProviderStatusError,
)
from agentcell.providers.base import (
    BlockStart,
    TextDelta,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolInputDelta,
)
from agentcell.providers.openai import OpenAIProvider
from agentcell.usage import Usage

from .conftest import (
    API_KEY,
    FAST,
    Reply,
    SSEServer,
    collect,
    collect_error,
    fixture,
    json_reply,
    request,
    sse_body,
    sse_reply,
)


@pytest.fixture
async def provider(server: SSEServer) -> AsyncIterator[OpenAIProvider]:
    instance = OpenAIProvider(api_key=API_KEY, base_url=server.url + "/v1", retry=FAST)
    yield instance
    await instance.aclose()


async def test_text_and_usage_with_cached_tokens(server: SSEServer, provider: OpenAIProvider) -> None:
    server.queue(sse_reply("openai_text.sse", chunk_size=3, pause=0))
    _events, response = await collect(provider, request())
    assert response.text == "Grüße aus 東京 🗼"
    assert response.stop_reason == "end_turn"
    # prompt_tokens (2006) includes the 1920 cached ones; our input_tokens does not.
    assert response.usage == Usage(input_tokens=86, output_tokens=9, cache_read_input_tokens=1920)
    assert response.usage.total_input_tokens == 2006
    assert response.model == "gpt-4o-2024-08-06"
    (sent,) = server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    assert sent.body["stream"] is True
    assert sent.body["stream_options"] == {"include_usage": True}
    assert sent.body["max_tokens"] == 4096  # not the official host: the widely supported field


async def test_parallel_tool_calls_by_index(server: SSEServer, provider: OpenAIProvider) -> None:
    body = fixture("openai_tools.sse")
    inside = body.index("日".encode()) + 1
    server.queue(sse_reply("openai_tools.sse", splits=[inside, inside + 1]))
    events, response = await collect(provider, request())
    assert response.content == [
        ToolCallPart(id="call_abc123", name="get_weather", input={"city": "Zürich"}),
        ToolCallPart(id="call_def456", name="get_time", input={"tz": "日本/東京"}),
    ]
    assert response.stop_reason == "tool_use"
    assert [e.partial_json for e in events if isinstance(e, ToolInputDelta) and e.index == 0] == [
        '{"city": "Zü',
        'rich"}',
    ]
    assert response.usage == Usage(input_tokens=82, output_tokens=41)


async def test_server_quirks_missing_index_reused_index_resent_names_integer_ids(
    server: SSEServer, provider: OpenAIProvider
) -> None:
    server.queue(sse_reply("openai_quirks.sse"))
    events, response = await collect(provider, request())
    assert response.content == [
        ThinkingPart(thinking="Two lookups are needed."),
        ToolCallPart(id="call_one", name="get_weather", input={"city": "Zürich"}),
        ToolCallPart(id="call_two", name="get_weather", input={"city": "Bern"}),
        ToolCallPart(id="7", name="get_time", input={"tz": "CET"}),
    ]
    # Tool calls are authoritative even when the server says "stop".
    assert response.stop_reason == "tool_use"
    assert response.usage == Usage(input_tokens=120, output_tokens=60)
    assert [e.index for e in events if isinstance(e, BlockStart)] == [0, 1, 2, 3]


async def test_reasoning_content_becomes_thinking_and_length_is_max_tokens(
    server: SSEServer, provider: OpenAIProvider
) -> None:
    server.queue(sse_reply("openai_reasoning.sse"))
    _, response = await collect(provider, request())
    assert response.content == [
        ThinkingPart(thinking="Let me think… 2 + 2 = 4."),
        TextPart(text="The answer is 4."),
    ]
    assert response.stop_reason == "max_tokens"
    assert response.usage == Usage(input_tokens=15, output_tokens=20)


def _call_chunks(arguments: str, finish: str) -> bytes:
    fragment = {"index": 0, "id": "call_1", "function": {"name": "get_weather", "arguments": arguments}}
    return sse_body(
        {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [fragment]}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        "[DONE]",
    )


async def test_a_tool_call_cut_by_max_tokens_says_so_rather_than_blaming_the_json(
    server: SSEServer, provider: OpenAIProvider
) -> None:
    server.queue(Reply(body=_call_chunks('{"city": "Zür', "length"), headers={"content-type": "text/event-stream"}))
    _, error = await collect_error(provider, request())
    assert type(error) is ProviderError and error.error_type == "max_tokens" and not error.retryable
    assert "max_tokens" in str(error) and "'get_weather'" in str(error) and "JSON" not in str(error)
    assert len(server.requests) == 1


async def test_max_tokens_is_the_stop_reason_even_after_a_whole_tool_call(
    server: SSEServer, provider: OpenAIProvider
) -> None:
    server.queue(Reply(body=_call_chunks('{"city": "Bern"}', "length"), headers={"content-type": "text/event-stream"}))
    _, response = await collect(provider, request())
    assert response.stop_reason == "max_tokens"
    assert response.content == [ToolCallPart(id="call_1", name="get_weather", input={"city": "Bern"})]
    server.queue(Reply(body=_call_chunks("", "stop"), headers={"content-type": "text/event-stream"}))
    _, response = await collect(provider, request())
    assert response.stop_reason == "tool_use"  # calls still outrank a plain "stop"


async def test_refusal_delta_is_text_and_a_refusal(server: SSEServer, provider: OpenAIProvider) -> None:
    body = sse_body(
        {"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "refusal": "I can't help."}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        "[DONE]",
    )
    server.queue(Reply(body=body, headers={"content-type": "text/event-stream"}))
    _, response = await collect(provider, request())
    assert response.text == "I can't help."
    assert response.stop_reason == "refusal"
    assert response.stop_details == {"type": "refusal", "explanation": "I can't help."}


async def test_an_error_chunk_after_output_is_typed(server: SSEServer, provider: OpenAIProvider) -> None:
    server.queue(sse_reply("openai_error.sse"), sse_reply("openai_text.sse"))
    events, error = await collect_error(provider, request())
    assert isinstance(error, ProviderStatusError) and error.retryable and error.error_type == "server_error"
    assert "The server had an error" in str(error)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Half an ans"]
    assert len(server.requests) == 1


async def test_a_cut_before_output_is_retried_and_a_cut_after_is_raised(
    server: SSEServer, provider: OpenAIProvider
) -> None:
    body = fixture("openai_text.sse")
    server.queue(
        sse_reply("openai_text.sse", cut_after=body.index(b"Gr")),
        sse_reply("openai_text.sse", cut_after=body.index("東".encode()) + 2),
    )
    events, error = await collect_error(provider, request())
    assert isinstance(error, ProviderConnectionError) and error.retryable
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Grüße aus "]
    assert len(server.requests) == 2


async def test_eof_after_the_finish_reason_without_done_still_completes(
    server: SSEServer, provider: OpenAIProvider
) -> None:
    body = fixture("openai_text.sse").replace(b"data: [DONE]\n\n", b"")
    server.queue(Reply(body=body, headers={"content-type": "text/event-stream"}))
    _, response = await collect(provider, request())
    assert response.text == "Grüße aus 東京 🗼" and response.usage.cache_read_input_tokens == 1920


async def test_malformed_chunk_is_a_protocol_error(server: SSEServer, provider: OpenAIProvider) -> None:
    body = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"ok"}}]}\n\ndata: {"choices": [\n\n'
    server.queue(Reply(body=body, headers={"content-type": "text/event-stream"}))
    events, error = await collect_error(provider, request())
    assert isinstance(error, ProviderProtocolError)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["ok"]


async def test_a_tool_call_that_never_names_its_function_is_a_protocol_error(
    server: SSEServer, provider: OpenAIProvider
) -> None:
    nameless = {"index": 0, "id": "x", "function": {"arguments": "{}"}}
    body = sse_body(
        {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [nameless]}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        "[DONE]",
    )
    server.queue(Reply(body=body, headers={"content-type": "text/event-stream"}))
    _, error = await collect_error(provider, request())
    assert isinstance(error, ProviderProtocolError) and "never named" in str(error)


async def test_ollama_error_strings_and_401(server: SSEServer, provider: OpenAIProvider) -> None:
    server.queue(json_reply(404, {"error": "model 'llama9' not found, try pulling it first"}))
    _, error = await collect_error(provider, request())
    assert isinstance(error, ProviderStatusError) and "llama9' not found" in str(error)
    server.queue(
        json_reply(
            401,
            {"error": {"message": f"Incorrect API key provided: {API_KEY}", "type": "invalid_request_error"}},
        )
    )
    _, error = await collect_error(provider, request())
    assert isinstance(error, ProviderAuthError) and "OPENAI_API_KEY" in str(error)
    assert API_KEY not in str(error)


async def test_the_official_host_needs_a_key_and_uses_max_completion_tokens() -> None:
    provider = OpenAIProvider(base_url="https://api.openai.com/v1")
    _, error = await collect_error(provider, request())
    await provider.aclose()
    assert isinstance(error, ProviderAuthError) and "OPENAI_API_KEY" in str(error)

    from agentcell.providers.openai import build_body

    assert "max_completion_tokens" in build_body(request(), max_tokens_field="max_completion_tokens")


async def test_a_keyless_local_server_gets_no_authorization_header(server: SSEServer) -> None:
    provider = OpenAIProvider(name="ollama", base_url=server.url + "/v1/", retry=FAST)
    server.queue(sse_reply("openai_text.sse"))
    await collect(provider, request())
    await provider.aclose()
    (sent,) = server.requests
    assert "authorization" not in sent.headers
    assert sent.path == "/v1/chat/completions"
