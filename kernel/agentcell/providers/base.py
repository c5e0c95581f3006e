"""What every model provider speaks: a provider-neutral request, stream events, and the Provider ABC.

A provider turns a :class:`ModelRequest` into an async stream of :data:`StreamEvent` and raises a
:class:`~agentcell.errors.ProviderError` when the request fails. :class:`ResponseAccumulator` folds a
stream into the finished :class:`ModelResponse` exactly as the runner and the replay recorder see it.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ..errors import ProviderProtocolError
from ..events import ImageBlock, TextBlock
from ..records.agent import ServerTool
from ..records.model import ModelConfig, ModelSettings
from ..usage import FREE, InputBilling, Pricing, Usage

__all__ = [
    "BlockStart",
    "BlockStop",
    "CitationDelta",
    "ImagePart",
    "Message",
    "ModelConfig",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "Part",
    "Provider",
    "RedactedThinkingPart",
    "ResponseAccumulator",
    "ResponseEnd",
    "ResponsePart",
    "ResponseStart",
    "ServerToolCallPart",
    "ServerToolResultPart",
    "SignatureDelta",
    "StreamEvent",
    "TextDelta",
    "TextPart",
    "ThinkingDelta",
    "ThinkingPart",
    "ToolCallPart",
    "ToolInputDelta",
    "ToolResultPart",
    "ToolSchema",
    "UsageUpdate",
    "shows_output",
    "stream_event_adapter",
]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# ---------------------------------------------------------------------------------------------- messages


class TextPart(_Model):
    type: Literal["text"] = "text"
    text: str
    citations: list[dict[str, Any]] | None = None


class ThinkingPart(_Model):
    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str | None = None


class RedactedThinkingPart(_Model):
    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


class ToolCallPart(_Model):
    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    input: dict[str, Any]


class ServerToolCallPart(_Model):
    """A call the provider ran itself (web search); sent back as it came, with its result."""

    type: Literal["server_tool_call"] = "server_tool_call"
    id: str
    name: str
    input: dict[str, Any]


class ServerToolResultPart(_Model):
    """What a server tool returned, in the provider's own shape (``kind``: its block type)."""

    type: Literal["server_tool_result"] = "server_tool_result"
    call_id: str
    kind: str
    """The provider's block type, e.g. ``web_search_tool_result``."""
    content: Any = None


class ToolResultPart(_Model):
    type: Literal["tool_result"] = "tool_result"
    call_id: str
    content: list[Annotated[TextBlock | ImageBlock, Field(discriminator="type")]] = []
    is_error: bool = False


ImagePart = ImageBlock

Part: TypeAlias = Annotated[
    TextPart
    | ThinkingPart
    | RedactedThinkingPart
    | ToolCallPart
    | ServerToolCallPart
    | ServerToolResultPart
    | ToolResultPart
    | ImageBlock,
    Field(discriminator="type"),
]
ResponsePart: TypeAlias = (
    TextPart | ThinkingPart | RedactedThinkingPart | ToolCallPart | ServerToolCallPart | ServerToolResultPart
)
"""What a response's content holds."""


class Message(_Model):
    role: Literal["user", "assistant"]
    content: list[Part]


class ToolSchema(_Model):
    """The model-facing description of a tool."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ModelRequest(_Model):
    model: str
    """The model name as the provider knows it (without any ``provider:`` prefix)."""
    system: str | None = None
    messages: list[Message]
    tools: list[ToolSchema] = []
    server_tools: list[ServerTool] = []
    """Tools the provider runs itself (only providers that have them accept them)."""
    settings: ModelSettings = ModelSettings()


# ---------------------------------------------------------------------------------------------- stream


class ResponseStart(_Model):
    kind: Literal["response_start"] = "response_start"
    model: str | None = None
    response_id: str | None = None
    source: Literal["replay", "live"] | None = None
    """Set where a notebook's recording is consulted: ``replay``, answered from it; ``live``, sent to the
    model because the recording has no answer for the request. None when no recording is involved."""


class BlockStart(_Model):
    kind: Literal["block_start"] = "block_start"
    index: int = Field(ge=0)
    block: Annotated[ResponsePart, Field(discriminator="type")]
    """The block as it starts: empty text/thinking, or a tool call with its id and name and no input yet."""


class TextDelta(_Model):
    kind: Literal["text_delta"] = "text_delta"
    index: int
    text: str


class ThinkingDelta(_Model):
    kind: Literal["thinking_delta"] = "thinking_delta"
    index: int
    thinking: str


class SignatureDelta(_Model):
    """Replaces the thinking block's signature."""

    kind: Literal["signature_delta"] = "signature_delta"
    index: int
    signature: str


