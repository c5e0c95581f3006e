"""The active path: the turns the model sees, in a log that keeps every turn.

A turn opens with a ``user.message`` (not steered guidance), a ``user.define_outcome`` or a
``user.start_workflow_run`` of the primary thread; everything after it, until the next opening, belongs to
it (its tool calls, its threads, the answer to a custom tool it paused for). A ``session.turns_superseded``
takes turns off the path: when a notebook cell is run again, its earlier turn and every later turn on the
path leave it (so re-running the last cell regenerates it, re-running an earlier one branches from there,
and Run All gives the same conversation each time); a turn refused before any request, or failed before the
model showed anything, leaves it too.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass

from ..events import (
    Event,
    SessionContextCompacted,
    SessionStatusIdle,
    SessionTurnsSuperseded,
    SpanModelRequestEnd,
    UserCustomToolResult,
    UserDefineOutcome,
    UserMessage,
)
from ..records.workflow_events import UserStartWorkflowRun
from ..usage import Usage

__all__ = [
    "PATH_EVENT_TYPES",
    "REPLAYED_USAGE_EVENT_TYPES",
    "ActivePath",
    "TurnRef",
    "is_opening",
    "on_path",
    "replayed_usage",
]

PATH_EVENT_TYPES = ("user.message", "user.define_outcome", "user.start_workflow_run", "session.turns_superseded")
"""The event types the path is folded from."""

REPLAYED_USAGE_EVENT_TYPES = (
    *PATH_EVENT_TYPES,
    "session.status_idle",
    "user.custom_tool_result",
    "span.model_request_end",
)
"""The event types :func:`replayed_usage` needs: where each turn begins and ends, and the requests."""


def is_opening(event: Event) -> bool:
    """Whether ``event`` opens a turn."""
    if isinstance(event, UserMessage):
        return event.thread_id is None and not event.steered
    return isinstance(event, UserDefineOutcome | UserStartWorkflowRun) and event.thread_id is None


@dataclass(frozen=True, slots=True)
class TurnRef:
    id: str
    """The id of the event that opened the turn."""
    cell_id: str | None


class ActivePath:
    """Folds openings and supersessions into the turns on the path, oldest first."""

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self._turns: list[TurnRef] = []
        self.superseded: set[str] = set()
        for event in events:
            self.apply(event)

    def apply(self, event: Event) -> None:
        if is_opening(event):
            cell = event.cell_id if isinstance(event, UserMessage | UserDefineOutcome | UserStartWorkflowRun) else None
            self._turns.append(TurnRef(event.id, cell))
        elif isinstance(event, SessionTurnsSuperseded):
            self.superseded.update(event.turn_ids)

    @property
    def turns(self) -> list[TurnRef]:
        """The turns on the path, oldest first."""
        return [t for t in self._turns if t.id not in self.superseded]

    def rerun(self, cell_id: str) -> list[str]:
        """The turns that leave the path when ``cell_id`` runs again: its turn on the path and every later
        one; none when the cell has no turn on the path (its run then appends)."""
        turns = self.turns
        for index, turn in enumerate(turns):
            if turn.cell_id == cell_id:
                return [t.id for t in turns[index:]]
        return []


def on_path(events: Iterable[Event], superseded: set[str]) -> Iterator[Event]:
    """The events of ``events`` (in log order) that belong to no superseded turn. Give it the primary
    thread's ``session.status_idle`` events too: they tell where a turn ends (what follows, until the
    next turn, belongs to none, except the answer to a custom tool, which resumes the turn it paused)."""
    for turn, event in _by_turn(events):
        if isinstance(event, SessionContextCompacted) and event.turn_id in superseded:
            continue  # it summarised turns that left the path (a %compact between turns belongs to none)
        if turn is None or turn not in superseded:
            yield event


def replayed_usage(events: Iterable[Event], turn_ids: Collection[str]) -> Usage:
    """What the requests of turns ``turn_ids`` that the notebook's recording answered counted in the ledger.
    Give it ``REPLAYED_USAGE_EVENT_TYPES``. No money was spent on them: when their turns leave the path it
    leaves the ledger, so running a recorded notebook again counts (and budgets) as its first run did."""
    total = Usage()
    for turn, event in _by_turn(events):
        if turn in turn_ids and isinstance(event, SpanModelRequestEnd) and event.source == "replay":
            total = total + event.model_usage
    return total


def _by_turn(events: Iterable[Event]) -> Iterator[tuple[str | None, Event]]:
    """Each event with the turn it belongs to (None: between turns)."""
    current: str | None = None
    last: str | None = None
    for event in events:
        if is_opening(event):
            current = last = event.id
        elif isinstance(event, UserCustomToolResult) and event.thread_id is None:
            current = last
        yield current, event
        if isinstance(event, SessionStatusIdle) and event.thread_id is None:
            current = None
