"""What a turn can start from, and the events that open it.

A turn starts from a message (text or content blocks), the client's answer to a custom tool, or an outcome
to reach. :func:`opening_events` validates the input and builds its opening events without appending
anything, so bad input is refused before the log changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import InvalidInputError
from ..events import ContentBlock, Event, ImageBlock, TextBlock, UserCustomToolResult, UserMessage
from ..records.notebook_context import NotebookContext
from .deps import TurnDeps
from .log import SessionLog
from .outcomes import OutcomeSpec, define_event
from .skills import session_skills

__all__ = [
    "CustomToolResult",
    "Input",
    "ToolChoice",
    "check_cell_id",
    "message_blocks",
    "opening_events",
    "tool_choices",
]


@dataclass(frozen=True, slots=True)
class CustomToolResult:
    """The client's answer to an ``agent.custom_tool_use``; send it to resume the turn."""

    custom_tool_use_id: str
    content: str | Sequence[ContentBlock] = ""
    is_error: bool = False


Input = str | Sequence[ContentBlock] | CustomToolResult | OutcomeSpec
"""What a turn can start from: a message, the answer to a custom tool, or an outcome to reach."""
ToolChoice = str | Sequence[str] | None
"""For a turn's first request ("any", "none" or a tool's name), or for its first requests in order."""


def opening_events(
    log: SessionLog,
    deps: TurnDeps,
    message: Input,
    *,
    cell_id: str | None = None,
    skills: Sequence[str] = (),
    context: NotebookContext | None = None,
) -> list[Event]:
    """``cell_id``: the notebook cell the turn runs for (its earlier turn, if on the path, is replaced);
    ``skills``: the session's skills to activate before the model's first request (with a message only);
    ``context``: what the notebook showed since the previous turn (with a message only)."""
    check_cell_id(cell_id)
    if context is not None and isinstance(message, CustomToolResult | OutcomeSpec):
        raise InvalidInputError("a notebook's context goes with a message, not with a tool's answer or an outcome")
    if skills:
        _check_skills(log, message, skills)
    if isinstance(message, OutcomeSpec):
        return [define_event(log, deps, message).model_copy(update={"cell_id": cell_id})]
    if isinstance(message, CustomToolResult):
        pending = log.pending_custom_tool_uses()
        if message.custom_tool_use_id not in pending:
            raise InvalidInputError(
                f"no custom tool use {message.custom_tool_use_id!r} is waiting for a result; "
                f"waiting: {sorted(pending) or 'none'}"
            )
        content = message.content
        blocks = [TextBlock(text=content)] if isinstance(content, str) else list(content)
        asked = next(
            (e for e in log.events(types=("agent.custom_tool_use",)) if e.id == message.custom_tool_use_id), None
        )
        answer = log.make(
            UserCustomToolResult,
            thread_id=asked.thread_id if asked is not None else None,  # routed to the thread that asked
            custom_tool_use_id=message.custom_tool_use_id,
            content=blocks,
            is_error=message.is_error,
        )
        return [answer]
    blocks = message_blocks(message)
    return [log.make(UserMessage, content=blocks, cell_id=cell_id, skills=list(skills), context=context)]


def _check_skills(log: SessionLog, message: Input, skills: Sequence[str]) -> None:
    if isinstance(message, CustomToolResult | OutcomeSpec):
        raise InvalidInputError("skills are activated with a message, not with a tool's answer or an outcome")
    names = [p.name for p in session_skills(log, log.agent.id)]
    for name in skills:
        if name not in names:
            have = ", ".join(names) or "none (attach one with engine.skills.create and the agent's skills)"
            raise InvalidInputError(f"no skill named {name!r} in this session; its skills: {have}")


def check_cell_id(cell_id: object) -> None:
    if cell_id is not None and (not isinstance(cell_id, str) or not cell_id.strip()):
        raise InvalidInputError(f"a cell id is a non-empty string, not {cell_id!r}")


def message_blocks(content: str | Sequence[ContentBlock]) -> list[ContentBlock]:
    """A message's content blocks; InvalidInputError for an empty or malformed message."""
    if isinstance(content, str):
        if not content.strip():
            raise InvalidInputError("the message is empty; write what you want the agent to do")
        return [TextBlock(text=content)]
    blocks = list(content)
    if not blocks or not all(isinstance(b, TextBlock | ImageBlock) for b in blocks):
        raise InvalidInputError("a message is a string or a non-empty list of TextBlock/ImageBlock")
    return blocks


def tool_choices(tool_choice: ToolChoice, offered: Callable[[], Sequence[str]]) -> tuple[str, ...]:
    """The turn's forced tool choices, one per request; a tool the agent does not have is refused
    (``offered`` lists the agent's tools; asked only when a choice names one)."""
    choices = (tool_choice,) if isinstance(tool_choice, str) else tuple(tool_choice or ())
    if named := [c for c in choices if c not in ("auto", "any", "none")]:
        names = offered()
        if unknown := [c for c in named if c not in names]:
            raise InvalidInputError(
                f"tool_choice {unknown[0]!r} is not a tool this agent has; it has: {', '.join(names) or 'none'}"
            )
    return choices