class ToolInputDelta(_Model):
    kind: Literal["tool_input_delta"] = "tool_input_delta"
    index: int
    partial_json: str


class CitationDelta(_Model):
    kind: Literal["citation_delta"] = "citation_delta"
    index: int
    citation: dict[str, Any]


class BlockStop(_Model):
    kind: Literal["block_stop"] = "block_stop"
    index: int


class UsageUpdate(_Model):
    """The request's usage so far; each update replaces the previous one."""

    kind: Literal["usage"] = "usage"
    usage: Usage


class ResponseEnd(_Model):
    kind: Literal["response_end"] = "response_end"
    stop_reason: str
    """end_turn, max_tokens, stop_sequence, tool_use, pause_turn, refusal, model_context_window_exceeded."""
    stop_details: dict[str, Any] | None = None


StreamEvent: TypeAlias = Annotated[
    ResponseStart
    | BlockStart
    | TextDelta
    | ThinkingDelta
    | SignatureDelta
    | ToolInputDelta
    | CitationDelta
    | BlockStop
    | UsageUpdate
    | ResponseEnd,
    Field(discriminator="kind"),
]
stream_event_adapter: TypeAdapter[StreamEvent] = TypeAdapter(StreamEvent)


def shows_output(event: StreamEvent) -> bool:
    """Whether the engine shows this event to the user (a text delta, or the start of a thinking block).

    Before the first such event a failed request can be retried invisibly, which is the provider's job;
    after it, the engine abandons the preview and retries. Tool calls are never previewed, so a failure
    inside tool input is still the provider's to retry.
    """
    if type(event) is TextDelta:
        return bool(event.text)
    return type(event) is BlockStart and isinstance(event.block, ThinkingPart | RedactedThinkingPart)


class ModelResponse(_Model):
    content: list[Annotated[ResponsePart, Field(discriminator="type")]]
    stop_reason: str
    stop_details: dict[str, Any] | None = None
    usage: Usage = Usage()
    model: str | None = None

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        return [part for part in self.content if isinstance(part, ToolCallPart)]

    @property
    def text(self) -> str:
        return "".join(part.text for part in self.content if isinstance(part, TextPart))


class ResponseAccumulator:
    """Folds stream events into a :class:`ModelResponse`; raises ProviderProtocolError on a broken stream."""

    def __init__(self) -> None:
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        self.usage = Usage()
        self.model: str | None = None
        self.stop_reason: str | None = None
        self.stop_details: dict[str, Any] | None = None

    def add(self, event: StreamEvent) -> None:
        match event:
            case ResponseStart():
                self.model = event.model
            case BlockStart():
                if event.index in self._blocks:
                    raise ProviderProtocolError(f"content block {event.index} started twice")
                self._blocks[event.index] = event.block.model_dump()
                if isinstance(event.block, ToolCallPart | ServerToolCallPart):
                    self._json[event.index] = []
            case TextDelta():
                self._block(event.index, "text")["text"] += event.text
            case ThinkingDelta():
                self._block(event.index, "thinking")["thinking"] += event.thinking
            case SignatureDelta():
                self._block(event.index, "thinking")["signature"] = event.signature
            case ToolInputDelta():
                if self._blocks.get(event.index, {}).get("type") != "server_tool_call":
                    self._block(event.index, "tool_call")
                self._json[event.index].append(event.partial_json)
            case CitationDelta():
                block = self._block(event.index, "text")
                block["citations"] = [*(block.get("citations") or []), event.citation]
            case BlockStop():
                if event.index in self._json:
                    self._blocks[event.index]["input"] = _parse_tool_input(self._json.pop(event.index))
            case UsageUpdate():
                self.usage = event.usage
            case ResponseEnd():
                self.stop_reason = event.stop_reason
                self.stop_details = event.stop_details

    def _block(self, index: int, kind: str) -> dict[str, Any]:
        block = self._blocks.get(index)
        if block is None or block["type"] != kind:
            raise ProviderProtocolError(f"a {kind} delta arrived for content block {index}, which is not {kind}")
        return block

    def finish(self) -> ModelResponse:
        if self.stop_reason is None:
            raise ProviderProtocolError("the stream ended without a stop reason")
        for index, fragments in self._json.items():  # blocks never stopped: parse what arrived
            self._blocks[index]["input"] = _parse_tool_input(fragments)
        self._json.clear()
        content = [self._blocks[i] for i in sorted(self._blocks)]
        return ModelResponse.model_validate(
            {
                "content": content,
                "stop_reason": self.stop_reason,
                "stop_details": self.stop_details,
                "usage": self.usage,
                "model": self.model,
            }
        )


