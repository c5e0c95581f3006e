"""``openai:<model>``, ``ollama:<model>``, ``vllm:<model>``: OpenAI-compatible Chat Completions.

``POST {base}/chat/completions`` with ``"stream": true`` and ``stream_options.include_usage``, parsed by
:class:`OpenAIStreamParser`. ``openai`` reads ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` (default
``https://api.openai.com/v1``); ``ollama`` defaults to ``http://127.0.0.1:11434/v1``, ``vllm`` to
``http://127.0.0.1:8000/v1`` and ``llamacpp`` (llama.cpp's ``llama-server``) to
``http://127.0.0.1:8080/v1``, all without a key. A model config's ``base_url`` overrides any of them.

Prompt caching is the servers' own: cached prompt tokens they report count as cache reads. Requests to a
llama.cpp server ask it to keep the prompt cache (``cache_prompt``, which older servers leave off), unless
the ``cache`` option is ``"off"``; the option itself never reaches a server.

Self-hosted servers cost nothing at list price: ``ollama`` and ``vllm``, and a model genai-prices does not
know at a loopback base URL (llama.cpp's server). A known model keeps its list price wherever it is served,
a local proxy included (see ``_pricing``). ``settings.extra`` is merged into the body as is (but ``cache``).
"""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..errors import MissingKeyError, ProviderAuthError
from ..usage import FREE, InputBilling, Pricing
from ._cache_option import ABSENT, cache_ttl
from ._http import DEFAULT_TIMEOUT, ErrorContext, HTTPStreamer, RetryPolicy, check_key, clean_key, join_url
from ._openai_stream import OpenAIStreamParser
from ._pricing import genai_context_window, genai_pricing
from .base import (
    ImagePart,
    Message,
    ModelConfig,
    ModelRequest,
    Provider,
    StreamEvent,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from .credentials import api_key

__all__ = [
    "LLAMACPP_BASE_URL",
    "OLLAMA_BASE_URL",
    "OPENAI_BASE_URL",
    "VLLM_BASE_URL",
    "OpenAIProvider",
    "build_body",
    "llamacpp_provider",
    "ollama_provider",
    "openai_provider",
    "vllm_provider",
]

OPENAI_BASE_URL = "https://api.openai.com/v1"
OLLAMA_BASE_URL = "http://127.0.0.1:11434/v1"
VLLM_BASE_URL = "http://127.0.0.1:8000/v1"
LLAMACPP_BASE_URL = "http://127.0.0.1:8080/v1"
KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"

_DISPLAY = {"openai": "OpenAI", "ollama": "Ollama", "vllm": "vLLM", "llamacpp": "llama.cpp"}
_SELF_HOSTED = ("ollama", "vllm", "llamacpp")


class OpenAIProvider(Provider):
    """An OpenAI-compatible server. ``name`` labels errors and prices (``openai``, ``ollama``, ``vllm``)."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str = OPENAI_BASE_URL,
        name: str = "openai",
        key_env: str = KEY_ENV,
        retry: RetryPolicy | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        client: httpx.AsyncClient | None = None,
        pricing: Pricing | None = None,
    ) -> None:
        self.name = name
        self._explicit_key = clean_key(api_key)  # without the \r a CRLF .env file leaves; empty means none
        self.base_url = base_url
        self._url = join_url(base_url, "chat/completions")
        self._key_env = key_env
        self._official = _host(base_url) == "api.openai.com"
        self._pricing = pricing
        self._http = HTTPStreamer(client=client, timeout=timeout, retry=retry or RetryPolicy())

    def __repr__(self) -> str:
        return f"OpenAIProvider(name={self.name!r}, base_url={self.base_url!r})"

    @property
    def _api_key(self) -> str | None:
        # Read at each request: a key typed into %model's prompt serves the providers built before it.
        return self._explicit_key or clean_key(api_key(self._key_env))

    def check_ready(self) -> None:
        if self._api_key is None and self._official:
            raise MissingKeyError(
                f"no OpenAI API key: set the {self._key_env} environment variable, or {BASE_URL_ENV} to an "
                "OpenAI-compatible server (vLLM, Ollama, llama.cpp) that needs none",
                self._key_env,
            )

    def input_billing(self, request: ModelRequest) -> InputBilling:
        del request
        return "plain"  # OpenAI-compatible servers cache prompts on their own and bill no cache writes

    def pricing(self, model: str) -> Pricing | None:
        if self._pricing is not None:
            return self._pricing
        if self.name in _SELF_HOSTED:
            return FREE
        # A model genai-prices knows keeps its list price behind a local proxy (LiteLLM and the like);
        # one it does not know, on this machine, is a self-hosted model (llama.cpp's server): free.
        local = _is_loopback(self.base_url)
        api_url = None if self._official else self.base_url
        return genai_pricing("openai", model, api_url=api_url, unknown=FREE if local else None)

    def context_window(self, model: str) -> int | None:
        return genai_context_window("openai", model, api_url=None if self._official else self.base_url)

    async def aclose(self) -> None:
        await self._http.aclose()

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        display = _DISPLAY.get(self.name, self.name)
        context = ErrorContext(
            provider=self.name,
            display=display,
            key_env=self._key_env,
            base_url=self.base_url,
            model=request.model,
            secrets=(self._api_key,),
        )
        return self._http.stream(
            lambda: self._prepare(request),
            # Four characters a token: only used when the server reports no usage.
            lambda: OpenAIStreamParser(self.name, display, input_estimate=_estimate_tokens(request)),
            context,
        )

    def _prepare(self, request: ModelRequest) -> tuple[str, dict[str, str], bytes]:
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        if self._api_key is not None:
            display = _DISPLAY.get(self.name, self.name)
            check_key(self._api_key, display=display, key_env=self._key_env, provider=self.name)
            headers["authorization"] = f"Bearer {self._api_key}"
        elif self._official:
            raise ProviderAuthError(
                f"no OpenAI API key: set the {self._key_env} environment variable (or pass api_key=)",
                provider=self.name,
            )
        body = build_body(
            request,
            max_tokens_field="max_completion_tokens" if self._official else "max_tokens",
            llama_cpp=self.name == "llamacpp",
        )
        return self._url, headers, json.dumps(body).encode()


def _host(url: str) -> str:
    try:
        return urlsplit(url).hostname or ""
    except ValueError:  # e.g. an unclosed IPv6 bracket; sending to it fails as a ProviderError
        return ""


def _is_loopback(url: str) -> bool:
    host = _host(url)
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# ---------------------------------------------------------------------------------------------- factories


def openai_provider(config: ModelConfig) -> OpenAIProvider:
    return OpenAIProvider(
        base_url=config.base_url or os.environ.get(BASE_URL_ENV) or OPENAI_BASE_URL,
    )


def ollama_provider(config: ModelConfig) -> OpenAIProvider:
    return OpenAIProvider(name="ollama", base_url=config.base_url or OLLAMA_BASE_URL, key_env="(none)")


def vllm_provider(config: ModelConfig) -> OpenAIProvider:
    return OpenAIProvider(name="vllm", base_url=config.base_url or VLLM_BASE_URL, key_env="(none)")


def llamacpp_provider(config: ModelConfig) -> OpenAIProvider:
    return OpenAIProvider(name="llamacpp", base_url=config.base_url or LLAMACPP_BASE_URL, key_env="(none)")


# ---------------------------------------------------------------------------------------------- body


def _estimate_tokens(request: ModelRequest) -> int:
    return -(-len(request.model_dump_json(include={"system", "messages", "tools"})) // 4)


def build_body(
    request: ModelRequest, *, max_tokens_field: str = "max_tokens", llama_cpp: bool = False
) -> dict[str, Any]:
    """The Chat Completions body; ``llama_cpp``: the server is llama.cpp's, asked to keep its prompt cache."""
    settings = request.settings
    extra = dict(settings.extra)
    cache = cache_ttl(extra.pop("cache", ABSENT))
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for message in request.messages:
        messages.extend(_messages(message))
    body: dict[str, Any] = {
        "model": request.model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
        max_tokens_field: settings.max_tokens,
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
            }
            for t in request.tools
        ]
    if settings.tool_choice is not None:
        body["tool_choice"] = _tool_choice(settings.tool_choice)
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    if settings.stop_sequences:
        body["stop"] = list(settings.stop_sequences)
    if llama_cpp:
        body["cache_prompt"] = cache is not None
    body.update(extra)
    return body


