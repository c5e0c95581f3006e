"""Anthropic Messages SSE -> provider-neutral stream events.

The parser is push-style and synchronous (server-sent events in, stream events out): the HTTP layer reads
the body with httpx-sse and feeds each event, and tests can feed events directly. It follows the
accumulation rules of the official SDK: blocks by index, signature deltas replace, ``message_delta`` usage
is cumulative and overwrites only the counts it carries, ``ping`` and unknown event or delta types are
ignored, an ``error`` event raises.

Server-side blocks become provider-neutral parts: ``server_tool_use`` a :class:`ServerToolCallPart` (its
input streams like a tool call's), ``web_search_tool_result`` / ``web_fetch_tool_result`` a
:class:`ServerToolResultPart` with the block's content as it came. Other block types are dropped.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import from_json

from ..errors import ProviderConnectionError, ProviderError, ProviderProtocolError, ProviderStatusError
from ..usage import CacheCreation, ServerToolUse, Usage
from ._http import RETRYABLE_ERROR_TYPES, EventParser, whole_json_object
from .base import (
    BlockStart,
    BlockStop,
    CitationDelta,
    RedactedThinkingPart,
    ResponseEnd,
    ResponseStart,
    ServerToolCallPart,
    ServerToolResultPart,
    SignatureDelta,
    StreamEvent,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ThinkingPart,
    ToolCallPart,
    ToolInputDelta,
    UsageUpdate,
)

__all__ = ["AnthropicStreamParser", "stream_error"]


_SKIP = "skip"


class _WireModel(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _WireCacheCreation(_WireModel):
    ephemeral_5m_input_tokens: int | None = None
    ephemeral_1h_input_tokens: int | None = None


class _WireServerToolUse(_WireModel):
    web_search_requests: int | None = None
    web_fetch_requests: int | None = None


class _WireUsage(_WireModel):
    """``Usage`` (message_start) and ``MessageDeltaUsage`` (message_delta): every field may be absent."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_creation: _WireCacheCreation | None = None
    server_tool_use: _WireServerToolUse | None = None


class _UsageState:
    def __init__(self) -> None:
        self.input = 0
        self.output = 0
        self.cache_read = 0
        self.write_5m = 0
        self.write_1h = 0
        self.web_search = 0
        self.web_fetch = 0
        self.server_tracked = False
        """Whether the API reported server tool use at all (seed 002: absent until tracked)."""

    def apply(self, raw: object) -> Usage:
        try:
            wire = _WireUsage.model_validate(raw if raw is not None else {})
        except ValidationError as exc:
            raise ProviderProtocolError(f"Anthropic sent malformed usage: {exc.errors()[0]['msg']}") from None
        # None means "not reported in this event": keep the earlier count, as the SDK does.
        if wire.input_tokens is not None:
            self.input = wire.input_tokens
        if wire.output_tokens is not None:
            self.output = wire.output_tokens
        if wire.cache_read_input_tokens is not None:
            self.cache_read = wire.cache_read_input_tokens
        if wire.cache_creation is not None:
            self.write_5m = wire.cache_creation.ephemeral_5m_input_tokens or 0
            self.write_1h = wire.cache_creation.ephemeral_1h_input_tokens or 0
        total = wire.cache_creation_input_tokens
        if total is not None and total != self.write_5m + self.write_1h:
            # A total without a matching TTL split: the default TTL (5 minutes) takes the difference.
            self.write_1h = min(self.write_1h, total)
            self.write_5m = total - self.write_1h
        if wire.server_tool_use is not None:
            self.server_tracked = True
            self.web_search = wire.server_tool_use.web_search_requests or 0
            self.web_fetch = wire.server_tool_use.web_fetch_requests or 0
        return self.snapshot()

    def snapshot(self) -> Usage:
        return Usage(
            input_tokens=self.input,
            output_tokens=self.output,
            cache_read_input_tokens=self.cache_read,
            cache_creation=CacheCreation(
                ephemeral_5m_input_tokens=self.write_5m, ephemeral_1h_input_tokens=self.write_1h
            ),
            server_tool_use=ServerToolUse(web_search_requests=self.web_search, web_fetch_requests=self.web_fetch)
            if self.server_tracked
            else None,
        )