def _parse_tool_input(fragments: list[str]) -> dict[str, Any]:
    raw = "".join(fragments)
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ProviderProtocolError(f"tool input is not valid JSON: {exc.msg} in {raw[:200]!r}") from exc
    if not isinstance(value, dict):
        raise ProviderProtocolError(f"tool input must be a JSON object, got {type(value).__name__}")
    return value


# ---------------------------------------------------------------------------------------------- provider


class Provider(ABC):
    """A model API. Subclasses implement :meth:`stream`; everything else has a sensible default."""

    name: str = "provider"

    @abstractmethod
    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream one response. Raise ProviderError (never another exception type) when it fails."""

    def pricing(self, model: str) -> Pricing | None:
        """List prices for ``model`` (free unless the provider knows better); None when it has no known
        list price: its cost is then unknown, and no budget can be held to it."""
        del model
        return FREE

    def context_window(self, model: str) -> int | None:
        """How many tokens (input and output) one request to ``model`` may hold; None when unknown."""
        del model
        return None

    def estimate_input_tokens(self, request: ModelRequest) -> int:
        """About how many input tokens the request holds, for the context-window gauge and compaction (not
        for the budget, which needs the bound): a token per four bytes, plus the per-message allowance.
        Providers with their own tokenizer count exactly."""
        body = request.model_dump_json(include={"system", "messages", "tools"})
        return -(-len(body.encode()) // 4) + 16 * (len(request.messages) + len(request.tools))

    def input_token_bound(self, request: ModelRequest) -> int:
        """An upper bound on the input tokens the request can be billed for.

        Byte-level BPE tokenizers never spend more than one token per UTF-8 byte; a per-message and a fixed
        allowance cover role markers and the tool-use preamble providers add. Providers with an exact
        tokenizer may return less; returning less than the truth would let spending pass the budget.
        """
        body = request.model_dump_json(include={"system", "messages", "tools"})
        return len(body.encode()) + 16 * (len(request.messages) + len(request.tools)) + 1024

    async def count_input_tokens(self, request: ModelRequest) -> int | None:
        """The input tokens the request will be billed for, counted by the provider's own tokenizer (never
        less than the truth); None when it cannot count. The engine asks only when the cheap
        :meth:`input_token_bound` would not fit what remains of a budget, so this may take a request."""
        del request
        return None

    def check_ready(self) -> None:  # noqa: B027 - optional hook: most providers need nothing
        """Raise ConfigurationError, saying what to set, when a request could not even be sent as configured
        (no API key where one is needed). Nothing goes over the network: a wrong key is found by the first
        request."""

    def preparing(self) -> str | None:
        """What the next request waits on before the model itself, for front ends to say (``loading the
        local model``); None when it waits only on the model."""
        return None

    def input_billing(self, request: ModelRequest) -> InputBilling:
        """How the request's input tokens may be billed: ``plain`` (never written to a cache), ``5m`` (perhaps
        as 5-minute cache writes), ``any`` (perhaps as 1-hour writes: the dearest). The worst case of a
        request prices its input at the dearest way this allows; ``any`` unless the provider knows."""
        del request
        return "any"

    async def aclose(self) -> None:  # noqa: B027 - optional hook, most providers hold nothing
        """Release connections and threads."""
