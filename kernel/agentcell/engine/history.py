"""Folds a thread's durable events into the provider-neutral message history.

Consecutive events of one role merge into one message. Tool calls that never got a result (the turn was
interrupted or the process died) are answered with an error result before the next user content, so the
history sent to a provider is always well formed. The notebook's context a message carries goes before its
content; a code cell run again leaves its earlier place in the history (the model sees its latest run only).
"""

from __future__ import annotations

import json
from typing import Literal

from ..events import (
    AgentCustomToolUse,
    AgentMessage,
    AgentServerToolResult,
    AgentServerToolUse,
    AgentThinking,
    AgentThreadMessageReceived,
    AgentToolResult,
    AgentToolUse,
    Event,
    FileRubric,
    ImageBlock,
    SessionContextCompacted,
    SystemMessage,
    TextBlock,
    UserCustomToolResult,
    UserDefineOutcome,
    UserMessage,
)
from ..providers.base import (
    Message,
    Part,
    RedactedThinkingPart,
    ServerToolCallPart,
    ServerToolResultPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)
from ..records.cell_events import AgentCellProposed, UserCellProposalResolved
from ..records.workflow_events import WorkflowRunCompleted, WorkflowRunFailed
from .cell_notes import resolution_note
from .notebook_context import IMAGE_PLACEHOLDER, context_pieces

__all__ = [
    "CLEARED_TOOL_RESULT",
    "HISTORY_EVENT_TYPES",
    "UNANSWERED_TOOL_CALL",
    "History",
    "outcome_task",
    "summary_text",
]

HISTORY_EVENT_TYPES = (
    "user.message",
    "user.custom_tool_result",
    "system.message",
    "agent.message",
    "agent.thinking",
    "agent.tool_use",
    "agent.tool_result",
    "agent.custom_tool_use",
    "agent.server_tool_use",
    "agent.server_tool_result",
    "user.define_outcome",
    "agent.thread_message_received",
    "user.start_workflow_run",
    "workflow_run.completed",
    "workflow_run.failed",
    "session.context_compacted",
    "agent.cell_proposed",
    "user.cell_proposal_resolved",
)
"""The event types that shape the history (a run the user started opens a turn and leaves its result);
the rest (spans, usage, status) never do."""

UNANSWERED_TOOL_CALL = "the tool call was not answered (the turn was interrupted before it finished)"
CLEARED_TOOL_RESULT = "[this old tool result was cleared to keep the conversation within the context window]"


