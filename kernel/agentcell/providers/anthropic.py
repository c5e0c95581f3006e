"""``anthropic:<model>`` and bare ``claude-...``: the Anthropic Messages API over raw HTTP.

``POST {base}/v1/messages`` with ``"stream": true``, parsed by :class:`AnthropicStreamParser`. The key
comes from ``ANTHROPIC_API_KEY`` and the base URL from ``ANTHROPIC_BASE_URL`` unless given; a base URL
keeps its own path, as in the official SDK (``https://proxy/anthropic`` posts to
``https://proxy/anthropic/v1/messages``).

Options read from the request's ``settings.extra`` (an agent's ``ModelConfig.extra``):

* ``cache``: prompt caching, on by default: ``"5m"`` (the default) or ``"1h"`` entries, or ``"off"``. The
  breakpoints go on the tools + system prefix and on the previous and latest turns (``_anthropic_cache``);
* ``betas``: a list (or comma-separated string) of ``anthropic-beta`` flags;
* anything else is merged into the request body as is (``top_k``, ``metadata``, ``service_tier``...).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx

from ..errors import ConfigurationError, MissingKeyError, ProviderAuthError, ProviderError, UserError
from ..events import TextBlock
from ..records.agent import ServerTool
from ..usage import InputBilling, Pricing
from ._anthropic_cache import CachePlan, plan_breakpoints
from ._anthropic_stream import AnthropicStreamParser
from ._cache_option import option_of
from ._http import DEFAULT_TIMEOUT, ErrorContext, HTTPStreamer, RetryPolicy, check_key, clean_key, join_url
from ._names import is_claude_model
from ._pricing import genai_context_window, genai_pricing
from .base import (
    ImagePart,
    Message,
    ModelRequest,
    Provider,
    RedactedThinkingPart,
    ServerToolCallPart,
    ServerToolResultPart,
    StreamEvent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)
from .credentials import api_key

__all__ = [
    "API_VERSION",
    "DEFAULT_BASE_URL",
    "AnthropicProvider",
    "build_body",
    "is_claude_model",
]

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"

_OWN_OPTIONS = ("cache", "betas")


COUNT_MARGIN = 1.03
"""count_tokens is an estimate: the worst case takes 3 % more (and 32 tokens) so the cap fires before the charge."""
_COUNTED_FIELDS = ("model", "messages", "system", "tools", "tool_choice", "thinking")


class AnthropicProvider(Provider):
    """The Anthropic Messages API. ``retry`` governs retries before any output (see ``_http``)."""

    name = "anthropic"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        betas: Sequence[str] = (),
        retry: RetryPolicy | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        client: httpx.AsyncClient | None = None,
        pricing: Pricing | None = None,
    ) -> None:
        # Like the SDK: an empty variable counts as unset. Whitespace around a key (the \r of a CRLF .env)
        # is dropped; a key still unfit for a header is refused in _prepare, naming the variable.
        self._explicit_key = clean_key(api_key)
        self.base_url = base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
        self._url = join_url(self.base_url, "v1/messages")
        self.betas = tuple(betas)
        self._pricing = pricing
        self._http = HTTPStreamer(client=client, timeout=timeout, retry=retry or RetryPolicy())

    def __repr__(self) -> str:
        return f"AnthropicProvider(base_url={self.base_url!r})"

    @property
    def _api_key(self) -> str | None:
        # Read at each request: a key typed into %model's prompt serves the providers built before it.
        return self._explicit_key or clean_key(api_key(KEY_ENV))

    def pricing(self, model: str) -> Pricing | None:
        return self._pricing or genai_pricing("anthropic", model)

    def context_window(self, model: str) -> int | None:
        return genai_context_window("anthropic", model)

    async def aclose(self) -> None:
        await self._http.aclose()

    def check_ready(self) -> None:
        if self._api_key is None:
            raise MissingKeyError(
                f"no Anthropic API key: set the {KEY_ENV} environment variable before starting Jupyter "
                "(or, in a notebook, %model prompts for one)",
                KEY_ENV,
            )

    def input_billing(self, request: ModelRequest) -> InputBilling:
        """A write premium only when the request carries a breakpoint (caching on, the prefix long enough)."""
        return _body(request)[2].billing

    async def count_input_tokens(self, request: ModelRequest) -> int | None:
        """The Messages API's own count (``/v1/messages/count_tokens``), with a margin: the API calls its
        count an estimate that may differ slightly from the billed figure. None when counting fails."""
        if self._api_key is None:
            return None
        try:
            _, headers, raw = self._prepare(request)
            counted = {k: v for k, v in json.loads(raw).items() if k in _COUNTED_FIELDS}
            answer = await self._http.post_json(
                join_url(self.base_url, "v1/messages/count_tokens"),
                {**headers, "accept": "application/json"},
                json.dumps(counted).encode(),
                self._context(request),
            )
        except (ProviderError, UserError):
            return None  # the byte bound stands; the request itself will say what is wrong
        tokens = answer.get("input_tokens") if isinstance(answer, dict) else None
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
            return None
        return math.ceil(tokens * COUNT_MARGIN) + 32

    def _context(self, request: ModelRequest) -> ErrorContext:
        return ErrorContext(
            provider=self.name,
            display="Anthropic",
            key_env=KEY_ENV,
            base_url=self.base_url,
            model=request.model,
            secrets=(self._api_key,),
        )

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return self._http.stream(lambda: self._prepare(request), AnthropicStreamParser, self._context(request))

    def _prepare(self, request: ModelRequest) -> tuple[str, dict[str, str], bytes]:
        if self._api_key is None:
            raise ProviderAuthError(
                f"no Anthropic API key: set the {KEY_ENV} environment variable (or pass api_key=)",
                provider=self.name,
            )
        check_key(self._api_key, display="Anthropic", key_env=KEY_ENV, provider=self.name)
        body, betas = build_body(request)
        headers = {
            "x-api-key": self._api_key,
            "anthropic-version": API_VERSION,
            "content-type": "application/json",
            "accept": "text/event-stream",
        }
        all_betas = [*self.betas, *(b for b in betas if b not in self.betas)]
        if all_betas:
            headers["anthropic-beta"] = ",".join(all_betas)
        return self._url, headers, json.dumps(body).encode()


# ---------------------------------------------------------------------------------------------- body


def build_body(request: ModelRequest) -> tuple[dict[str, Any], list[str]]:
    """The Messages API body for ``request``, and the beta flags it asks for."""
    body, betas, _ = _body(request)
    return body, betas


def _body(request: ModelRequest) -> tuple[dict[str, Any], list[str], CachePlan]:
    settings = request.settings
    extra = dict(settings.extra)
    betas = _betas(extra.get("betas"))
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": settings.max_tokens,
        "messages": [_message(m) for m in request.messages],
        "stream": True,
    }
    if request.system:
        body["system"] = request.system
    tools: list[dict[str, Any]] = [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in request.tools
    ]
    for server in request.server_tools:
        tools.append(_server_tool(server))
        if server.name == "web_fetch" and WEB_FETCH_BETA not in betas:
            betas.append(WEB_FETCH_BETA)
    if tools:
        body["tools"] = tools
    if settings.tool_choice is not None:
        body["tool_choice"] = _tool_choice(settings.tool_choice)
    if settings.thinking_budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": settings.thinking_budget}
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    if settings.stop_sequences:
        body["stop_sequences"] = list(settings.stop_sequences)
    plan = plan_breakpoints(body, option_of(extra))
    for key, value in extra.items():
        if key not in _OWN_OPTIONS:
            body[key] = value
    return body, betas, plan


SERVER_TOOL_TYPES = {"web_search": "web_search_20250305", "web_fetch": "web_fetch_20250910"}
"""The Messages API's versioned type of each server tool."""
WEB_FETCH_BETA = "web-fetch-2025-09-10"


