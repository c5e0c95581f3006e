"""``scripted``: a deterministic test double that plays a script. It is not a model.

Use it to test notebooks, tools and front ends without a key, a network or a GPU, the way pydantic-ai
ships ``TestModel``. A script is a list of responses; each response is a list of steps (text, thinking,
tool calls, delays, errors) with optional usage and stop reason. When the script runs out, or when there
is none, the provider echoes the latest user text: ``You said: ...``.

Select it with the model name ``scripted``, or ``scripted:/path/to/script.json`` to load a script file
(a JSON list of responses, or ``{"responses": [...], "pricing": {...}, "context_window": N}``, where the
window stands for what a real provider reports about its model).
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ..errors import (
    InvalidInputError,
    ProviderConnectionError,
    ProviderError,
    ProviderProtocolError,
    ProviderStatusError,
)
from ..ids import new_id
from ..usage import FREE, Pricing, Usage, flat_pricing
from .base import (
    BlockStart,
    BlockStop,
    ModelRequest,
    Provider,
    ResponseEnd,
    ResponseStart,
    SignatureDelta,
    StreamEvent,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ThinkingPart,
    ToolCallPart,
    ToolInputDelta,
    ToolResultPart,
    UsageUpdate,
)

__all__ = [
    "ScriptedDelay",
    "ScriptedError",
    "ScriptedProvider",
    "ScriptedResponse",
    "ScriptedStep",
    "ScriptedText",
    "ScriptedThinking",
    "ScriptedToolCall",
]


class _Step(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ScriptedText(_Step):
    kind: Literal["text"] = "text"
    text: str
    chunk_size: int = Field(default=8, ge=1)
    """Characters per delta."""
    delay: float = Field(default=0.0, ge=0)
    """Seconds to wait before each delta."""


class ScriptedThinking(_Step):
    kind: Literal["thinking"] = "thinking"
    thinking: str
    signature: str = "scripted-signature"
    chunk_size: int = Field(default=32, ge=1)


class ScriptedToolCall(_Step):
    kind: Literal["tool_call"] = "tool_call"
    name: str
    input: dict[str, Any] = {}
    id: str | None = None


class ScriptedDelay(_Step):
    kind: Literal["delay"] = "delay"
    seconds: float = Field(ge=0)


class ScriptedError(_Step):
    """Fail the request here, as a provider would (before or after some content was streamed)."""

    kind: Literal["error"] = "error"
    message: str = "scripted failure"
    error_type: str = "api_error"
    status_code: int | None = 500
    retryable: bool = True
    error_class: Literal["status", "connection", "protocol"] = "status"


ScriptedStep: TypeAlias = Annotated[
    ScriptedText | ScriptedThinking | ScriptedToolCall | ScriptedDelay | ScriptedError,
    Field(discriminator="kind"),
]


class ScriptedResponse(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    steps: list[ScriptedStep] = []
    stop_reason: str | None = None
    """Defaults to ``tool_use`` when the response calls a tool, else ``end_turn``."""
    usage: Usage | None = None
    """Defaults to one token per four characters of the request and of the output."""


ScriptSource: TypeAlias = Sequence[ScriptedResponse] | Callable[[ModelRequest], ScriptedResponse]

_responses_adapter: TypeAdapter[list[ScriptedResponse]] = TypeAdapter(list[ScriptedResponse])
_window_adapter: TypeAdapter[int | None] = TypeAdapter(Annotated[int, Field(ge=256)] | None)


class ScriptedProvider(Provider):
    """Plays ``script`` one response per request, then echoes. ``requests`` records what it was sent (each
    request holds the whole conversation, so a long session's record grows with the square of its turns:
    ``keep_requests=False``, as the model names ``scripted…`` build it, records nothing)."""

    name = "scripted"

    def __init__(
        self,
        script: ScriptSource | None = None,
        *,
        pricing: Pricing = FREE,
        keep_requests: bool = True,
        context_window: int | None = None,
    ) -> None:
        self._script = script
        self._pricing = pricing
        self._context_window = context_window
        self._lock = threading.Lock()
        self._next = 0
        self._keep_requests = keep_requests
        self.requests: list[ModelRequest] = []

    @classmethod
    def from_file(cls, path: str | Path, *, keep_requests: bool = True) -> ScriptedProvider:
        """Load ``[response, ...]`` or ``{"responses": [...], "pricing": {"input_mtok": .., ...},
        "context_window": N}``."""
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise InvalidInputError(f"cannot read the script {path}: {exc}") from exc
        pricing = FREE
        window: int | None = None
        try:
            if isinstance(data, dict):
                prices = data.get("pricing")
                if prices:
                    pricing = flat_pricing(**{k: Decimal(str(v)) for k, v in prices.items()})
                window = _window_adapter.validate_python(data.get("context_window"))
                data = data.get("responses", [])
            responses = _responses_adapter.validate_python(data)
        except (TypeError, ValueError, AttributeError, ArithmeticError) as exc:  # ValidationError is a ValueError
            raise InvalidInputError(f"the script {path} is not valid: {exc}") from exc
        return cls(responses, pricing=pricing, keep_requests=keep_requests, context_window=window)

    def pricing(self, model: str) -> Pricing:
        del model
        return self._pricing

    def context_window(self, model: str) -> int | None:
        del model
        return self._context_window

    def _take(self, request: ModelRequest) -> ScriptedResponse:
        with self._lock:
            if self._keep_requests:
                self.requests.append(request)
            script = self._script
            if callable(script):
                return script(request)
            if script is not None and self._next < len(script):
                response = script[self._next]
                self._next += 1
                return response
        return ScriptedResponse(steps=[ScriptedText(text=f"You said: {_latest_user_text(request)}")])

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        response = self._take(request)
        yield ResponseStart(model=request.model, response_id=new_id("msg"))
        index = 0
        output_chars = 0
        calls = False
        for step in response.steps:
            match step:
                case ScriptedDelay():
                    await asyncio.sleep(step.seconds)
                case ScriptedError():
                    raise _error(step)
                case ScriptedText():
                    yield BlockStart(index=index, block=TextPart(text=""))
                    for chunk in _chunks(step.text, step.chunk_size):
                        if step.delay:
                            await asyncio.sleep(step.delay)
                        else:
                            await asyncio.sleep(0)  # let interrupts and readers in, as a socket would
                        yield TextDelta(index=index, text=chunk)
                    yield BlockStop(index=index)
                    output_chars += len(step.text)
                    index += 1
                case ScriptedThinking():
                    yield BlockStart(index=index, block=ThinkingPart(thinking=""))
                    for chunk in _chunks(step.thinking, step.chunk_size):
                        yield ThinkingDelta(index=index, thinking=chunk)
                    yield SignatureDelta(index=index, signature=step.signature)
                    yield BlockStop(index=index)
                    output_chars += len(step.thinking)
                    index += 1
                case ScriptedToolCall():
                    call_id = step.id or new_id("toolu")
                    yield BlockStart(index=index, block=ToolCallPart(id=call_id, name=step.name, input={}))
                    payload = json.dumps(step.input)
                    for chunk in _chunks(payload, 16):
                        yield ToolInputDelta(index=index, partial_json=chunk)
                    yield BlockStop(index=index)
                    output_chars += len(payload)
                    calls = True
                    index += 1
        usage = response.usage or Usage(
            input_tokens=math.ceil(len(request.model_dump_json(include={"system", "messages", "tools"})) / 4),
            output_tokens=min(request.settings.max_tokens, math.ceil(output_chars / 4)),
        )
        yield UsageUpdate(usage=usage)
        yield ResponseEnd(stop_reason=response.stop_reason or ("tool_use" if calls else "end_turn"))


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _error(step: ScriptedError) -> ProviderError:
    kwargs: dict[str, Any] = {
        "provider": "scripted",
        "status_code": step.status_code,
        "error_type": step.error_type,
        "retryable": step.retryable,
    }
    if step.error_class == "connection":
        return ProviderConnectionError(step.message, **kwargs)
    if step.error_class == "protocol":
        return ProviderProtocolError(step.message, **kwargs)
    return ProviderStatusError(step.message, **kwargs)


def _latest_user_text(request: ModelRequest) -> str:
    for message in reversed(request.messages):
        if message.role != "user":
            continue
        for part in reversed(message.content):
            if isinstance(part, TextPart):
                return part.text
            if isinstance(part, ToolResultPart):
                return "(tool result)"
    return ""
