"""The Anthropic provider against a real socket: every event type, byte splits, usage, stop reasons."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from agentcell.errors import ProviderConnectionError, ProviderError, ProviderProtocolError, ProviderStatusError
from agentcell.providers.anthropic import AnthropicProvider
from agentcell.providers.base import (
    BlockStart,
    BlockStop,
    CitationDelta,
    RedactedThinkingPart,
    ResponseEnd,
    ResponseStart,
    ServerToolCallPart,
    ServerToolResultPart,
    SignatureDelta,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ThinkingPart,
    ToolCallPart,
    ToolInputDelta,
    UsageUpdate,
)
from agentcell.usage import CacheCreation, ServerToolUse, Usage

from .conftest import API_KEY, FAST, Reply, SSEServer, collect, collect_error, fixture, request, sse_reply


@pytest.fixture
async def provider(server: SSEServer) -> AsyncIterator[AnthropicProvider]:
    instance = AnthropicProvider(api_key=API_KEY, base_url=server.url, retry=FAST)
    yield instance
    await instance.aclose()


async def test_a_text_stream_becomes_events_in_order(server: SSEServer, provider: AnthropicProvider) -> None:
    server.queue(sse_reply("anthropic_text.sse"))
    events, response = await collect(provider, request())
    assert [type(e) for e in events] == [
        ResponseStart,
        UsageUpdate,
        BlockStart,
        TextDelta,
        TextDelta,
        TextDelta,
        BlockStop,
        UsageUpdate,
        ResponseEnd,
    ]
    assert events[0] == ResponseStart(model="claude-sonnet-4-5-20250929", response_id="msg_01TextXyz")
    assert response.text == "Héllo, wörld — 日本語で こんにちは 🎉!"
    assert response.stop_reason == "end_turn"
    assert response.usage == Usage(input_tokens=25, output_tokens=12)
    (sent,) = server.requests
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == API_KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "anthropic-beta" not in sent.headers
    assert sent.body["stream"] is True and sent.body["model"] == "claude-sonnet-4-5"


def _utf8_splits(body: bytes) -> list[int]:
    """An offset inside every multi-byte character: TCP writes that end mid-character."""
    return [i for i in range(1, len(body)) if body[i] & 0xC0 == 0x80]


@pytest.mark.parametrize(
    "split",
    [
        pytest.param({"splits": "utf8"}, id="inside-every-multibyte-character"),
        pytest.param({"chunk_size": 1}, id="one-byte-writes"),
        pytest.param({"chunk_size": 7}, id="seven-byte-writes"),
    ],
)
async def test_any_split_of_the_bytes_gives_the_same_response(
    server: SSEServer, provider: AnthropicProvider, split: dict[str, object]
) -> None:
    body = fixture("anthropic_thinking_tool.sse")
    server.queue(sse_reply("anthropic_thinking_tool.sse"))
    _, whole = await collect(provider, request())
    if split.get("splits") == "utf8":
        offsets = _utf8_splits(body)
        inside_tool_input = body.index("日本".encode(), body.index(b"input_json_delta")) + 1
        assert inside_tool_input in offsets  # a write really ends inside a character of the tool input
        server.queue(sse_reply("anthropic_thinking_tool.sse", splits=offsets, pause=0.0005))
    else:
        server.queue(sse_reply("anthropic_thinking_tool.sse", chunk_size=split["chunk_size"], pause=0))  # type: ignore[arg-type]
    _, pieces = await collect(provider, request())
    assert pieces == whole
    assert pieces.tool_calls[0].input == {"city": "Zürich", "unit": "°C", "note": "日本語 🌧"}


async def test_thinking_signature_text_and_tool_use(server: SSEServer, provider: AnthropicProvider) -> None:
    server.queue(sse_reply("anthropic_thinking_tool.sse"))
    events, response = await collect(provider, request())
    assert response.content == [
        ThinkingPart(
            thinking="The user wants the weather in Zürich. I should call get_weather — with °C.",
            signature="EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
        ),
        TextPart(text="Let me check the weather in Zürich ☀️"),
        ToolCallPart(
            id="toolu_01A09q90qw90lq917835lq9",
            name="get_weather",
            input={"city": "Zürich", "unit": "°C", "note": "日本語 🌧"},
        ),
    ]
    assert response.stop_reason == "tool_use"
    assert sum(isinstance(e, ThinkingDelta) for e in events) == 2
    assert sum(isinstance(e, SignatureDelta) for e in events) == 1
    # The empty first input_json_delta carries nothing and is not passed on.
    assert [e.partial_json for e in events if isinstance(e, ToolInputDelta)] == [
        '{"city": "Zü',
        'rich", "unit": "°C", "note": "日本',
        '語 🌧"}',
    ]
    assert response.usage == Usage(input_tokens=512, output_tokens=89)


async def test_cache_usage_keeps_the_ttl_split(server: SSEServer, provider: AnthropicProvider) -> None:
    server.queue(sse_reply("anthropic_cache.sse"))
    events, response = await collect(provider, request())
    expected = Usage(
        input_tokens=21,
        output_tokens=7,
        cache_read_input_tokens=1800,
        cache_creation=CacheCreation(ephemeral_5m_input_tokens=200, ephemeral_1h_input_tokens=300),
    )
    assert response.usage == expected
    first = next(e for e in events if isinstance(e, UsageUpdate))
    assert first.usage.output_tokens == 1 and first.usage.cache_creation_input_tokens == 500


async def test_pause_turn_keeps_server_blocks_and_citations_and_counts_searches(
    server: SSEServer, provider: AnthropicProvider
) -> None:
    """Seed 002 server tools: their server_tool_use and result blocks are kept (for the log and the history)."""
    server.queue(sse_reply("anthropic_pause_turn.sse"))
    events, response = await collect(provider, request())
    assert response.stop_reason == "pause_turn"
    assert [type(p) for p in response.content] == [TextPart, ServerToolCallPart, ServerToolResultPart, TextPart]
    call, result = response.content[1], response.content[2]
    assert isinstance(call, ServerToolCallPart) and (call.name, call.input) == (
        "web_search",
        {"query": "weather Zürich"},
    )
    assert isinstance(result, ServerToolResultPart) and result.call_id == call.id
    assert result.kind == "web_search_tool_result" and result.content[0]["url"] == "https://example.com/zurich"
    assert response.text == "I'll search for that.It is mild, 18 °C."
    cited = response.content[3]
    assert isinstance(cited, TextPart) and cited.citations is not None
    assert cited.citations[0]["cited_text"] == "Mild, 18 °C"
    assert sum(isinstance(e, CitationDelta) for e in events) == 1
    assert {e.index for e in events if isinstance(e, BlockStart)} == {0, 1, 2, 3}
    assert response.usage.server_tool_use == ServerToolUse(web_search_requests=1)
    assert response.usage.output_tokens == 510


async def test_refusal_passes_its_stop_details(server: SSEServer, provider: AnthropicProvider) -> None:
    server.queue(sse_reply("anthropic_refusal.sse"))
    _, response = await collect(provider, request())
    assert response.stop_reason == "refusal"
    assert response.stop_details == {
        "type": "refusal",
        "category": "cyber",
        "explanation": "This request would facilitate harm.",
    }


async def test_redacted_thinking_passes_through_untouched(server: SSEServer, provider: AnthropicProvider) -> None:
    server.queue(sse_reply("anthropic_redacted.sse"))
    _, response = await collect(provider, request())
    assert response.content[0] == RedactedThinkingPart(
        data="EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj2pabUmIiwJKs5bZzS6NQ=="
    )
    assert response.stop_reason == "max_tokens"


async def test_pings_comments_unknown_events_deltas_and_blocks_are_ignored(
    server: SSEServer, provider: AnthropicProvider
) -> None:
    server.queue(sse_reply("anthropic_unknown.sse"))
    events, response = await collect(provider, request())
    assert response.text == "Known text."  # the second delta's data spans two data: lines
    assert [e.index for e in events if isinstance(e, BlockStart)] == [0]  # container_upload is not ours
    assert response.stop_reason == "end_turn"


async def test_crlf_line_ends_parse_the_same(server: SSEServer, provider: AnthropicProvider) -> None:
    body = fixture("anthropic_thinking_tool.sse").replace(b"\n", b"\r\n")
    server.queue(Reply(body=body, headers={"content-type": "text/event-stream"}, chunk_size=5, pause=0))
    _, response = await collect(provider, request())
    assert response.tool_calls[0].input["city"] == "Zürich"


@pytest.mark.parametrize(
    "reason",
    [
        "end_turn",
        "max_tokens",
        "stop_sequence",
        "tool_use",
        "pause_turn",
        "refusal",
        "model_context_window_exceeded",
    ],
)
async def test_every_stop_reason_is_passed_on(server: SSEServer, provider: AnthropicProvider, reason: str) -> None:
    body = fixture("anthropic_text.sse").replace(
        b'"stop_reason":"end_turn","stop_sequence":null',
        (
            b'"stop_reason":"%s","stop_sequence":%s'
            % (reason.encode(), b'"###"' if reason == "stop_sequence" else b"null")
        ),
    )
    server.queue(Reply(body=body, headers={"content-type": "text/event-stream"}))
    _, response = await collect(provider, request())
    assert response.stop_reason == reason
    if reason == "stop_sequence":
        assert response.stop_details == {"type": "stop_sequence", "stop_sequence": "###"}


async def test_malformed_data_after_output_is_a_protocol_error(server: SSEServer, provider: AnthropicProvider) -> None:
    server.queue(sse_reply("anthropic_malformed.sse"), sse_reply("anthropic_text.sse"))
    events, error = await collect_error(provider, request())
    assert isinstance(error, ProviderProtocolError)
    assert "malformed JSON" in str(error)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Fine."]
    assert len(server.requests) == 1  # output was shown: the engine, not the provider, decides to retry


async def test_a_mid_stream_error_event_after_output_is_typed_and_not_retried_here(
    server: SSEServer, provider: AnthropicProvider
) -> None:
    server.queue(sse_reply("anthropic_error_midstream.sse"), sse_reply("anthropic_text.sse"))
    events, error = await collect_error(provider, request())
    assert isinstance(error, ProviderStatusError)
    assert error.error_type == "overloaded_error" and error.retryable
    assert "Overloaded" in str(error)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Partial answ"]
    assert len(server.requests) == 1


async def test_an_error_event_before_any_output_is_retried_invisibly(
    server: SSEServer, provider: AnthropicProvider
) -> None:
    server.queue(sse_reply("anthropic_error_early.sse"), sse_reply("anthropic_text.sse"))
    events, response = await collect(provider, request())
    assert len(server.requests) == 2
    # The failed attempt's message_start and block start were held back, never yielded.
    assert sum(isinstance(e, ResponseStart) for e in events) == 1
    assert [e.response_id for e in events if isinstance(e, ResponseStart)] == ["msg_01TextXyz"]
    assert response.text == "Héllo, wörld — 日本語で こんにちは 🎉!"


async def test_a_cut_after_output_raises_a_retryable_connection_error(
    server: SSEServer, provider: AnthropicProvider
) -> None:
    body = fixture("anthropic_text.sse")
    cut = body.index(b"\xe6\x97\xa5") + 1  # inside 日, after the first delta went out
    server.queue(sse_reply("anthropic_text.sse", cut_after=cut))
    events, error = await collect_error(provider, request())
    assert isinstance(error, ProviderConnectionError) and error.retryable
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Héllo, wörld"]
    assert len(server.requests) == 1


@pytest.mark.parametrize("framing", ["chunked", "close"])
async def test_a_cut_before_any_output_is_retried(server: SSEServer, provider: AnthropicProvider, framing: str) -> None:
    body = fixture("anthropic_text.sse")
    cut = body.index(b"event: content_block_delta")
    server.queue(sse_reply("anthropic_text.sse", cut_after=cut, framing=framing), sse_reply("anthropic_text.sse"))
    _, response = await collect(provider, request())
    assert response.text.startswith("Héllo")
    assert len(server.requests) == 2


async def test_a_body_that_ends_without_message_stop_is_a_cut(server: SSEServer, provider: AnthropicProvider) -> None:
    body = fixture("anthropic_text.sse")
    truncated = body[: body.index(b"event: message_delta")]
    server.queue(Reply(body=truncated, headers={"content-type": "text/event-stream"}))
    events, error = await collect_error(provider, request())
    assert isinstance(error, ProviderConnectionError) and error.retryable
    assert "before message_stop" in str(error)
    assert any(isinstance(e, TextDelta) for e in events)


async def test_a_stream_without_event_names_dispatches_on_the_payload_type(
    server: SSEServer, provider: AnthropicProvider
) -> None:
    body = b"\n".join(
        line for line in fixture("anthropic_thinking_tool.sse").split(b"\n") if not line.startswith(b"event:")
    )
    server.queue(Reply(body=body, headers={"content-type": "text/event-stream"}))
    _, response = await collect(provider, request())
    assert response.tool_calls[0].input["note"] == "日本語 🌧"
    assert response.content[0] == ThinkingPart(
        thinking="The user wants the weather in Zürich. I should call get_weather — with °C.",
        signature="EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
    )


async def test_a_cut_inside_a_tool_only_response_is_retried_by_the_provider(
    server: SSEServer, provider: AnthropicProvider
) -> None:
    # The engine shows nothing of a tool call while it streams, so the provider must retry this itself.
    body = fixture("anthropic_thinking_tool.sse")
    start = body.index(b'event: content_block_start\ndata: {"type":"content_block_start","index":2')
    tool_only = body[: body.index(b"event: content_block_start")] + body[start:]
    cut = tool_only.index("日本".encode()) + 1
    reply = Reply(body=tool_only, headers={"content-type": "text/event-stream"})
    server.queue(
        Reply(body=tool_only, headers=reply.headers, cut_after=cut),
        reply,
    )
    events, response = await collect(provider, request())
    assert len(server.requests) == 2
    assert response.tool_calls[0].input == {"city": "Zürich", "unit": "°C", "note": "日本語 🌧"}
    assert sum(isinstance(e, BlockStart) for e in events) == 1
    assert API_KEY not in repr(events)


async def test_a_cut_after_thinking_was_shown_is_raised(server: SSEServer, provider: AnthropicProvider) -> None:
    body = fixture("anthropic_thinking_tool.sse")
    server.queue(sse_reply("anthropic_thinking_tool.sse", cut_after=body.index(b"signature_delta")))
    events, error = await collect_error(provider, request())
    assert isinstance(error, ProviderConnectionError)
    assert isinstance(events[2], BlockStart) and isinstance(events[2].block, ThinkingPart)
    assert len(server.requests) == 1


def _anthropic_call(fragments: list[str], stop_reason: str) -> Reply:
    """A response that calls get_weather with these input fragments, then stops for ``stop_reason``."""
    events: list[tuple[str, dict[str, object]]] = [
        ("message_start", {"message": {"id": "msg_cut", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 9}}}),
        ("content_block_start", {"index": 0, "content_block": {"type": "tool_use", "id": "toolu_cut",
                                                                "name": "get_weather", "input": {}}}),
        *(("content_block_delta", {"index": 0, "delta": {"type": "input_json_delta", "partial_json": f}})
          for f in fragments),
        ("content_block_stop", {"index": 0}),
        ("message_delta", {"delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 64}}),
        ("message_stop", {}),
    ]  # fmt: skip
    body = b"".join(
        f"event: {name}\ndata: {json.dumps({'type': name, **payload})}\n\n".encode() for name, payload in events
    )
    return Reply(body=body, headers={"content-type": "text/event-stream"})


async def test_a_tool_call_cut_by_max_tokens_says_so_rather_than_blaming_the_json(
    server: SSEServer, provider: AnthropicProvider
) -> None:
    server.queue(_anthropic_call(['{"city": ', '"Zür'], "max_tokens"))
    events, error = await collect_error(provider, request())
    assert type(error) is ProviderError and error.error_type == "max_tokens" and not error.retryable
    assert "max_tokens" in str(error) and "'get_weather'" in str(error) and "JSON" not in str(error)
    assert not any(isinstance(e, BlockStop) for e in events)  # the cut call never looked finished
    assert len(server.requests) == 1  # the same request would be cut the same way: no retry


async def test_a_broken_tool_input_without_max_tokens_is_still_the_servers_fault(
    server: SSEServer, provider: AnthropicProvider
) -> None:
    server.queue(_anthropic_call(['{"city": ', '"Zür'], "tool_use"))
    with pytest.raises(ProviderProtocolError, match="tool input is not valid JSON"):
        await collect(provider, request())


async def test_max_tokens_right_after_a_whole_tool_call_keeps_the_call(
    server: SSEServer, provider: AnthropicProvider
) -> None:
    server.queue(_anthropic_call(['{"city": ', '"Bern"}'], "max_tokens"))
    _, response = await collect(provider, request())
    assert response.stop_reason == "max_tokens"
    assert response.content == [ToolCallPart(id="toolu_cut", name="get_weather", input={"city": "Bern"})]