def _server_tool(tool: ServerTool) -> dict[str, Any]:
    wire: dict[str, Any] = {"type": SERVER_TOOL_TYPES[tool.name], "name": tool.name}
    for key in ("max_uses", "allowed_domains", "blocked_domains"):
        if (value := getattr(tool, key)) is not None:
            wire[key] = value
    return wire


def _betas(option: object) -> list[str]:
    if option is None:
        return []
    if isinstance(option, str):
        return [b.strip() for b in option.split(",") if b.strip()]
    if isinstance(option, list | tuple) and all(isinstance(b, str) for b in option):
        return list(option)
    raise ConfigurationError(f"betas must be a list of strings, not {option!r}")


def _tool_choice(choice: str) -> dict[str, str]:
    if choice in ("auto", "any", "none"):
        return {"type": choice}
    return {"type": "tool", "name": choice}


def _message(message: Message) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for part in message.content:
        match part:
            case TextPart():
                block: dict[str, Any] = {"type": "text", "text": part.text}
                if part.citations:
                    block["citations"] = part.citations
                content.append(block)
            case ThinkingPart():
                # The API refuses thinking without its signature (e.g. from another provider): drop it.
                if part.signature:
                    content.append({"type": "thinking", "thinking": part.thinking, "signature": part.signature})
            case RedactedThinkingPart():
                content.append({"type": "redacted_thinking", "data": part.data})
            case ToolCallPart():
                content.append({"type": "tool_use", "id": part.id, "name": part.name, "input": part.input})
            case ServerToolCallPart():
                content.append({"type": "server_tool_use", "id": part.id, "name": part.name, "input": part.input})
            case ServerToolResultPart():
                content.append({"type": part.kind, "tool_use_id": part.call_id, "content": part.content})
            case ToolResultPart():
                result: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.call_id}
                # The API refuses an empty text block (HTTP 400), and the result stays in the history, so
                # every later request would fail too: drop them (a result left empty is sent without content).
                blocks = [b.model_dump() for b in part.content if not (isinstance(b, TextBlock) and not b.text)]
                if blocks:
                    result["content"] = blocks
                if part.is_error:
                    result["is_error"] = True
                content.append(result)
            case ImagePart():
                content.append(part.model_dump())
    return {"role": message.role, "content": content}