class History:
    def __init__(self) -> None:
        self._messages: list[tuple[Literal["user", "assistant"], list[Part]]] = []
        self._call_ids: dict[str, str] = {}
        self._open_calls: dict[str, None] = {}  # insertion-ordered set
        self._cell_parts: dict[str, list[Part]] = {}
        """The parts each code cell of the notebook's context became, by cell id (its latest run)."""
        self._turn_marks: dict[str, tuple[int, int]] = {}
        """Where each user message's content begins (message index, part index): a compaction keeps what
        follows the turn it names."""
        self._result_parts: dict[str, ToolResultPart] = {}
        self._proposals: dict[int, AgentCellProposed] = {}
        """The cells the agent proposed, by number: the user's answer names one."""

    def apply(self, event: Event) -> None:
        match event:
            case UserMessage(context=context) if context is not None:
                context_parts = self._context_parts(event)  # forgets earlier runs first: the mark sees the result
                self._mark_turn(event.id)
                self._user([*context_parts, *(_user_part(block) for block in event.content)])
            case UserMessage() | AgentThreadMessageReceived():
                self._mark_turn(event.id)
                self._user([_user_part(block) for block in event.content])
            case UserDefineOutcome():
                self._mark_turn(event.id)
                self._user([TextPart(text=outcome_task(event))])
            case WorkflowRunCompleted() | WorkflowRunFailed() if event.tool_use_id is None:
                # A run the user started: the agent learns what it produced (its steps stay in their threads).
                self._user([TextPart(text=run_note(event))])
            case AgentCellProposed():
                self._proposals[event.number] = event
            case UserCellProposalResolved():  # the user's answer: the next request learns what became of it
                self._user([TextPart(text=resolution_note(event, self._proposals.get(event.number)))])
            case SystemMessage():
                self._user([TextPart(text=f"[system] {block.text}") for block in event.content])
            case AgentThinking():
                if event.redacted_data is not None:
                    self._assistant(RedactedThinkingPart(data=event.redacted_data))
                elif event.thinking or event.signature:
                    self._assistant(ThinkingPart(thinking=event.thinking, signature=event.signature))
            case AgentMessage():
                for block in event.content:
                    if isinstance(block, TextBlock) and block.text:
                        self._assistant(TextPart(text=block.text))
            case AgentToolUse() | AgentCustomToolUse():
                self._call_ids[event.id] = event.call_id
                self._open_calls[event.call_id] = None
                self._assistant(ToolCallPart(id=event.call_id, name=event.name, input=event.input))
            case AgentServerToolUse():  # the provider ran it: call and result stay in the assistant's turn
                self._assistant(ServerToolCallPart(id=event.call_id, name=event.name, input=event.input))
            case AgentServerToolResult():
                self._assistant(ServerToolResultPart(call_id=event.call_id, kind=event.kind, content=event.content))
            case AgentToolResult():
                self._result(event.tool_use_id, list(event.content), event.is_error, event_id=event.id)
            case UserCustomToolResult():
                self._result(event.custom_tool_use_id, list(event.content), event.is_error)
            case SessionContextCompacted():
                self._compact(event)
            case _:
                pass

    @property
    def open_calls(self) -> list[str]:
        """Provider call ids still waiting for a result."""
        return list(self._open_calls)

    def messages(self, *, images: bool = True) -> list[Message]:
        """``images`` False: each image the user's side holds is sent as a one-line placeholder instead (a
        model without image input)."""
        # The parts were validated when they were built; skip validating them again.
        if images:
            return [Message.model_construct(role=role, content=list(parts)) for role, parts in self._messages]
        return [
            Message.model_construct(role=role, content=[_without_image(part) for part in parts])
            for role, parts in self._messages
        ]

    def _context_parts(self, message: UserMessage) -> list[Part]:
        assert message.context is not None
        parts: list[Part] = []
        for piece in context_pieces(message.context):
            if piece.cell_id is not None:
                if (earlier := self._cell_parts.pop(piece.cell_id, None)) is not None:
                    self._forget(earlier)
                self._cell_parts[piece.cell_id] = piece.parts
            parts.extend(piece.parts)
        return parts

    def _forget(self, parts: list[Part]) -> None:
        """Take a cell's earlier run out of the messages it went into (a message keeps its prompt)."""
        gone = {id(part) for part in parts}
        for _, content in self._messages:
            content[:] = [part for part in content if id(part) not in gone]

    # ------------------------------------------------------------------------------------------

    def _assistant(self, part: Part) -> None:
        if self._messages and self._messages[-1][0] == "assistant":
            self._messages[-1][1].append(part)
        else:
            self._messages.append(("assistant", [part]))

    def _user(self, parts: list[Part]) -> None:
        self._close_open_calls()
        self._append_user(parts)

    def _append_user(self, parts: list[Part]) -> None:
        if not parts:
            return
        if self._messages and self._messages[-1][0] == "user":
            self._messages[-1][1].extend(parts)
        else:
            self._messages.append(("user", parts))

    def _close_open_calls(self) -> None:
        if self._open_calls:
            synthetic: list[Part] = [
                ToolResultPart(call_id=call_id, content=[TextBlock(text=UNANSWERED_TOOL_CALL)], is_error=True)
                for call_id in self._open_calls
            ]
            self._open_calls.clear()
            self._append_user(synthetic)

    def _result(
        self, tool_use_id: str, content: list[TextBlock | ImageBlock], is_error: bool, *, event_id: str = ""
    ) -> None:
        call_id = self._call_ids.get(tool_use_id, tool_use_id)
        self._open_calls.pop(call_id, None)
        part = ToolResultPart(call_id=call_id, content=content, is_error=is_error)
        if event_id:
            self._result_parts[event_id] = part
        self._append_user([part])

    # ------------------------------------------------------------------------------------------ compaction

    def before(self, turn_id: str | None) -> list[Message] | None:
        """The messages that precede the content of turn ``turn_id`` (all of them for None); None when that
        turn's content is not in this history."""
        if turn_id is None:
            return self.messages()
        if (mark := self._turn_marks.get(turn_id)) is None:
            return None
        index, part_index = mark
        prefix = [(role, list(parts)) for role, parts in self._messages[:index]]
        if part_index:
            prefix.append((self._messages[index][0], self._messages[index][1][:part_index]))
        return [Message.model_construct(role=role, content=parts) for role, parts in prefix]

    def _mark_turn(self, event_id: str) -> None:
        self._close_open_calls()
        if self._messages and self._messages[-1][0] == "user":
            self._turn_marks[event_id] = (len(self._messages) - 1, len(self._messages[-1][1]))
        else:
            self._turn_marks[event_id] = (len(self._messages), 0)

    def _compact(self, event: SessionContextCompacted) -> None:
        """Clear the results it names to a stub; with a summary, replace everything before the turn it
        keeps (or everything) by one user message holding the summary."""
        stubs = {
            id(part): part.model_copy(update={"content": [TextBlock(text=CLEARED_TOOL_RESULT)]})
            for event_id in event.cleared_tool_results
            if (part := self._result_parts.pop(event_id, None)) is not None
        }
        if stubs:  # parts are replaced, not changed: messages handed out earlier stay as they were sent
            self._messages = [(role, [stubs.get(id(p), p) for p in parts]) for role, parts in self._messages]
        if event.summary is None:
            return
        kept: list[tuple[Literal["user", "assistant"], list[Part]]] = []
        mark = self._turn_marks.get(event.kept_from) if event.kept_from is not None else None
        if mark is not None:
            index, part_index = mark
            kept = [(role, list(parts)) for role, parts in self._messages[index:]]
            if kept:
                kept[0] = (kept[0][0], kept[0][1][part_index:])
        self._messages = [("user", [TextPart(text=summary_text(event.summary))])]
        self._turn_marks.clear()
        for role, parts in kept:
            if role == "user":
                self._append_user(parts)
            else:
                self._messages.append((role, parts))


