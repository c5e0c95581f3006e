"""A provider's stream becomes the session's events: previews while it streams, buffered events at its end.

:class:`ResponseRecorder` turns one streaming attempt into events of one thread. Each content block that
opens gets an event id; text streams as ``event_delta`` previews under that id; when the response is complete
:meth:`ResponseRecorder.commit` emits the buffered ``agent.message``/``agent.thinking``/``agent.tool_use``
events with the same ids, so a front end reconciles each preview with its durable event. A failed attempt
commits nothing (its previews are abandoned); an interrupted one keeps the text already shown.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from typing import Literal

from ..events import (
    AgentCustomToolUse,
    AgentMessage,
    AgentServerToolResult,
    AgentServerToolUse,
    AgentThinking,
    AgentToolUse,
    ContentDelta,
    EventDelta,
    EventStart,
    PreviewRef,
    TextBlock,
)
from ..ids import new_id
from ..providers.base import (
    BlockStart,
    ModelRequest,
    ModelResponse,
    RedactedThinkingPart,
    ResponseStart,
    ServerToolCallPart,
    ServerToolResultPart,
    StreamEvent,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ThinkingPart,
    ToolCallPart,
    ToolInputDelta,
    shows_output,
)
from ..usage import Usage
from .log import SessionLog

__all__ = ["Attempt", "ResponseRecorder", "cut_short_usage"]

Permission = Literal["allow", "ask", "deny"]
Evaluate = Callable[[str, ToolCallPart], "Permission | None"]
"""What the preset says of a tool call (event id, call), for front ends; None when the host cannot tell."""


@dataclass
class _Block:
    event_id: str
    kind: str
    text: list[str] = field(default_factory=list)
    entry: int = 0
    """Which entry of its event's content array the block streams into (text blocks share one message)."""


@dataclass
class Attempt:
    """What one streaming attempt has shown so far."""

    blocks: dict[int, _Block] = field(default_factory=dict)
    shown: bool = False
    generated_chars: int = 0
    """Characters of text, thinking and tool input received: a floor for the output of a cut request."""
    source: Literal["replay", "live"] | None = None
    """Where the answer came from when a notebook's recording was consulted (``ResponseStart.source``)."""

    def see(self, event: StreamEvent) -> None:
        self.shown = self.shown or shows_output(event)
        if isinstance(event, ResponseStart):
            self.source = event.source
        elif isinstance(event, TextDelta):
            self.generated_chars += len(event.text)
        elif isinstance(event, ThinkingDelta):
            self.generated_chars += len(event.thinking)
        elif isinstance(event, ToolInputDelta):
            self.generated_chars += len(event.partial_json)


