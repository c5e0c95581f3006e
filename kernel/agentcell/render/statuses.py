"""The status vocabulary every consumer of the event stream uses, and the one rule for each.

The widget's fold (``widgets/js/src/status.ts``) implements the same rules over the same fields; the parity
test (``tests/render/test_parity.py`` and ``widgets/js/test/parity.test.ts``) folds every recorded event log
both ways and fails when they disagree. Nothing here reads the words of a result: a tool call's status comes
from ``is_error``, ``error_code`` and ``denied_by``, a thread's from its ``stop_reason``, an outcome's from
``session.outcome_updated``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias, get_args

from ..events import ContentBlock, DeniedBy, SessionSkillActivated

__all__ = [
    "ORIGIN_WORDS",
    "RUNNING",
    "TOOL_STATUSES",
    "ToolState",
    "ToolStatus",
    "origin",
    "thread_status",
    "tool_status",
    "turn_status",
]

ToolStatus: TypeAlias = Literal[
    "pending",
    "awaiting approval",
    "running",
    "waiting for the client",
    "completed",
    "failed",
    "denied",
    "interrupted",
]
"""pending: not started (a call before it is still running, or the turn ended first); awaiting approval:
the preset says ask and nobody has answered; running; waiting for the client: a custom tool, answered by the
caller in the next turn; completed; failed: the tool ran, or was to run, and reported an error; denied:
refused rather than run (``denied_by`` says by whom); interrupted: stopped by the user's interrupt."""

TOOL_STATUSES: tuple[str, ...] = get_args(ToolStatus)

RUNNING = "running"
"""A thread's or the turn's status until it stops; then its stop reason's ``type`` (``end_turn``,
``interrupted``, ``error``, ``max_turns``, ``budget_reached``, ``requires_action``)."""


@dataclass
class ToolState:
    """What the log says about one tool call: the facts the status rule reads, and the output shown."""

    tool_use_id: str
    name: str
    input: dict[str, object]
    custom: bool = False
    """An ``agent.custom_tool_use``: the caller answers it with ``user.custom_tool_result``."""
    server: bool = False
    """An ``agent.server_tool_use``: the provider ran it (web search) and its result came with the response."""
    permission: str | None = None
    """The ``evaluated_permission`` of the ``agent.tool_use``: allow, ask or deny."""
    confirmation: Literal["allow", "deny"] | None = None
    answered: bool = False
    is_error: bool = False
    error_code: str | None = None
    denied_by: DeniedBy | None = None
    output: list[ContentBlock] = field(default_factory=list)
    skill: SessionSkillActivated | None = None
    """The skill this ``activate_skill`` call loaded: it is shown as a skill card, not a tool call."""
    status: ToolStatus = "pending"
    """Derived by :func:`tool_status` whenever the fold changes; read, never set, by renderers."""


def tool_status(tool: ToolState, *, current: bool, turn_over: bool) -> ToolStatus:
    """The status of ``tool``. ``current``: it is the first unanswered call of its thread that the engine
    runs (calls run in order, so later ones wait); ``turn_over``: the turn's ``session.status_idle`` arrived."""
    if tool.answered:
        if not tool.is_error:
            return "completed"
        if tool.denied_by is not None:
            return "denied"
        if tool.error_code == "INTERRUPTED":
            return "interrupted"
        return "failed"
    if tool.confirmation == "deny":
        return "denied"
    if tool.custom:
        return "waiting for the client"
    if tool.server:  # the provider runs these as it answers, not in the order of the engine's calls
        return "pending" if turn_over else "running"
    if turn_over or not current:
        return "pending"
    if tool.permission == "ask" and tool.confirmation is None:
        return "awaiting approval"
    return "running"


def thread_status(stop_reason: str | None) -> str:
    """A spawned thread's status: running until its ``session.thread_status_idle``, then why it stopped."""
    return RUNNING if stop_reason is None else stop_reason


def turn_status(stop_reason: str | None) -> str:
    """The turn's status: running until ``session.status_idle``, then why it stopped."""
    return RUNNING if stop_reason is None else stop_reason


ORIGIN_WORDS = {
    "replayed": "replayed from the notebook's recording",
    "live": "sent live: not in the notebook's recording",
    "partly replayed": "partly replayed, partly sent live (not in the notebook's recording)",
}
"""What each origin says to people (the badge's tooltip, the saved turn's line)."""


def origin(sources: set[str]) -> str | None:
    """Where a turn's answers came from, when the notebook's recording was consulted (the ``source`` of its
    ``span.model_request_end`` events): ``replayed``, ``live`` or ``partly replayed``; None otherwise, the
    quiet case of a notebook without a recording."""
    if not sources:
        return None
    if sources == {"replay"}:
        return "replayed"
    return "live" if sources == {"live"} else "partly replayed"