def _tool_choice(choice: str) -> str | dict[str, Any]:
    if choice in ("auto", "none"):
        return choice
    if choice == "any":
        return "required"
    return {"type": "function", "function": {"name": choice}}


def _messages(message: Message) -> list[dict[str, Any]]:
    """One of our messages as Chat Completions messages: tool results become ``tool`` messages, which
    must come straight after the assistant message that called them."""
    if message.role == "assistant":
        text = "".join(p.text for p in message.content if isinstance(p, TextPart))
        calls = [
            {
                "id": p.id,
                "type": "function",
                "function": {"name": p.name, "arguments": json.dumps(p.input)},
            }
            for p in message.content
            if isinstance(p, ToolCallPart)
        ]
        # Thinking has no place in a Chat Completions request; it is dropped.
        out: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            out["tool_calls"] = calls
        return [out]
    results: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, ToolResultPart):
            text = "\n".join(b.text for b in part.content if b.type == "text")
            results.append({"role": "tool", "tool_call_id": part.call_id, "content": text})
        elif isinstance(part, TextPart):
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            url = f"data:{part.source.media_type};base64,{part.source.data}"
            content.append({"type": "image_url", "image_url": {"url": url}})
    if content:
        if all(c["type"] == "text" for c in content):
            results.append({"role": "user", "content": "\n".join(c["text"] for c in content)})
        else:
            results.append({"role": "user", "content": content})
    return results
