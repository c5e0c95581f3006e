"""What the providers send: request bodies, headers, base URLs and keys from the environment."""

from __future__ import annotations

import pytest

from agentcell.errors import ConfigurationError
from agentcell.events import ImageBlock, ImageSource, TextBlock
from agentcell.providers.anthropic import AnthropicProvider
from agentcell.providers.anthropic import build_body as anthropic_body
from agentcell.providers.base import (
    Message,
    ModelRequest,
    ModelSettings,
    RedactedThinkingPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSchema,
)
from agentcell.providers.openai import OpenAIProvider
from agentcell.providers.openai import build_body as openai_body

from .conftest import API_KEY, FAST, SSEServer, collect, request, sse_reply

IMAGE = ImageBlock(source=ImageSource(media_type="image/png", data="iVBORw0KGgo="))


def rich_request(**settings: object) -> ModelRequest:
    return ModelRequest(
        model="claude-sonnet-4-5",
        system="Be brief.",
        messages=[
            Message(role="user", content=[TextPart(text="Weather in Zürich?"), IMAGE]),
            Message(
                role="assistant",
                content=[
                    ThinkingPart(thinking="Need a tool.", signature="sig-123"),
                    RedactedThinkingPart(data="opaque=="),
                    ThinkingPart(thinking="unsigned, from another provider"),
                    TextPart(text="Checking."),
                    ToolCallPart(id="toolu_1", name="get_weather", input={"city": "Zürich"}),
                ],
            ),
            Message(
                role="user",
                content=[
                    ToolResultPart(call_id="toolu_1", content=[TextBlock(text="18 °C")], is_error=False),
                    TextPart(text="And tomorrow?"),
                ],
            ),
        ],
        tools=[
            ToolSchema(name="get_weather", description="Weather now", input_schema={"type": "object"}),
            ToolSchema(name="get_time"),
        ],
        settings=ModelSettings(**settings),  # type: ignore[arg-type]
    )


def test_anthropic_body_maps_every_part() -> None:
    body, betas = anthropic_body(
        rich_request(
            max_tokens=2000,
            temperature=0.5,
            thinking_budget=1024,
            tool_choice="get_weather",
            stop_sequences=["###"],
            extra={"top_k": 5, "betas": ["a-1", "b-2"]},
        )
    )
    assert betas == ["a-1", "b-2"]
    assert body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 2000,
        "stream": True,
        "system": "Be brief.",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Weather in Zürich?"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Need a tool.", "signature": "sig-123"},
                    {"type": "redacted_thinking", "data": "opaque=="},
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Zürich"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "text", "text": "18 °C"}],
                    },
                    {"type": "text", "text": "And tomorrow?"},
                ],
            },
        ],
        "tools": [
            {"name": "get_weather", "description": "Weather now", "input_schema": {"type": "object"}},
            {"name": "get_time", "description": "", "input_schema": {"type": "object", "properties": {}}},
        ],
        "tool_choice": {"type": "tool", "name": "get_weather"},
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "temperature": 0.5,
        "stop_sequences": ["###"],
        "top_k": 5,
    }


def test_anthropic_tool_results_never_carry_an_empty_text_block() -> None:
    # The API answers HTTP 400 to {"type": "text", "text": ""}, and the result stays in the history.
    results = [
        ToolResultPart(call_id="toolu_1", content=[TextBlock(text="")]),
        ToolResultPart(call_id="toolu_2", content=[]),
        ToolResultPart(call_id="toolu_3", content=[TextBlock(text=""), IMAGE, TextBlock(text="ok")], is_error=True),
    ]
    history = ModelRequest(model="claude-sonnet-4-5", messages=[Message(role="user", content=results)])
    body, _ = anthropic_body(history)
    assert body["messages"][0]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1"},
        {"type": "tool_result", "tool_use_id": "toolu_2"},
        {
            "type": "tool_result",
            "tool_use_id": "toolu_3",
            "content": [IMAGE.model_dump(), {"type": "text", "text": "ok"}],
            "is_error": True,
        },
    ]


def test_bad_options_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="'5m', '1h' or 'off'"):
        anthropic_body(rich_request(extra={"cache": "2h"}))
    with pytest.raises(ConfigurationError, match="betas"):
        anthropic_body(rich_request(extra={"betas": 3}))


@pytest.mark.parametrize(
    ("choice", "wire"), [("auto", {"type": "auto"}), ("any", {"type": "any"}), ("none", {"type": "none"})]
)
def test_anthropic_tool_choice(choice: str, wire: dict[str, str]) -> None:
    assert anthropic_body(rich_request(tool_choice=choice))[0]["tool_choice"] == wire


@pytest.mark.parametrize(
    ("configured", "path"),
    [
        ("{url}", "/v1/messages"),
        ("{url}/", "/v1/messages"),
        ("{url}/proxy/anthropic", "/proxy/anthropic/v1/messages"),
        ("{url}/proxy/", "/proxy/v1/messages"),
    ],
)
async def test_anthropic_base_url_and_key_come_from_the_environment_like_the_sdk(
    server: SSEServer, monkeypatch: pytest.MonkeyPatch, configured: str, path: str
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", configured.format(url=server.url))
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    provider = AnthropicProvider(retry=FAST, betas=["x-1"])
    server.queue(sse_reply("anthropic_text.sse"))
    await collect(provider, request(extra={"betas": "y-2, x-1"}))
    await provider.aclose()
    (sent,) = server.requests
    assert sent.path == path
    assert sent.headers["x-api-key"] == API_KEY
    assert sent.headers["anthropic-beta"] == "x-1,y-2"
    assert "betas" not in sent.body


def test_an_explicit_base_url_beats_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/env")
    assert AnthropicProvider(base_url="http://127.0.0.1:9/arg").base_url == "http://127.0.0.1:9/arg"
    assert AnthropicProvider().base_url == "http://127.0.0.1:9/env"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "")
    assert AnthropicProvider().base_url == "https://api.anthropic.com"


def test_openai_body_maps_every_part() -> None:
    body = openai_body(
        rich_request(max_tokens=300, temperature=0.2, tool_choice="any", stop_sequences=["###"], extra={"seed": 7})
    )
    assert body == {
        "model": "claude-sonnet-4-5",
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 300,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Weather in Zürich?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                ],
            },
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {
                        "id": "toolu_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Z\\u00fcrich"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "toolu_1", "content": "18 °C"},
            {"role": "user", "content": "And tomorrow?"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather now",
                    "parameters": {"type": "object"},
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "get_time",
                    "description": "",
                    "parameters": {"type": "object", "properties": {}},
                },
            },
        ],
        "tool_choice": "required",
        "temperature": 0.2,
        "stop": ["###"],
        "seed": 7,
    }
    assert openai_body(rich_request(tool_choice="get_time"))["tool_choice"] == {
        "type": "function",
        "function": {"name": "get_time"},
    }


async def test_openai_base_url_from_the_environment(server: SSEServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentcell.providers.base import ModelConfig
    from agentcell.providers.openai import openai_provider

    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/compat/v1")
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    provider = openai_provider(ModelConfig(id="gpt-4o"))
    assert isinstance(provider, OpenAIProvider)
    server.queue(sse_reply("openai_text.sse"))
    await collect(provider, request())
    await provider.aclose()
    (sent,) = server.requests
    assert sent.path == "/compat/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
