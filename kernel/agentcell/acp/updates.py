"""From agentcell's event stream to ACP ``session/update``s, live during a prompt and replayed on load.

Text previews become ``agent_message_chunk`` (the buffered message is then not sent again), thinking
becomes ``agent_thought_chunk``, a tool use a ``tool_call`` (pending; in progress once it may run) and its
result a ``tool_call_update`` (completed or failed, with its output, and a diff for edits). Spawned threads
and outcomes are tool calls of their own, under the thread's and the outcome's ids. Usage becomes
``usage_update`` with the session's list cost after each request, and the context window's gauge: ``used``,
the tokens the primary thread's latest request carried (input and output, which the next request carries),
and ``size``, the window the engine measured it against.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp.schema import (
    ContentToolCallContent,
    Cost,
    FileEditToolCallContent,
    ImageContentBlock,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    UsageUpdate,
    UserMessageChunk,
)

from .. import ModelConfig
from ..events import (
    AgentCustomToolUse,
    AgentMessage,
    AgentThinking,
    AgentThreadMessageReceived,
    AgentToolResult,
    AgentToolUse,
    BudgetReached,
    ContentBlock,
    EndTurn,
    EventDelta,
    EventStart,
    ImageBlock,
    Outcome,
    SessionError,
    SessionOutcomeUpdated,
    SessionStatusIdle,
    SessionThreadCreated,
    SessionThreadStatusIdle,
    SessionUsageEvent,
    SpanModelRequestEnd,
    SpanModelRequestStart,
    StreamItem,
    TextBlock,
    UserDefineOutcome,
    UserMessage,
)
from .outbox import Item, MessageEnd, TextChunk
from .toolcalls import WRITE_TOOLS, kind_of, locations_of, result_content, title_of

if TYPE_CHECKING:
    from .. import Session, Usage

__all__ = ["UpdateMapper", "context_window"]

Diffs = Callable[[str], list[FileEditToolCallContent]]

LOCAL_N_CTX = 4096


def context_window(model: ModelConfig) -> int:
    """The model's context window in tokens before any request reported one: the model config's, else a
    typical size for its family."""
    if model.context_window:
        return model.context_window
    if model.id.startswith("local"):
        n_ctx = model.extra.get("n_ctx", LOCAL_N_CTX)
        return n_ctx if isinstance(n_ctx, int) else LOCAL_N_CTX
    name = model.id.split(":", 1)[-1]
    if name.startswith("claude-"):
        return 200_000
    if name.startswith(("gpt-5", "gpt-4.1")):
        return 400_000
    return 128_000


def _text(content: list[ContentBlock]) -> str:
    return "".join(b.text for b in content if isinstance(b, TextBlock))


def _acp_block(block: ContentBlock) -> TextContentBlock | ImageContentBlock:
    if isinstance(block, ImageBlock):
        return ImageContentBlock(type="image", data=block.source.data, mime_type=block.source.media_type)
    return TextContentBlock(type="text", text=block.text)


def _content(text: str) -> ContentToolCallContent:
    return ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))


@dataclass(slots=True)
class _Call:
    name: str
    arguments: Mapping[str, Any]
    runs_unasked: bool
    """The preset allows it: it runs once the response ends (else it waits for approval, or is refused)."""


@dataclass(slots=True)
class _Thread:
    agent_name: str
    texts: list[str] = field(default_factory=list)


_OUTCOME_STATUS: dict[str, ToolCallStatus] = {
    "pending": "pending",
    "running": "in_progress",
    "evaluating": "in_progress",
    "needs_revision": "in_progress",
    "satisfied": "completed",
}


class UpdateMapper:
    """The updates for one session's items. One per session: tool, thread and outcome ids span turns."""

    def __init__(self, workspace: Path, model: Callable[[], ModelConfig], diffs: Diffs | None = None) -> None:
        self._workspace = workspace
        self._model = model
        self._diffs = diffs
        self._streamed: set[str] = set()
        self._calls: dict[str, _Call] = {}
        self._running: set[str] = set()
        self._threads: dict[str, _Thread] = {}
        self._outcomes: set[str] = set()
        self._used = 0
        self._window: int | None = None
        """The window the engine measured the primary thread's latest request against (model config, else the
        provider's report); None until a request says it."""
        self.provider_stop: str | None = None
        """The provider's stop reason for the primary thread's latest request (max_tokens, refusal...)."""

    # ------------------------------------------------------------------------------------------ entry points

    def live(self, item: StreamItem) -> list[Item]:
        """What to send for an item of a running turn. The primary thread's text deltas never come here:
        :meth:`~agentcell.acp.outbox.Outbox.forward` queues them itself (the hot path); other deltas show
        nothing until their event is complete."""
        if isinstance(item, EventStart):
            if item.thread_id is None and item.event.type == "agent.message":
                self._streamed.add(item.event.id)  # its deltas go out as they come; the buffered copy does not
            return []
        if isinstance(item, EventDelta):
            return []
        return self._event(item, replay=False)

    def replay(self, item: StreamItem) -> list[Item]:
        """What to send for a stored event when the conversation is loaded."""
        return self._event(item, replay=True)

    def started(self, tool_use_id: str) -> list[Item]:
        """The call was approved and runs now."""
        if tool_use_id not in self._calls or tool_use_id in self._running:
            return []
        self._running.add(tool_use_id)
        return [ToolCallProgress(session_update="tool_call_update", tool_call_id=tool_use_id, status="in_progress")]

    def tool_call(self, tool_use_id: str) -> tuple[str, str, Mapping[str, Any]] | None:
        """The title, kind and input of a call this mapper announced."""
        call = self._calls.get(tool_use_id)
        return (title_of(call.name, call.arguments), kind_of(call.name), call.arguments) if call else None

    def usage(self, event: SessionUsageEvent) -> UsageUpdate:
        return self._usage_update(event.usage)

    def usage_now(self, session: Session) -> UsageUpdate:
        """The session's usage as it stands (after a replay: the context of its latest request)."""
        return self._usage_update(session.usage)

    def _usage_update(self, usage: Usage) -> UsageUpdate:
        known = usage.list_cost is not None and usage.cost_known  # an unknown cost is not sent as a figure
        cost = Cost(amount=float(usage.spent), currency="USD") if known else None
        return UsageUpdate(
            session_update="usage_update",
            used=self._used,
            size=self._window or context_window(self._model()),
            cost=cost,
        )

    # ------------------------------------------------------------------------------------------ events

    def _event(self, item: StreamItem, *, replay: bool) -> list[Item]:
        thread = item.thread_id if hasattr(item, "thread_id") else None
        match item:
            case UserMessage() if replay and thread is None:
                return [
                    UserMessageChunk(session_update="user_message_chunk", content=_acp_block(b)) for b in item.content
                ]
            case UserDefineOutcome() if replay:
                text = f"/outcome {item.description}"
                return [
                    UserMessageChunk(
                        session_update="user_message_chunk", content=TextContentBlock(type="text", text=text)
                    )
                ]
            case AgentMessage():
                return self._message(item)
            case AgentThinking() if thread is None and item.thinking:
                return [TextChunk("thought", item.id, item.thinking)]
            case AgentToolUse():
                return self._tool_use(
                    item.id, item.name, item.input, thread, item.evaluated_permission in ("allow", None)
                )
            case AgentCustomToolUse():
                return self._tool_use(item.id, item.name, item.input, thread, False)
            case SpanModelRequestStart() if thread is None:
                self._window = item.context_window or self._window
                return []
            case SpanModelRequestEnd():
                if thread is None:  # a thread's requests fill its own window, not the session's
                    usage = item.model_usage
                    self._used = usage.total_input_tokens + usage.output_tokens
                    self.provider_stop = item.stop_reason
                if replay:
                    return []
                # The runner now runs the response's calls; those that wait for approval start when allowed.
                waiting = [i for i, c in self._calls.items() if c.runs_unasked and i not in self._running]
                return [u for i in waiting for u in self.started(i)]
            case AgentToolResult():
                return self._tool_result(item)
            case SessionThreadCreated():
                self._threads[item.session_thread_id] = _Thread(item.agent_name)
                return [
                    ToolCallStart(
                        session_update="tool_call",
                        tool_call_id=item.session_thread_id,
                        title=f"Thread: {item.agent_name}",
                        kind="other",
                        status="in_progress",
                        raw_input={"agent": item.agent_name, "model": item.model},
                    )
                ]
            case AgentThreadMessageReceived() if thread in self._threads:
                return self._thread_text(thread, f"Task: {_text(item.content)}")
            case SessionThreadStatusIdle() if thread in self._threads:
                status: ToolCallStatus = "completed" if isinstance(item.stop_reason, EndTurn) else "failed"
                return [ToolCallProgress(session_update="tool_call_update", tool_call_id=thread, status=status)]
            case SessionOutcomeUpdated():
                return self._outcome(item.outcome)
            case SessionUsageEvent() if thread is None and not replay:
                return [self.usage(item)]
            case SessionError() if thread is None:
                if item.error.retry_status == "retrying":
                    return [TextChunk("thought", item.id, f"Retrying: {item.error.message}\n")]
                return [TextChunk("message", item.id, f"Error ({item.error.type}): {item.error.message}")]
            case SessionStatusIdle() if isinstance(item.stop_reason, BudgetReached):
                return [TextChunk("message", item.id, "The session's budget is spent; raise it with /budget.")]
        return []

    def _message(self, item: AgentMessage) -> list[Item]:
        if item.thread_id is not None:
            return self._thread_text(item.thread_id, _text(item.content)) if item.thread_id in self._threads else []
        if item.id in self._streamed:
            self._streamed.discard(item.id)
            return [MessageEnd(item.id)]
        out: list[Item] = []
        for block in item.content:
            if isinstance(block, TextBlock):
                out.append(TextChunk("message", item.id, block.text))
        return out

    def _thread_text(self, thread_id: str, text: str) -> list[Item]:
        thread = self._threads[thread_id]
        if text:
            thread.texts.append(text)
        content = [_content(t) for t in thread.texts]
        return [ToolCallProgress(session_update="tool_call_update", tool_call_id=thread_id, content=content)]

    def _tool_use(
        self, event_id: str, name: str, arguments: dict[str, Any], thread: str | None, unasked: bool
    ) -> list[Item]:
        self._calls[event_id] = _Call(name, arguments, unasked)
        title = title_of(name, arguments)
        if thread is not None and thread in self._threads:
            title = f"{self._threads[thread].agent_name}: {title}"
        return [
            ToolCallStart(
                session_update="tool_call",
                tool_call_id=event_id,
                title=title,
                kind=kind_of(name),
                status="pending",
                raw_input=arguments,
                locations=locations_of(name, arguments, self._workspace),
            )
        ]

    def _tool_result(self, item: AgentToolResult) -> list[Item]:
        call = self._calls.pop(item.tool_use_id, None)
        self._running.discard(item.tool_use_id)
        content: list[ContentToolCallContent | FileEditToolCallContent] = []
        if call is not None and call.name in WRITE_TOOLS and not item.is_error:
            content.extend(self._diffs(item.tool_use_id) if self._diffs else [])
            if not content:
                content.extend(self._diff_from_input(call))
        content.extend(result_content(item))
        raw_output: dict[str, Any] | None = None
        if item.is_error:
            raw_output = {"error_code": item.error_code, "denied_by": item.denied_by}
        return [
            ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=item.tool_use_id,
                status="failed" if item.is_error else "completed",
                content=content,
                raw_output=raw_output,
            )
        ]

    def _diff_from_input(self, call: _Call) -> list[FileEditToolCallContent]:
        """A diff told by the call itself (a loaded conversation, where the file's old text is gone)."""
        path = call.arguments.get("path")
        if not isinstance(path, str):
            return []
        absolute = os.path.normpath(self._workspace / path)
        if call.name == "edit_file":
            old, new = call.arguments.get("old_string"), call.arguments.get("new_string")
            if isinstance(old, str) and isinstance(new, str):
                return [FileEditToolCallContent(type="diff", path=absolute, old_text=old, new_text=new)]
            return []
        content = call.arguments.get("content")
        return (
            [FileEditToolCallContent(type="diff", path=absolute, new_text=content)] if isinstance(content, str) else []
        )

    def _outcome(self, outcome: Outcome) -> list[Item]:
        status = _OUTCOME_STATUS.get(outcome.status, "failed")
        lines = [f"{outcome.status.replace('_', ' ')} (cycle {outcome.iteration + 1} of {outcome.max_iterations})"]
        if outcome.explanation:
            lines.append(outcome.explanation)
        content = [_content("\n\n".join(lines))]
        if outcome.outcome_id not in self._outcomes:
            self._outcomes.add(outcome.outcome_id)
            return [
                ToolCallStart(
                    session_update="tool_call",
                    tool_call_id=outcome.outcome_id,
                    title="Outcome: " + (outcome.description.strip().splitlines() or [""])[0][:80],
                    kind="think",
                    status=status,
                    content=content,
                    raw_input={"description": outcome.description, "max_iterations": outcome.max_iterations},
                )
            ]
        return [
            ToolCallProgress(
                session_update="tool_call_update", tool_call_id=outcome.outcome_id, status=status, content=content
            )
        ]
