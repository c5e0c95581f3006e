"""OpenAI-compatible Chat Completions SSE -> provider-neutral stream events.

Servers differ (see shared/reference/protocols.md §2.4), so the parser is lenient where they differ and
strict where the data would otherwise be wrong:

* tool-call fragments are grouped by ``index`` (missing -> 0); a new ``id`` at an index already in use
  starts a new call (Ollama and some proxies put parallel calls all at index 0); a name is assigned, never
  appended (some servers resend the full name in every fragment); arguments are appended;
* ``delta.reasoning`` (Ollama, new vLLM) and ``delta.reasoning_content`` (llama.cpp, old vLLM) become
  thinking; ``delta.refusal`` becomes text and the stop reason ``refusal``;
* usage may come in any chunk (last wins); ``prompt_tokens`` includes cached tokens, which we count apart
  as cache reads: ``prompt_tokens_details.cached_tokens`` (OpenAI, vLLM, recent llama.cpp), or else
  llama.cpp's ``timings.cache_n`` (the prompt tokens its server took from its cache);
* the stream ends at ``data: [DONE]``, or at the end of the body once a finish reason was seen.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from pydantic_core import from_json

from ..errors import ProviderConnectionError, ProviderError, ProviderProtocolError, ProviderStatusError
from ..usage import Usage
from ._http import RETRYABLE_ERROR_TYPES, EventParser, error_fields, whole_json_object
from .base import (
    BlockStart,
    BlockStop,
    ResponseEnd,
    ResponseStart,
    StreamEvent,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ThinkingPart,
    ToolCallPart,
    ToolInputDelta,
    UsageUpdate,
)

__all__ = ["OpenAIStreamParser", "map_usage"]

STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


@dataclass
class _Call:
    id: str | None
    name: str | None = None
    index: int | None = None
    """Our block index, once the call has a name and its BlockStart went out."""
    early: list[str] = field(default_factory=list)
    """Argument fragments that came before the name."""
    arguments: list[str] = field(default_factory=list)
    """Every argument fragment, to tell a call cut short by max_tokens at the end."""


def map_usage(raw: object, timings: object = None) -> Usage:
    """OpenAI usage -> ours: cached prompt tokens are not part of our ``input_tokens``. ``timings`` is
    llama.cpp's, whose ``cache_n`` stands in for the cached count an older server leaves out of usage."""
    if not isinstance(raw, dict):
        raise ProviderProtocolError("usage is not a JSON object")
    if "prompt_tokens_details" not in raw and isinstance(timings, dict) and "cache_n" in timings:
        raw = {**raw, "prompt_tokens_details": {"cached_tokens": timings["cache_n"]}}
    prompt = raw.get("prompt_tokens") or 0
    completion = raw.get("completion_tokens") or 0
    details = raw.get("prompt_tokens_details")
    cached = (details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    if not all(isinstance(n, int) for n in (prompt, completion, cached)):
        raise ProviderProtocolError(f"usage counts are not integers: {raw!r}"[:300])
    cached = min(cached, prompt)
    return Usage(input_tokens=prompt - cached, output_tokens=completion, cache_read_input_tokens=cached)


class OpenAIStreamParser(EventParser):
    def __init__(self, provider: str = "openai", display: str = "OpenAI", *, input_estimate: int = 0) -> None:
        self._provider = provider
        self._display = display
        self._input_estimate = input_estimate
        """Input tokens to report when the server sends no usage at all (llama.cpp's server, for one)."""
        self._content_chunks = 0
        self._failure: ProviderError | None = None
        self._next = 0
        self._text: int | None = None
        self._thinking: int | None = None
        self._calls: dict[int, _Call] = {}
        self._all_calls: list[_Call] = []
        self._open: list[int] = []
        self._usage: Usage | None = None
        self._finish: str | None = None
        self._refusal = ""
        self._started = False
        self._done = False

    def _feed(self, name: str, data: str, out: list[StreamEvent]) -> None:
        if self._done:
            return
        if data.startswith("[DONE]"):
            self._end(out)
            return
        try:
            payload = from_json(data)  # pydantic-core: several times faster than json.loads here
        except ValueError as exc:
            raise self._protocol(f"malformed JSON in a chunk: {exc}; data starts {data[:120]!r}") from None
        if not isinstance(payload, dict):
            raise self._protocol(f"a chunk is not a JSON object: {data[:120]!r}")
        if name == "error" or "error" in payload:
            raise self._stream_error(payload)
        try:
            self._chunk(payload, out)
        except (KeyError, TypeError, AttributeError, ValidationError):
            raise self._protocol(f"malformed chunk: {data[:200]!r}") from None

    def finish(self) -> list[StreamEvent]:
        if self._failure is not None:
            raise self._failure
        if self._done:
            return []
        if self._finish is None:
            raise ProviderConnectionError(
                f"{self._display}: the stream ended before a finish reason (the connection was closed early)",
                provider=self._provider,
                retryable=True,
            )
        out: list[StreamEvent] = []
        self._end(out)
        return out

    # ------------------------------------------------------------------------------------------ chunks

    def _chunk(self, payload: dict[str, Any], out: list[StreamEvent]) -> None:
        if not self._started:
            self._started = True
            model, rid = payload.get("model"), payload.get("id")
            out.append(
                ResponseStart(
                    model=model if isinstance(model, str) else None,
                    response_id=str(rid) if rid is not None else None,
                )
            )
        usage = payload.get("usage")
        if usage:
            self._usage = map_usage(usage, payload.get("timings"))
        for choice in payload.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue  # we ask for one choice; extra ones are not ours to merge
            delta = choice.get("delta") or {}
            if (
                delta.get("content")
                or delta.get("reasoning")
                or delta.get("reasoning_content")
                or delta.get("tool_calls")
            ):
                self._content_chunks += 1
            # Only strings: some routers add structured reasoning objects that are not text to show.
            reasoning = delta.get("reasoning") or delta.get("reasoning_content")
            if reasoning and isinstance(reasoning, str):
                self._thinking_delta(reasoning, out)
            content = delta.get("content")
            if content and isinstance(content, str):
                self._text_delta(content, out)
            refusal = delta.get("refusal")
            if refusal and isinstance(refusal, str):
                self._refusal += refusal
                self._text_delta(refusal, out)
            for fragment in delta.get("tool_calls") or ():
                self._tool_fragment(fragment, out)
            finish = choice.get("finish_reason")
            if finish:
                self._finish = finish

    def _open_block(self, out: list[StreamEvent], block: TextPart | ThinkingPart | ToolCallPart) -> int:
        index = self._next
        self._next += 1
        self._open.append(index)
        out.append(BlockStart(index=index, block=block))
        return index

    def _close(self, index: int | None, out: list[StreamEvent]) -> None:
        if index is not None and index in self._open:
            self._open.remove(index)
            out.append(BlockStop(index=index))

    def _text_delta(self, text: str, out: list[StreamEvent]) -> None:
        if self._text is None:
            self._close(self._thinking, out)
            self._thinking = None
            self._text = self._open_block(out, TextPart(text=""))
        out.append(TextDelta(index=self._text, text=text))

    def _thinking_delta(self, text: str, out: list[StreamEvent]) -> None:
        if self._thinking is None:
            self._close(self._text, out)
            self._text = None
            self._thinking = self._open_block(out, ThinkingPart(thinking=""))
        out.append(ThinkingDelta(index=self._thinking, thinking=text))

    def _tool_fragment(self, fragment: dict[str, Any], out: list[StreamEvent]) -> None:
        wire_index = fragment.get("index")
        if not isinstance(wire_index, int):
            wire_index = 0
        raw_id = fragment.get("id")
        call_id = str(raw_id) if raw_id not in (None, "") else None  # some servers send integer ids
        function = fragment.get("function") or {}
        name = function.get("name")
        arguments = function.get("arguments")
        call = self._calls.get(wire_index)
        if call is None or (call_id is not None and call.id is not None and call_id != call.id):
            call = _Call(id=call_id)
            self._calls[wire_index] = call
            self._all_calls.append(call)
        elif call_id is not None and call.id is None:
            call.id = call_id
        if name and call.index is None:
            call.name = name
        if arguments is not None and not isinstance(arguments, str):
            arguments = json.dumps(arguments)  # a server that sends the arguments as an object
        if arguments:
            call.arguments.append(arguments)
        if call.index is None:
            if arguments:
                call.early.append(arguments)
            if call.name:
                self._start_call(call, out)
        elif arguments:
            out.append(ToolInputDelta(index=call.index, partial_json=arguments))

    def _start_call(self, call: _Call, out: list[StreamEvent]) -> None:
        self._close(self._text, out)
        self._close(self._thinking, out)
        self._text = self._thinking = None
        call_id = call.id or f"call_{len(self._all_calls)}"
        call.index = self._open_block(out, ToolCallPart(id=call_id, name=call.name or "", input={}))
        if call.early:
            out.append(ToolInputDelta(index=call.index, partial_json="".join(call.early)))
            call.early.clear()

    # ------------------------------------------------------------------------------------------ end

    def _end(self, out: list[StreamEvent]) -> None:
        self._done = True
        for call in self._all_calls:
            if call.index is None:
                raise self._protocol(f"a tool call (id {call.id!r}) never named its function")
            if self._finish == "length" and not whole_json_object("".join(call.arguments)):
                # Not the server's fault, and the same request would be cut the same way: say so plainly.
                raise ProviderError(
                    f"{self._display}: the response reached max_tokens while writing the input of a call to "
                    f"{call.name!r}, so the call is incomplete; raise max_tokens",
                    provider=self._provider,
                    error_type="max_tokens",
                )
        for index in list(self._open):
            self._close(index, out)
        if self._usage is None and self._content_chunks:
            # No usage chunk although stream_options asked for one: these servers stream one token per
            # chunk, so the chunks count the output; the input is the provider's estimate.
            self._usage = Usage(input_tokens=self._input_estimate, output_tokens=self._content_chunks)
        if self._usage is not None:
            out.append(UsageUpdate(usage=self._usage))
        details: dict[str, Any] | None = None
        # Calls decide (some servers say "stop" even when they called tools), unless max_tokens was reached.
        stop = STOP_REASONS.get(self._finish or "stop", "end_turn")
        if self._all_calls and stop != "max_tokens":
            stop = "tool_use"
        if self._refusal:
            stop = "refusal"
        if stop == "refusal":
            details = {"type": "refusal", "explanation": self._refusal or None}
        out.append(ResponseEnd(stop_reason=stop, stop_details=details))

    def _stream_error(self, payload: dict[str, Any]) -> ProviderError:
        kind, message, _ = error_fields(payload)
        return ProviderStatusError(
            f"{self._display} stream error{f' {kind}' if kind else ''}: {message or 'no message'}",
            provider=self._provider,
            error_type=kind,
            retryable=kind in RETRYABLE_ERROR_TYPES,
        )

    def _protocol(self, message: str) -> ProviderProtocolError:
        return ProviderProtocolError(f"{self._display}: {message}", provider=self._provider)