def stream_error(payload: Any, provider: str = "anthropic") -> ProviderError:
    """The typed error for an ``error`` event that arrived after HTTP 200."""
    error = payload.get("error") if isinstance(payload, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    kind = kind if isinstance(kind, str) else "api_error"
    return ProviderStatusError(
        f"Anthropic stream error {kind}: {message or 'no message'}",
        provider=provider,
        error_type=kind,
        retryable=kind in RETRYABLE_ERROR_TYPES,
    )


class AnthropicStreamParser(EventParser):
    """One response's parser. Feed it each server-sent event; it returns the stream events that follow."""

    def __init__(self, provider: str = "anthropic") -> None:
        self._provider = provider
        self._failure: ProviderError | None = None
        self._blocks: dict[int, str] = {}
        """index -> the part type it streams ("text", "thinking", ...) or _SKIP; removed when stopped."""
        self._seen: set[int] = set()
        self._calls: dict[int, tuple[str, list[str]]] = {}
        """index -> a tool call's name and its input's fragments so far."""
        self._cut: dict[int, str] = {}
        """Tool calls stopped with incomplete input, by index: max_tokens cut them (said by message_delta)
        or the server broke them; their BlockStop waits until the stop reason tells which."""
        self._usage = _UsageState()
        self._started = False
        self._done = False
        self._stop_reason: str | None = None
        self._stop_details: dict[str, Any] | None = None

    def _feed(self, name: str, data: str, out: list[StreamEvent]) -> None:
        if self._done:
            return
        if name == "content_block_delta":
            self._content_delta(_loads(name, data), out)
        elif name == "ping":
            return
        elif name == "error":
            try:
                payload = from_json(data)
            except ValueError:
                payload = {"error": {"type": "api_error", "message": data[:500]}}
            raise stream_error(payload, self._provider)
        elif name in _HANDLED:
            self._event(name, _loads(name, data), out)
        elif name == "message" and data:
            # A stream without event names: dispatch on the payload's type instead.
            payload = _loads(name, data)
            kind = payload.get("type") if isinstance(payload, dict) else None
            if isinstance(kind, str) and kind != "message":
                self._event_by_type(kind, payload, out)

    def finish(self) -> list[StreamEvent]:
        if self._failure is not None:
            raise self._failure
        if not self._done:
            where = "before message_start" if not self._started else "before message_stop"
            raise ProviderConnectionError(
                f"Anthropic: the stream ended {where} (the connection was closed early)",
                provider=self._provider,
                retryable=True,
            )
        return []

    # ------------------------------------------------------------------------------------------ events

    def _event_by_type(self, kind: str, payload: Any, out: list[StreamEvent]) -> None:
        if kind == "content_block_delta":
            self._content_delta(payload, out)
        elif kind in _HANDLED:
            self._event(kind, payload, out)

    def _content_delta(self, payload: Any, out: list[StreamEvent]) -> None:
        try:
            index = payload["index"]
            delta = payload["delta"]
            kind = delta["type"]
            block = self._blocks[index]
            if kind == "text_delta" and block == "text":
                # The hot path: one event, no further checks.
                out.append(TextDelta(index=index, text=delta["text"]))
                return
        except (KeyError, TypeError, ValidationError):
            raise self._bad_delta(payload) from None
        if block != _SKIP:
            event = self._delta(index, block, kind, delta)
            if event is not None:
                out.append(event)

    def _event(self, name: str, payload: Any, out: list[StreamEvent]) -> None:
        if not isinstance(payload, dict):
            raise self._protocol(f"the {name} event is not a JSON object")
        if name == "error":
            raise stream_error(payload, self._provider)
        if name == "message_start":
            if self._started:
                raise self._protocol("message_start arrived twice")
            self._started = True
            message = payload.get("message")
            if not isinstance(message, dict):
                raise self._protocol("message_start has no message")
            out.append(ResponseStart(model=_str(message.get("model")), response_id=_str(message.get("id"))))
            out.append(UsageUpdate(usage=self._usage.apply(message.get("usage"))))
            return
        if not self._started:
            raise self._protocol(f"{name} arrived before message_start")
        if name == "content_block_start":
            self._block_start(payload, out)
        elif name == "content_block_stop":
            index = payload.get("index")
            block = self._blocks.pop(index, None) if isinstance(index, int) else None
            if block is None or not isinstance(index, int):
                raise self._protocol(f"content_block_stop for block {index!r}, which is not open")
            call = self._calls.pop(index, None)
            if call is not None and not whole_json_object("".join(call[1])):
                self._cut[index] = call[0]
            elif block != _SKIP:
                out.append(BlockStop(index=index))
        elif name == "message_delta":
            delta = payload.get("delta")
            if isinstance(delta, dict):
                self._message_delta(delta)
            if self._cut and self._stop_reason == "max_tokens":
                # Not the server's fault, and the same request would be cut the same way: say so plainly.
                raise ProviderError(
                    f"Anthropic: the response reached max_tokens while writing the input of a call to "
                    f"{next(iter(self._cut.values()))!r}, so the call is incomplete; raise max_tokens",
                    provider=self._provider,
                    error_type="max_tokens",
                )
            out.append(UsageUpdate(usage=self._usage.apply(payload.get("usage"))))
        elif name == "message_stop":
            self._done = True
            # Open blocks, and calls whose input broke without max_tokens (the accumulator reports the JSON).
            for index in sorted({i for i, block in self._blocks.items() if block != _SKIP} | set(self._cut)):
                out.append(BlockStop(index=index))
            self._blocks.clear()
            self._cut.clear()
            if self._stop_reason is None:
                raise self._protocol("message_stop arrived without a stop reason")
            out.append(ResponseEnd(stop_reason=self._stop_reason, stop_details=self._stop_details))

    def _message_delta(self, delta: dict[str, Any]) -> None:
        stop_reason = delta.get("stop_reason")
        if isinstance(stop_reason, str):
            self._stop_reason = stop_reason
        details = delta.get("stop_details")
        if isinstance(details, dict):
            self._stop_details = details
        sequence = delta.get("stop_sequence")
        if isinstance(sequence, str) and self._stop_details is None:
            # Our ResponseEnd has no stop_sequence field: it travels in the details.
            self._stop_details = {"type": "stop_sequence", "stop_sequence": sequence}

    def _block_start(self, payload: dict[str, Any], out: list[StreamEvent]) -> None:
        index = payload.get("index")
        block = payload.get("content_block")
        if not isinstance(index, int) or index < 0 or not isinstance(block, dict):
            raise self._protocol(f"malformed content_block_start: {_short(payload)}")
        if index in self._seen:
            raise self._protocol(f"content block {index} started twice")
        self._seen.add(index)
        kind = block.get("type")
        try:
            if kind == "text":
                citations = block.get("citations") or None
                out.append(BlockStart(index=index, block=TextPart(text="", citations=citations)))
                if block.get("text"):
                    out.append(TextDelta(index=index, text=block["text"]))
            elif kind == "thinking":
                out.append(BlockStart(index=index, block=ThinkingPart(thinking="")))
                if block.get("thinking"):
                    out.append(ThinkingDelta(index=index, thinking=block["thinking"]))
                if block.get("signature"):
                    out.append(SignatureDelta(index=index, signature=block["signature"]))
            elif kind == "redacted_thinking":
                out.append(BlockStart(index=index, block=RedactedThinkingPart(data=block["data"])))
            elif kind in ("tool_use", "server_tool_use"):
                part = ToolCallPart if kind == "tool_use" else ServerToolCallPart
                call = part(id=block["id"], name=block["name"], input={})
                out.append(BlockStart(index=index, block=call))
                self._calls[index] = (call.name, [])
                if block.get("input"):
                    # A server that sends the whole input up front: pass it on as one fragment.
                    whole = json.dumps(block["input"])
                    self._calls[index][1].append(whole)
                    out.append(ToolInputDelta(index=index, partial_json=whole))
            elif kind in SERVER_RESULT_BLOCKS:
                result = ServerToolResultPart(call_id=block["tool_use_id"], kind=kind, content=block.get("content"))
                out.append(BlockStart(index=index, block=result))
                kind = "server_tool_result"
            else:
                kind = _SKIP
        except (KeyError, TypeError, ValidationError):
            raise self._protocol(f"malformed {kind} block: {_short(block)}") from None
        self._blocks[index] = "tool_call" if kind in ("tool_use", "server_tool_use") else str(kind)

    def _delta(self, index: int, block: str, kind: str, delta: dict[str, Any]) -> StreamEvent | None:
        try:
            if kind == "text_delta":
                expected = "text"
                event: StreamEvent | None = TextDelta(index=index, text=delta["text"])
            elif kind == "input_json_delta":
                expected = "tool_call"
                fragment = delta["partial_json"]
                event = ToolInputDelta(index=index, partial_json=fragment) if fragment else None
                if fragment and index in self._calls:
                    self._calls[index][1].append(fragment)
            elif kind == "thinking_delta":
                expected = "thinking"
                event = ThinkingDelta(index=index, thinking=delta["thinking"])
            elif kind == "signature_delta":
                expected = "thinking"
                event = SignatureDelta(index=index, signature=delta["signature"])
            elif kind == "citations_delta":
                expected = "text"
                event = CitationDelta(index=index, citation=delta["citation"])
            else:
                return None  # a delta type newer than this parser
        except (KeyError, TypeError, ValidationError):
            raise self._protocol(f"malformed {kind}: {_short(delta)}") from None
        if block != expected:
            raise self._protocol(f"a {kind} arrived for content block {index}, a {block} block")
        return event

    def _bad_delta(self, payload: Any) -> ProviderProtocolError:
        index = payload.get("index") if isinstance(payload, dict) else None
        if isinstance(index, int) and index not in self._blocks:
            return self._protocol(f"content_block_delta for block {index}, which is not open")
        return self._protocol(f"malformed content_block_delta: {_short(payload)}")

    def _protocol(self, message: str) -> ProviderProtocolError:
        return ProviderProtocolError(f"Anthropic: {message}", provider=self._provider)


SERVER_RESULT_BLOCKS = frozenset({"web_search_tool_result", "web_fetch_tool_result"})
"""Result blocks of the server tools agentcell offers; their content is kept as it came."""

_HANDLED = frozenset(
    {"message_start", "content_block_start", "content_block_stop", "message_delta", "message_stop", "error"}
)


def _loads(name: str, data: str) -> Any:
    try:
        # pydantic-core's Rust parser is several times faster than json.loads on these small payloads.
        return from_json(data)
    except ValueError as exc:
        raise ProviderProtocolError(
            f"Anthropic sent malformed JSON in a {name} event: {exc}; data starts {data[:120]!r}",
            provider="anthropic",
        ) from None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _short(value: object) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 200 else text[:200] + "..."