def outcome_task(event: UserDefineOutcome) -> str:
    """How an outcome reads to the agent that works on it: what to produce, and the rubric it is graded by."""
    if isinstance(event.rubric, FileRubric):
        rubric = f"The rubric is the workspace file {event.rubric.path}; read it."
    else:
        rubric = f"The rubric:\n{event.rubric.content}"
    return (
        f"Produce this outcome: {event.description}\n\n"
        f"When you finish, a grader checks your work against a rubric and may ask you to revise it. {rubric}"
    )


def run_note(event: WorkflowRunCompleted | WorkflowRunFailed) -> str:
    """How a run the user started reads to the agent afterwards: its name and its final output, or why it
    did not complete."""
    if isinstance(event, WorkflowRunCompleted):
        output = event.output if isinstance(event.output, str) else json.dumps(event.output, ensure_ascii=False)
        return f"[The user ran the workflow {event.name!r}; it completed. Its output:]\n{output}"
    return f"[The user ran the workflow {event.name!r}; it ended {event.status}: {event.error}]"


def summary_text(summary: str) -> str:
    """How a compaction's summary reads to the model, in place of the conversation it covers."""
    return f"[A summary of the conversation so far, made when it outgrew the context window]\n{summary}"


def _user_part(block: TextBlock | ImageBlock) -> Part:
    return TextPart(text=block.text) if isinstance(block, TextBlock) else block


def _without_image(part: Part) -> Part:
    if isinstance(part, ImageBlock):
        return TextPart(text=IMAGE_PLACEHOLDER.format(media_type=part.source.media_type))
    return part