class ResponseRecorder:
    """Emits one thread's previews and buffered events for the responses of its requests."""

    def __init__(self, log: SessionLog, thread_id: str | None) -> None:
        self.log = log
        self.thread_id = thread_id

    def preview(self, event: StreamEvent, state: Attempt) -> None:
        match event:
            case BlockStart(block=TextPart()):
                previous = state.blocks.get(event.index - 1)
                if previous is not None and previous.kind == "agent.message":
                    # Consecutive text blocks stream into one message, each an entry of its content.
                    state.blocks[event.index] = _Block(previous.event_id, "agent.message", entry=previous.entry + 1)
                else:
                    self._open(event.index, "agent.message", state)
            case BlockStart(block=ThinkingPart() | RedactedThinkingPart()):
                self._open(event.index, "agent.thinking", state)
            case BlockStart(block=ToolCallPart()):
                state.blocks[event.index] = _Block(new_id("sevt"), "agent.tool_use")
            case BlockStart(block=ServerToolCallPart() | ServerToolResultPart()):
                state.blocks[event.index] = _Block(new_id("sevt"), "agent.server_tool")
            case TextDelta():
                block = state.blocks.get(event.index)
                if block is not None and event.text:
                    block.text.append(event.text)
                    self.log.emit(
                        EventDelta(
                            event_id=block.event_id,
                            delta=ContentDelta(index=block.entry, content=TextBlock(text=event.text)),
                            thread_id=self.thread_id,
                        )
                    )
            case _:
                pass

    def _open(self, index: int, kind: Literal["agent.message", "agent.thinking"], state: Attempt) -> None:
        block = _Block(new_id("sevt"), kind)
        state.blocks[index] = block
        self.log.emit(EventStart(event=PreviewRef(type=kind, id=block.event_id), thread_id=self.thread_id))

    def commit(
        self, response: ModelResponse, state: Attempt, *, custom: Container[str], evaluate: Evaluate
    ) -> list[AgentToolUse | AgentCustomToolUse]:
        """Emit the buffered events of a complete response, reusing each preview's id; returns its tool uses
        (those named in ``custom`` as ``agent.custom_tool_use``, for the client to answer)."""
        log, thread = self.log, self.thread_id
        uses: list[AgentToolUse | AgentCustomToolUse] = []
        servers: dict[str, str] = {}
        """A server tool's call id -> its agent.server_tool_use event id."""
        # Every content block began with a BlockStart, so blocks and content line up by index.
        ids = [state.blocks[i].event_id for i in sorted(state.blocks)]
        texts: dict[str, list[TextBlock]] = {}
        for event_id, part in zip(ids, response.content, strict=True):
            if isinstance(part, TextPart):
                texts.setdefault(event_id, []).append(TextBlock(text=part.text))
        for event_id, part in zip(ids, response.content, strict=True):
            match part:
                case TextPart():
                    if (content := texts.pop(event_id, None)) is not None:  # a message, at its first block
                        log.emit(log.make(AgentMessage, id=event_id, thread_id=thread, content=content))
                case ThinkingPart():
                    thinking = log.make(
                        AgentThinking, id=event_id, thread_id=thread, thinking=part.thinking, signature=part.signature
                    )
                    log.emit(thinking)
                case RedactedThinkingPart():
                    log.emit(log.make(AgentThinking, id=event_id, thread_id=thread, redacted_data=part.data))
                case ServerToolCallPart():
                    server_use = log.make(
                        AgentServerToolUse,
                        id=event_id,
                        thread_id=thread,
                        call_id=part.id,
                        name=part.name,
                        input=part.input,
                    )
                    log.emit(server_use)
                    servers[part.id] = server_use.id
                case ServerToolResultPart():
                    log.emit(
                        log.make(
                            AgentServerToolResult,
                            id=event_id,
                            thread_id=thread,
                            tool_use_id=servers.get(part.call_id, part.call_id),
                            call_id=part.call_id,
                            kind=part.kind,
                            content=part.content,
                        )
                    )
                case ToolCallPart() if part.name in custom:
                    use = log.make(
                        AgentCustomToolUse,
                        id=event_id,
                        thread_id=thread,
                        call_id=part.id,
                        name=part.name,
                        input=part.input,
                    )
                    log.emit(use)
                    uses.append(use)
                case ToolCallPart():
                    # "ask" tells a front end the call will wait for user.tool_confirmation.
                    tool_use = log.make(
                        AgentToolUse,
                        id=event_id,
                        thread_id=thread,
                        call_id=part.id,
                        name=part.name,
                        input=part.input,
                        evaluated_permission=evaluate(event_id, part),
                    )
                    log.emit(tool_use)
                    uses.append(tool_use)
        return uses

    def keep_interrupted_text(self, state: Attempt) -> None:
        """The attempt was interrupted: keep the text already shown, marked ``interrupted``."""
        shown: dict[str, list[TextBlock]] = {}
        for _, block in sorted(state.blocks.items()):
            if block.kind == "agent.message" and (text := "".join(block.text)):
                shown.setdefault(block.event_id, []).append(TextBlock(text=text))
        for event_id, content in shown.items():
            self.log.emit(
                self.log.make(AgentMessage, id=event_id, thread_id=self.thread_id, content=content, interrupted=True)
            )


def cut_short_usage(reported: Usage, state: Attempt, request: ModelRequest) -> Usage:
    """Usage of a request that failed or was interrupted: the final count never arrived, so the output is
    at least what was received (four characters a token), never more than max_tokens."""
    received = min(request.settings.max_tokens, math.ceil(state.generated_chars / 4))
    return reported.model_copy(update={"output_tokens": max(reported.output_tokens, received)})
