"""The event log's types: one discriminated union on ``type``, plus the ephemeral previews.

Buffered events (the :data:`Event` union) are durable: the store appends every one of them, in order.
Previews (:class:`EventStart`, :class:`EventDelta`) stream the content of a buffered event before it is
complete; they are never stored, and the buffered event with the same id is authoritative.
The ``type`` strings and field names are the wire format, pinned by a snapshot test.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    model_serializer,
)

from .records.cell_events import CellEvent
from .records.common import PermissionPreset
from .records.content import ContentBlock, ImageBlock, ImageSource, TextBlock, ToolDisplay
from .records.envelope import EventEnvelope
from .records.notebook_context import NotebookContext
from .records.previews import ContentDelta, EventDelta, EventStart, PreviewRef
from .records.skill import PinnedSkill
from .records.stop import BudgetReached, EndTurn, ErrorStop, Interrupted, MaxTurns, RequiresAction, StopReason
from .records.workflow_events import WorkflowEvent
from .usage import Budget, Usage

__all__ = [
    "PREVIEW_TYPES",
    "AgentCustomToolUse",
    "AgentMessage",
    "AgentServerToolResult",
    "AgentServerToolUse",
    "AgentThinking",
    "AgentThreadMessageReceived",
    "AgentThreadMessageSent",
    "AgentToolResult",
    "AgentToolUse",
    "BudgetReached",
    "ContentBlock",
    "ContentDelta",
    "DeniedBy",
    "EndTurn",
    "ErrorInfo",
    "ErrorStop",
    "Event",
    "EventDelta",
    "EventStart",
    "FileRubric",
    "ImageBlock",
    "ImageSource",
    "Interrupted",
    "MaxTurns",
    "Outcome",
    "OutcomeResult",
    "OutcomeStatus",
    "Preview",
    "PreviewRef",
    "RequiresAction",
    "SessionContextCompacted",
    "SessionError",
    "SessionOutcomeUpdated",
    "SessionSkillActivated",
    "SessionStatusIdle",
    "SessionStatusRunning",
    "SessionStatusTerminated",
    "SessionSteerUndelivered",
    "SessionThreadCreated",
    "SessionThreadStatusIdle",
    "SessionThreadStatusRunning",
    "SessionTurnsSuperseded",
    "SessionUpdated",
    "SessionUsageEvent",
    "SpanModelRequestEnd",
    "SpanModelRequestStart",
    "SpanOutcomeEvaluationEnd",
    "SpanOutcomeEvaluationStart",
    "StopReason",
    "StreamItem",
    "SystemMessage",
    "TextBlock",
    "TextRubric",
    "ToolDisplay",
    "UserCustomToolResult",
    "UserDefineOutcome",
    "UserInterrupt",
    "UserMessage",
    "UserPermissionRevoked",
    "UserToolConfirmation",
    "event_adapter",
    "is_preview",
    "stream_item_adapter",
]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _EventBase(_Model, EventEnvelope):
    """The envelope every event carries (``records/envelope.py``: id, created_at, session_id, thread_id)."""


# ---------------------------------------------------------------------------------------------- user.*


class UserMessage(_EventBase):
    type: Literal["user.message"] = "user.message"
    content: list[ContentBlock]
    cell_id: str | None = None
    """The notebook cell whose run opened this turn; re-running that cell replaces the turn (see
    ``session.turns_superseded``). None outside a notebook, and for guidance steered into a turn."""
    steered: bool = False
    """Guidance the user steered into the running turn, delivered with the request after this event."""
    skills: Annotated[list[str], Field(default_factory=list, exclude_if=lambda v: not v)]
    """Skills the user named with the message (``/name``), activated before the model's first request."""
    context: Annotated[NotebookContext | None, Field(exclude_if=lambda v: v is None or v.stored_empty)] = None
    """What the notebook showed since the previous turn (the code cells run, the user's variables): the model
    is shown it before the message. A later run of one of those cells replaces what the model saw of it. An
    empty one is not stored: it only says the notebook sends context (a turn its cell runs again carries the
    cells its earlier run was sent)."""


class UserInterrupt(_EventBase):
    type: Literal["user.interrupt"] = "user.interrupt"


