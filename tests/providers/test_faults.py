"""HTTP failures: which are retried (and how long we wait), which surface, and what the errors say."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import AsyncIterator

import h11
import httpx
import pytest

from agentcell.errors import ProviderAuthError, ProviderConnectionError, ProviderError, ProviderStatusError
from agentcell.providers._anthropic_stream import stream_error
from agentcell.providers._http import RETRYABLE_ERROR_TYPES, RetryPolicy, parse_retry_after, scrub
from agentcell.providers._openai_stream import OpenAIStreamParser
from agentcell.providers.anthropic import AnthropicProvider
from agentcell.providers.base import ModelConfig
from agentcell.providers.openai import OpenAIProvider, openai_provider

from .conftest import API_KEY, FAST, SSEServer, collect, collect_error, json_reply, request, sse_reply


def overloaded(status: int = 529, headers: dict[str, str] | None = None) -> object:
    return json_reply(
        status, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, headers
    )


@pytest.fixture
async def provider(server: SSEServer) -> AsyncIterator[AnthropicProvider]:
    instance = AnthropicProvider(api_key=API_KEY, base_url=server.url, retry=FAST)
    yield instance
    await instance.aclose()


async def test_529_twice_then_success(server: SSEServer, provider: AnthropicProvider) -> None:
    server.queue(overloaded(), overloaded(), sse_reply("anthropic_text.sse"))  # type: ignore[arg-type]
    _, response = await collect(provider, request())
    assert response.text.startswith("Héllo")
    assert len(server.requests) == 3


@pytest.mark.parametrize(
    ("headers", "at_least"),
    [({"retry-after": "0.3"}, 0.3), ({"retry-after-ms": "250", "retry-after": "30"}, 0.25)],
)
async def test_429_waits_as_long_as_the_server_asks(
    server: SSEServer, headers: dict[str, str], at_least: float
) -> None:
    error = {"type": "error", "error": {"type": "rate_limit_error", "message": "Slow down"}}
    server.queue(json_reply(429, error, headers), sse_reply("anthropic_text.sse"))
    # A long backoff proves the wait came from the header, not from the policy.
    provider = AnthropicProvider(api_key=API_KEY, base_url=server.url, retry=RetryPolicy(initial_delay=20))
    started = time.perf_counter()
    _, response = await collect(provider, request())
    elapsed = time.perf_counter() - started
    await provider.aclose()
    assert at_least <= elapsed < 5
    assert response.stop_reason == "end_turn" and len(server.requests) == 2


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529])
async def test_retryable_statuses_give_up_after_the_configured_retries(server: SSEServer, status: int) -> None:
    server.queue(*[overloaded(status)] * 4)  # type: ignore[arg-type]
    provider = AnthropicProvider(
        api_key=API_KEY, base_url=server.url, retry=RetryPolicy(max_retries=1, initial_delay=0)
    )
    _, error = await collect_error(provider, request())
    await provider.aclose()
    assert isinstance(error, ProviderStatusError)
    assert error.status_code == status and error.retryable and error.error_type == "overloaded_error"
    assert len(server.requests) == 2


async def test_500_is_retried_twice_by_default(server: SSEServer, provider: AnthropicProvider) -> None:
    server.queue(*[json_reply(500, {"type": "error", "error": {"type": "api_error", "message": "boom"}})] * 3)
    _, error = await collect_error(provider, request())
    assert isinstance(error, ProviderStatusError) and error.status_code == 500
    assert "boom" in str(error)
    assert len(server.requests) == 3


async def test_x_should_retry_false_wins(server: SSEServer, provider: AnthropicProvider) -> None:
    server.queue(overloaded(503, {"x-should-retry": "false"}), sse_reply("anthropic_text.sse"))  # type: ignore[arg-type]
    _, error = await collect_error(provider, request())
    assert isinstance(error, ProviderStatusError) and not error.retryable
    assert len(server.requests) == 1


async def test_400_surfaces_the_apis_own_message_at_once(server: SSEServer, provider: AnthropicProvider) -> None:
    message = "max_tokens: 999999 > 64000, which is the maximum allowed"
    server.queue(
        json_reply(
            400,
            {"type": "error", "error": {"type": "invalid_request_error", "message": message}},
            {"request-id": "req_0123"},
        )
    )
    _, error = await collect_error(provider, request())
    assert isinstance(error, ProviderStatusError) and not error.retryable
    assert error.status_code == 400 and error.error_type == "invalid_request_error"
    assert message in str(error) and "req_0123" in str(error)
    assert len(server.requests) == 1


async def test_404_names_the_model(server: SSEServer, provider: AnthropicProvider) -> None:
    server.queue(
        json_reply(404, {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-nope"}})
    )
    _, error = await collect_error(provider, request())
    assert isinstance(error, ProviderStatusError) and error.status_code == 404
    assert "'claude-sonnet-4-5'" in str(error) and "model name" in str(error)
    assert len(server.requests) == 1


async def test_spend_limit_429_is_not_retried(server: SSEServer, provider: AnthropicProvider) -> None:
    body = {
        "type": "error",
        "error": {
            "type": "rate_limit_error",
            "message": "spend limit reached",
            "details": {"error_code": "enforced_spend_limit_reached"},
        },
    }
    server.queue(json_reply(429, body), sse_reply("anthropic_text.sse"))
    _, error = await collect_error(provider, request())
    assert isinstance(error, ProviderStatusError) and not error.retryable
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_failures_name_the_variable_and_never_echo_the_key(
    server: SSEServer, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    echo = {
        "type": "error",
        "error": {"type": "authentication_error", "message": f"invalid x-api-key {API_KEY}"},
    }
    server.queue(json_reply(status, echo))
    provider = AnthropicProvider(api_key=API_KEY, base_url=server.url, retry=FAST)
    caplog.set_level(logging.DEBUG)
    events, error = await collect_error(provider, request())
    await provider.aclose()
    assert isinstance(error, ProviderAuthError) and error.status_code == status
    assert "ANTHROPIC_API_KEY" in str(error)
    assert "invalid x-api-key [redacted]" in str(error)
    for text in (str(error), repr(error), repr(error.args), repr(provider), caplog.text, *map(repr, events)):
        assert API_KEY not in text
        assert API_KEY[8:20] not in text
    assert len(server.requests) == 1


async def test_a_missing_key_fails_before_any_request(server: SSEServer) -> None:
    provider = AnthropicProvider(base_url=server.url)
    _, error = await collect_error(provider, request())
    await provider.aclose()
    assert isinstance(error, ProviderAuthError) and "ANTHROPIC_API_KEY" in str(error)
    assert server.requests == []


async def test_the_key_never_leaks_through_a_mid_stream_error(
    server: SSEServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    body = (
        b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
        b'data: {"error":{"message":"bad key ' + API_KEY.encode() + b'","type":"server_error"}}\n\n'
    )
    from .conftest import Reply

    server.queue(Reply(body=body, headers={"content-type": "text/event-stream"}))
    provider = OpenAIProvider(api_key=API_KEY, base_url=server.url, retry=FAST)
    _events, error = await collect_error(provider, request())
    await provider.aclose()
    assert isinstance(error, ProviderStatusError) and error.retryable
    assert API_KEY not in str(error) and API_KEY not in repr(error.args) and API_KEY not in caplog.text
    assert "[redacted]" in str(error)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_connection_refused_is_retried_then_a_connection_error() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    provider = AnthropicProvider(api_key=API_KEY, base_url=url, retry=RetryPolicy(max_retries=2, initial_delay=0.01))
    started = time.perf_counter()
    _, error = await collect_error(provider, request())
    await provider.aclose()
    assert isinstance(error, ProviderConnectionError) and error.retryable
    assert url in str(error)
    assert time.perf_counter() - started >= 0.01 * 0.75 + 0.02 * 0.75


async def test_read_timeout_is_a_retryable_connection_error(server: SSEServer) -> None:
    server.queue(*[sse_reply("anthropic_text.sse", chunk_size=200, pause=0.5)] * 2)
    provider = AnthropicProvider(
        api_key=API_KEY, base_url=server.url, retry=RetryPolicy(max_retries=1, initial_delay=0), timeout=0.2
    )
    _, error = await collect_error(provider, request())
    await provider.aclose()
    assert isinstance(error, ProviderConnectionError) and error.retryable
    assert "timed out" in str(error)


def test_retry_policy_backoff_follows_the_sdk_formula() -> None:
    policy = RetryPolicy()
    for retries, nominal in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (10, 8.0)]:
        for _ in range(50):
            assert nominal * 0.75 <= policy.delay(retries, None) <= nominal
    assert policy.delay(0, 12.5) == 12.5
    assert policy.delay(5, 61) <= 8.0  # more than a minute: ignored, back off instead
    assert policy.delay(0, 0) <= 0.5


def test_retry_after_headers() -> None:
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "1500"})) == 1.5
    assert parse_retry_after(httpx.Headers({"retry-after": "7"})) == 7.0
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "x", "retry-after": "2.5"})) == 2.5
    date = parse_retry_after(httpx.Headers({"retry-after": "Wed, 21 Oct 2099 07:28:00 GMT"}))
    assert date is not None and date > 1e9
    assert parse_retry_after(httpx.Headers({"retry-after": "soon"})) is None
    assert parse_retry_after(httpx.Headers({})) is None


def test_scrub_removes_keys_and_key_shaped_tokens() -> None:
    assert scrub(f"key {API_KEY}!", [API_KEY]) == "key [redacted]!"
    assert scrub("Incorrect API key provided: sk-proj-****abcd1234", [None]) == (
        "Incorrect API key provided: [redacted]"
    )


async def test_an_error_event_whose_data_is_not_json_is_still_a_typed_stream_error(
    server: SSEServer, provider: AnthropicProvider
) -> None:
    from .conftest import Reply, fixture

    body = fixture("anthropic_text.sse")
    body = body[: body.index(b"event: content_block_stop")] + b"event: error\ndata: upstream exploded\n\n"
    server.queue(Reply(body=body, headers={"content-type": "text/event-stream"}))
    events, error = await collect_error(provider, request())
    assert isinstance(error, ProviderStatusError) and error.error_type == "api_error" and error.retryable
    assert "upstream exploded" in str(error)
    assert len(events) > 3


def test_the_error_context_does_not_show_the_key() -> None:
    from agentcell.providers._http import ErrorContext

    context = ErrorContext("anthropic", "Anthropic", "ANTHROPIC_API_KEY", "http://x", "m", (API_KEY,))
    assert API_KEY not in repr(context)


# ---------------------------------------------------------------------------------------------- malformed keys

SECRET = "my-vllm-secret-token"
"""Not shaped like an ``sk-`` key, so only the secret-aware scrubbing can catch it."""


def _never_shown(secret: str, error: BaseException, caplog: pytest.LogCaptureFixture) -> None:
    for text in (str(error), repr(error), repr(error.args), repr(error.__cause__), caplog.text):
        assert secret.strip() not in text


async def test_whitespace_around_a_key_from_the_environment_is_dropped(
    server: SSEServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A CRLF .env file leaves a \r at the end; h11 used to refuse the header and quote the key.
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET + "\r")
    monkeypatch.setenv("ANTHROPIC_API_KEY", f" {SECRET}\r\n")
    server.queue(sse_reply("openai_text.sse"), sse_reply("anthropic_text.sse"))
    openai = openai_provider(ModelConfig(id="openai:gpt-4o", base_url=server.url + "/v1"))
    anthropic = AnthropicProvider(base_url=server.url)
    for provider in (openai, anthropic):
        await collect(provider, request())
        await provider.aclose()
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert server.requests[1].headers["x-api-key"] == SECRET
    assert SECRET not in caplog.text


@pytest.mark.parametrize("key", ["my-vllm-sécret-token", "my-vllm secret-token", "my-vllm-secret\x7ftoken"])
async def test_a_key_no_header_can_carry_is_refused_naming_only_the_variable(
    server: SSEServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, key: str
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    openai = openai_provider(ModelConfig(id="openai:gpt-4o", base_url=server.url + "/v1"))
    anthropic = AnthropicProvider(api_key=key, base_url=server.url)
    for provider, variable in ((openai, "OPENAI_API_KEY"), (anthropic, "ANTHROPIC_API_KEY")):
        _, error = await collect_error(provider, request())
        await provider.aclose()
        assert isinstance(error, ProviderAuthError) and not error.retryable
        assert variable in str(error) and "malformed" in str(error)
        for text in (str(error), repr(error), caplog.text):
            assert key not in text and "secret" not in text
    assert server.requests == []


def _failing_client(failure: Exception, calls: list[httpx.Request]) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise failure

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


@pytest.mark.parametrize(
    ("failure", "kind"),
    [
        (
            httpx.LocalProtocolError(f"Illegal header value {('Bearer ' + SECRET + chr(13)).encode()!r}"),
            ProviderAuthError,
        ),
        (
            h11.LocalProtocolError(f"Illegal header value {('Bearer ' + SECRET + chr(13)).encode()!r}"),
            ProviderAuthError,
        ),
        (UnicodeEncodeError("ascii", f"Bearer {SECRET}é", 27, 28, "ordinal not in range(128)"), ProviderAuthError),
        (httpx.InvalidURL(f"Invalid URL http://u:{SECRET}@[::1"), ProviderConnectionError),
        (httpx.UnsupportedProtocol("Request URL has an unsupported protocol 'ftp://'."), ProviderConnectionError),
    ],
)
async def test_requests_that_cannot_be_sent_fail_typed_at_once_and_scrubbed(
    caplog: pytest.LogCaptureFixture, failure: Exception, kind: type[ProviderError]
) -> None:
    caplog.set_level(logging.DEBUG)
    calls: list[httpx.Request] = []
    client = _failing_client(failure, calls)
    provider = OpenAIProvider(api_key=SECRET, base_url="http://127.0.0.1:1/v1", client=client, retry=FAST)
    _, error = await collect_error(provider, request())
    await client.aclose()
    assert type(error) is kind and not error.retryable
    assert len(calls) == 1  # sending the same request again cannot help
    _never_shown(SECRET, error, caplog)


async def test_a_base_url_httpx_cannot_parse_is_a_provider_error() -> None:
    for url in ("http://127.0.0.1:port/v1", "http://[::1/v1", "ftp://127.0.0.1/v1", "127.0.0.1:8000/v1"):
        provider = OpenAIProvider(name="openai", api_key="k", base_url=url, retry=FAST)
        assert provider.pricing("gpt-4o") is not None  # reading the host must not raise either
        _, error = await collect_error(provider, request())
        await provider.aclose()
        assert isinstance(error, ProviderConnectionError) and not error.retryable
        assert url in str(error) and "base URL" in str(error)


def test_scrub_removes_the_quoted_forms_of_a_secret() -> None:
    # h11 quotes a refused header value as bytes; repr() and JSON escape control and non-ASCII characters.
    assert scrub(f"Illegal header value {('Bearer ' + SECRET + chr(13)).encode()!r}", [SECRET + "\r"]) == (
        "Illegal header value b'Bearer [redacted]'"
    )
    accented = "my-vllm-sécret-token"
    for text in (repr(accented), repr(accented.encode()), json.dumps(accented), repr(SECRET + "\n")):
        assert scrub(f"value {text}", [accented, SECRET + "\n"]).count("[redacted]") == 1, text


@pytest.mark.parametrize("kind", sorted(RETRYABLE_ERROR_TYPES))
def test_both_apis_retry_the_same_stream_errors_and_read_them_alike(kind: str) -> None:
    payload = {"error": {"type": kind, "message": "try later"}}
    anthropic = stream_error(payload)
    openai = OpenAIStreamParser()._stream_error(payload)
    assert anthropic.retryable and openai.retryable
    assert (anthropic.error_type, openai.error_type) == (kind, kind)
    assert str(openai) == f"OpenAI stream error {kind}: try later"
    coded = OpenAIStreamParser()._stream_error({"error": {"code": kind, "message": ""}})
    assert (coded.error_type, str(coded)) == (kind, f"OpenAI stream error {kind}: no message")
    assert str(OpenAIStreamParser()._stream_error({"error": "model gone"})) == "OpenAI stream error: model gone"
