"""What one turn produced: its stop reason and its buffered events, with the views callers read most."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..events import (
    AgentMessage,
    ErrorInfo,
    Event,
    Outcome,
    SessionError,
    SessionOutcomeUpdated,
    SpanModelRequestEnd,
    StopReason,
    TextBlock,
)
from ..usage import Usage

__all__ = ["TurnResult"]


@dataclass(slots=True)
class TurnResult:
    """What one turn produced."""

    stop_reason: StopReason
    events: list[Event] = field(default_factory=list)
    """The buffered events of the turn, in order."""

    @property
    def text(self) -> str:
        """The agent's messages of the turn in the primary thread, joined by blank lines."""
        return "\n\n".join(
            "".join(b.text for b in e.content if isinstance(b, TextBlock))
            for e in self.events
            if isinstance(e, AgentMessage) and e.thread_id is None
        )

    @property
    def outcome(self) -> Outcome | None:
        """The state of the outcome the turn worked on, at its end; None when it worked on none (a workflow
        step's outcome is its run's, see ``WorkflowRun``)."""
        updates = [e.outcome for e in self.events if isinstance(e, SessionOutcomeUpdated) and e.thread_id is None]
        return updates[-1] if updates else None

    @property
    def usage(self) -> Usage:
        """The turn's own usage (sum of its model requests)."""
        total = Usage()
        for event in self.events:
            if isinstance(event, SpanModelRequestEnd):
                total = total + event.model_usage
        return total

    @property
    def errors(self) -> list[ErrorInfo]:
        return [e.error for e in self.events if isinstance(e, SessionError)]