class UserToolConfirmation(_EventBase):
    type: Literal["user.tool_confirmation"] = "user.tool_confirmation"
    tool_use_id: str
    result: Literal["allow", "deny"]
    remember: Literal["once", "always"] = "once"
    deny_message: str | None = None
    keys: list[str] = []
    """For an "always" answer: the rules it made, what later calls are answered by without asking
    (``bash:execute``); the session rebuilds its rules from these when it is reopened."""
    by_rule: bool = False
    """Nobody was asked: an earlier "always" answer (a rule ``%permissions`` lists) decided."""


class UserPermissionRevoked(_EventBase):
    """The user revoked "always" rules (``%permissions revoke NAME``): calls under them ask again."""

    type: Literal["user.permission_revoked"] = "user.permission_revoked"
    keys: list[str]


class UserCustomToolResult(_EventBase):
    type: Literal["user.custom_tool_result"] = "user.custom_tool_result"
    custom_tool_use_id: str
    content: list[ContentBlock] = []
    is_error: bool = False


class TextRubric(_Model):
    type: Literal["text"] = "text"
    content: str


class FileRubric(_Model):
    type: Literal["file"] = "file"
    path: str
    """A file in the session's workspace."""


class UserDefineOutcome(_EventBase):
    type: Literal["user.define_outcome"] = "user.define_outcome"
    outcome_id: str
    description: str
    rubric: Annotated[TextRubric | FileRubric, Field(discriminator="type")]
    max_iterations: int = Field(default=3, ge=1, le=20)
    """The most evaluations: revision cycles run from 0 to ``max_iterations - 1``."""
    grader_model: str | None = None
    """The model that grades the work; None grades with the agent's own model."""
    cell_id: str | None = None
    """The notebook cell whose run opened this turn (as for ``user.message``)."""


class SystemMessage(_EventBase):
    type: Literal["system.message"] = "system.message"
    content: list[TextBlock]


# ---------------------------------------------------------------------------------------------- agent.*


class AgentMessage(_EventBase):
    type: Literal["agent.message"] = "agent.message"
    content: list[ContentBlock]
    interrupted: bool = False
    """True when the turn was interrupted while this message streamed: the content is what arrived."""


class AgentThinking(_EventBase):
    type: Literal["agent.thinking"] = "agent.thinking"
    thinking: str = ""
    signature: str | None = None
    """Opaque provider signature; sent back with the thinking on the next request."""
    redacted_data: str | None = None
    """Set instead of ``thinking`` for a redacted thinking block; passed back untouched."""


class AgentToolUse(_EventBase):
    type: Literal["agent.tool_use"] = "agent.tool_use"
    call_id: str
    """The provider's id for this call (sent back with the result)."""
    name: str
    input: dict[str, Any]
    evaluated_permission: Literal["allow", "ask", "deny"] | None = None


DeniedBy: TypeAlias = Literal["guard", "preset", "user", "no-approver", "no-view", "approver"]
"""Who refused a tool call: a guard; the permission preset by itself; the user; nobody could be asked
(``no-approver``: the session has no approver; ``no-view``: no notebook view answered during the turn);
asking failed (``approver``)."""


class AgentToolResult(_EventBase):
    type: Literal["agent.tool_result"] = "agent.tool_result"
    tool_use_id: str
    """The id of the ``agent.tool_use`` event this result answers."""
    content: list[ContentBlock] = []
    is_error: bool = False
    error_code: str | None = None
    """Why the call failed, as a stable code: ``DENIED`` and ``DECLINED`` (refused, see ``denied_by``),
    ``UNKNOWN_TOOL``, ``INVALID_INPUT``, ``TIMEOUT``, ``INTERRUPTED``, ``TOOL_FAILED``..."""
    denied_by: DeniedBy | None = None
    """Set when the call was refused rather than run."""
    full_text: str | None = None
    """The whole output when ``content`` was cut for the model (itself capped at 1,000,000 characters)."""
    displays: list[ToolDisplay] = []
    """Richer forms of some ``content`` blocks for the tool card (the python tool's ``display()`` calls)."""


class AgentServerToolUse(_EventBase):
    """A call of a tool the provider runs itself (web search, web fetch): nothing here runs it."""

    type: Literal["agent.server_tool_use"] = "agent.server_tool_use"
    call_id: str
    name: str
    input: dict[str, Any]


class AgentServerToolResult(_EventBase):
    """What the provider's tool returned, kept as the provider sent it (and sent back in the history)."""

    type: Literal["agent.server_tool_result"] = "agent.server_tool_result"
    tool_use_id: str
    """The ``agent.server_tool_use`` it answers."""
    call_id: str
    kind: str
    """The provider's result type, e.g. ``web_search_tool_result``."""
    content: Any = None


class AgentCustomToolUse(_EventBase):
    type: Literal["agent.custom_tool_use"] = "agent.custom_tool_use"
    call_id: str
    name: str
    input: dict[str, Any]


class AgentThreadMessageSent(_EventBase):
    """A message one thread sent another: a coordinator's task to the thread it spawned, or a thread's final
    message back to its coordinator. It belongs to the sender's thread."""

    type: Literal["agent.thread_message_sent"] = "agent.thread_message_sent"
    to_thread_id: str | None
    """The receiving thread; None is the primary thread."""
    content: list[ContentBlock]


class AgentThreadMessageReceived(_EventBase):
    """The task a spawned thread received; it opens that thread's history as its first user turn. (The
    coordinator receives a thread's answer as a tool result instead.)"""

    type: Literal["agent.thread_message_received"] = "agent.thread_message_received"
    from_thread_id: str | None
    content: list[ContentBlock]


# ---------------------------------------------------------------------------------------------- session.*


class SessionStatusRunning(_EventBase):
    type: Literal["session.status_running"] = "session.status_running"


class SessionStatusIdle(_EventBase):
    type: Literal["session.status_idle"] = "session.status_idle"
    stop_reason: StopReason


class SessionStatusTerminated(_EventBase):
    type: Literal["session.status_terminated"] = "session.status_terminated"


class SessionThreadCreated(_EventBase):
    """A coordinator spawned a thread. The envelope's ``thread_id`` is the coordinator's thread; the new
    thread's events carry ``session_thread_id`` as their ``thread_id``."""

    type: Literal["session.thread_created"] = "session.thread_created"
    session_thread_id: str
    agent_id: str
    agent_version: int | None = None
    """The saved version the thread runs; None for an inline agent (defined by the coordinator, not saved)."""
    agent_name: str
    model: str
    tool_use_id: str | None = None
    """The coordinator's ``agent.tool_use`` that spawned the thread: a front end nests the thread under it."""
    inline_agent: dict[str, Any] | None = None
    """For an inline agent, its whole definition (it is not saved), so the thread can resume later."""


class SessionThreadStatusRunning(_EventBase):
    """A spawned thread started working. The primary thread uses ``session.status_running`` instead."""

    type: Literal["session.thread_status_running"] = "session.thread_status_running"


class SessionThreadStatusIdle(_EventBase):
    """A spawned thread stopped, and why; its usage is the sum of its own model requests."""

    type: Literal["session.thread_status_idle"] = "session.thread_status_idle"
    stop_reason: StopReason
    usage: Usage = Usage()


OutcomeStatus: TypeAlias = Literal[
    "pending",
    "running",
    "evaluating",
    "satisfied",
    "max_iterations_reached",
    "failed",
    "interrupted",
]
OutcomeResult: TypeAlias = Literal["satisfied", "needs_revision", "max_iterations_reached", "failed", "interrupted"]


class Outcome(_Model):
    """An outcome's state: what the agent is to produce and how far it got."""

    outcome_id: str
    description: str
    status: OutcomeStatus
    """pending before work starts; running while the agent produces or revises; evaluating while the grader
    scores (after a ``needs_revision`` verdict, running again); the rest are terminal."""
    iteration: int = Field(default=0, ge=0)
    """The revision cycle the outcome is on, counted from 0."""
    max_iterations: int = Field(ge=1, le=20)
    explanation: str | None = None
    """The grader's verdict text from the latest evaluation: why the criteria are met, what is missing, or
    why the outcome cannot be reached."""
    completed_at: datetime | None = None
    """When the outcome reached a terminal status; None until then."""

    @property
    def terminal(self) -> bool:
        return self.completed_at is not None


class SessionOutcomeUpdated(_EventBase):
    """The outcome's whole state after a change: the session's outcome is the latest of these."""

    type: Literal["session.outcome_updated"] = "session.outcome_updated"
    outcome: Outcome


class ErrorInfo(_Model):
    type: str
    """``model_request_failed_error``, ``model_rate_limited_error``, ``model_overloaded_error``,
    ``authentication_error``, ``protocol_error``, ``unknown_error``..."""
    message: str
    retry_status: Literal["retrying", "exhausted", "terminal"] = "terminal"
    attempt: int | None = None
    """For a failed model request: which attempt at it failed, from 1 (a ``retrying`` error's next is +1)."""
    max_attempts: int | None = None
    """How many attempts the engine makes at the request in all."""


class SessionError(_EventBase):
    type: Literal["session.error"] = "session.error"
    error: ErrorInfo


class SessionUpdated(_EventBase):
    """What an update changed. A field is present only when the update changed it; ``budget`` is present
    and null when the update removed the budget."""

    type: Literal["session.updated"] = "session.updated"
    agent: dict[str, Any] | None = None
    """The full effective agent snapshot, present only when tools or MCP servers changed."""
    budget: Budget | None = None
    metadata: dict[str, str] | None = None
    title: str | None = None
    permissions: PermissionPreset | None = None
    """The new permission preset, present only when it changed."""
    skills: list[PinnedSkill] | None = None
    """The session's pinned skills, present only when they changed."""

    @model_serializer(mode="wrap")
    def _only_changed(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key in ("agent", "budget", "metadata", "title", "permissions", "skills"):
            if key not in self.model_fields_set:
                data.pop(key, None)
        return data


class SessionSkillActivated(_EventBase):
    """A skill's instructions entered the thread's conversation, in the result of ``tool_use_id``."""

    type: Literal["session.skill_activated"] = "session.skill_activated"
    tool_use_id: str
    name: str
    skill_id: str
    version: int
    path: str
    """Its folder, mounted read-only, relative to the workspace."""
    files: list[str] = []
    """The files it brought besides ``SKILL.md`` (listed for the model, not read)."""
    requested_by: Literal["model", "user"] = "model"


class SessionTurnsSuperseded(_EventBase):
    """Turns that left the conversation's active path: the model will not see them again. The log keeps
    them (it is append-only); every fold of the conversation skips them from here on."""

    type: Literal["session.turns_superseded"] = "session.turns_superseded"
    turn_ids: list[str]
    """The ids of the events that opened those turns (``user.message`` / ``user.define_outcome``)."""
    reason: Literal["rerun", "refused", "failed"]
    """``rerun``: their cell, or an earlier one, was run again; ``refused``: the turn was refused before
    any request (the budget); ``failed``: it failed before the model showed anything."""
    cell_id: str | None = None
    """For ``rerun``: the cell that was run again."""


class SessionContextCompacted(_EventBase):
    """The conversation was brought back under the model's context window (before a request that would
    have passed the threshold, or on ``%compact``): from here on, requests carry this in place of what it
    covers. Old tool results are cleared to a stub first; when that is not enough, the model summarises
    the conversation before the latest turn (which stays verbatim) into ``summary``."""

    type: Literal["session.context_compacted"] = "session.context_compacted"
    trigger: Literal["threshold", "manual"]
    last_event_id: str
    """The last event the compaction covers."""
    kept_from: str | None = None
    """The opening of the turn kept verbatim after the summary; None when the summary covers everything."""
    turn_id: str | None = None
    """The latest turn it covers: when that turn leaves the active path, so does the compaction."""
    summary: str | None = None
    """What the model sees instead of the conversation it covers; None when clearing tool results sufficed."""
    cleared_tool_results: list[str] = []
    """The ``agent.tool_result`` events whose content now reads as a stub."""
    instructions: str | None = None
    """What the user asked the summary to keep (``%compact ...``)."""
    window: int = Field(ge=1)
    tokens_before: int = Field(ge=0)
    tokens_after: int = Field(ge=0)
    usage: Usage = Usage()
    """The summary request's usage (already counted in the session's)."""


class SessionSteerUndelivered(_EventBase):
    """Guidance steered into a turn that ended before a request could take it: it was discarded."""

    type: Literal["session.steer_undelivered"] = "session.steer_undelivered"
    content: list[ContentBlock]


class SessionUsageEvent(_EventBase):
    """The session's cumulative usage and its budget at this moment."""

    type: Literal["session.usage"] = "session.usage"
    usage: Usage
    budget: Budget | None = None


class SpanModelRequestStart(_EventBase):
    type: Literal["span.model_request_start"] = "span.model_request_start"
    model: str
    max_tokens: int | None = None
    """The most output tokens the request allows."""
    budget_shortened_from: int | None = None
    """Present when the budget lowered ``max_tokens``: what the agent asked for."""
    preparing: str | None = None
    """What the request waits on before the model itself (``loading the local model``), when anything."""
    context_turns: int | None = None
    """On the primary thread: how many turns of the active path the request carries before this turn's
    own (what a notebook shows as "context: 3 turns above")."""
    context_window: int | None = None
    """The model's context window in tokens, when known (the gauge: how much of it the request used)."""


class SpanModelRequestEnd(_EventBase):
    type: Literal["span.model_request_end"] = "span.model_request_end"
    model_request_start_id: str
    is_error: bool = False
    model_usage: Usage
    stop_reason: str | None = None
    """The provider's stop reason (end_turn, tool_use, max_tokens, pause_turn, refusal...)."""
    source: Literal["replay", "live"] | None = None
    """Where the notebook's recording was consulted: ``replay``, answered from it; ``live``, sent to the model
    because the recording had no answer. None when no recording was involved."""


class SpanOutcomeEvaluationStart(_EventBase):
    """The grader began scoring revision cycle ``iteration``."""

    type: Literal["span.outcome_evaluation_start"] = "span.outcome_evaluation_start"
    outcome_id: str
    iteration: int = Field(ge=0)


class SpanOutcomeEvaluationEnd(_EventBase):
    """The grader's verdict on cycle ``iteration``. A ``needs_revision`` verdict on the last allowed cycle
    reads ``max_iterations_reached``; an interrupt while grading reads ``interrupted``."""

    type: Literal["span.outcome_evaluation_end"] = "span.outcome_evaluation_end"
    outcome_evaluation_start_id: str
    outcome_id: str
    iteration: int = Field(ge=0)
    result: OutcomeResult
    explanation: str
    usage: Usage = Usage()
    """The grader's own usage (already counted in the session's)."""


Event: TypeAlias = Annotated[
    UserMessage
    | UserInterrupt
    | UserToolConfirmation
    | UserPermissionRevoked
    | UserCustomToolResult
    | UserDefineOutcome
    | SystemMessage
    | AgentMessage
    | AgentThinking
    | AgentToolUse
    | AgentToolResult
    | AgentCustomToolUse
    | AgentServerToolUse
    | AgentServerToolResult
    | SessionStatusRunning
    | SessionStatusIdle
    | SessionStatusTerminated
    | SessionError
    | SessionUpdated
    | SessionUsageEvent
    | SessionTurnsSuperseded
    | SessionSkillActivated
    | SessionSteerUndelivered
    | SessionContextCompacted
    | SessionThreadCreated
    | SessionThreadStatusRunning
    | SessionThreadStatusIdle
    | SessionOutcomeUpdated
    | AgentThreadMessageSent
    | AgentThreadMessageReceived
    | SpanModelRequestStart
    | SpanModelRequestEnd
    | SpanOutcomeEvaluationStart
    | SpanOutcomeEvaluationEnd
    | WorkflowEvent
    | CellEvent,
    Field(discriminator="type"),
]

Preview: TypeAlias = Annotated[EventStart | EventDelta, Field(discriminator="type")]
StreamItem: TypeAlias = Annotated[Event | Preview, Field(discriminator="type")]
"""What a session streams: durable events and the previews of their content (see :func:`is_preview`)."""

PREVIEW_TYPES = frozenset({"event_start", "event_delta"})


def is_preview(item: StreamItem) -> bool:
    """True for a preview (never stored; its buffered event supersedes it), False for a durable event."""
    return item.type in PREVIEW_TYPES


event_adapter: TypeAdapter[Event] = TypeAdapter(Event)
stream_item_adapter: TypeAdapter[StreamItem] = TypeAdapter(StreamItem)
