"""A workflow run as its events tell it: the run's status and output, each step's status, output and usage.

:func:`workflow_runs` folds a session's events (or a turn's) into :class:`WorkflowRun` objects, so a run
reads the same live, after a reopen, and in any front end that folds the same events.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from ...events import Event
from ...records.workflow_events import (
    WorkflowRunCompleted,
    WorkflowRunFailed,
    WorkflowRunStarted,
    WorkflowRunStepCompleted,
    WorkflowRunStepFailed,
    WorkflowRunStepStarted,
    WorkflowStepInfo,
    WorkflowStepOutcome,
)
from ...usage import Usage

__all__ = [
    "RUN_EVENT_TYPES",
    "RunStatus",
    "StepStatus",
    "WorkflowItem",
    "WorkflowRun",
    "WorkflowStepResult",
    "fold_run",
    "workflow_runs",
]

RUN_EVENT_TYPES = (
    "workflow_run.started",
    "workflow_run.step_started",
    "workflow_run.step_completed",
    "workflow_run.step_failed",
    "workflow_run.completed",
    "workflow_run.failed",
)

RunStatus = Literal["running", "completed", "failed", "interrupted", "budget_reached"]
StepStatus = Literal["pending", "running", "completed", "failed"]
"""``pending``: not started (waiting for its dependencies, or never started because the run stopped)."""


@dataclass(slots=True)
class WorkflowItem:
    """One run of a step: the step itself, or one item of its ``for_each``."""

    index: int | None
    status: Literal["running", "completed", "failed"]
    thread_id: str | None = None
    output: Any = None
    error: str | None = None
    continued: bool = False
    """Failed under ``on_error: continue``: ``output`` is the error value that stands for it."""
    reused: bool = False
    usage: Usage = field(default_factory=Usage)
    outcome: WorkflowStepOutcome | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None

    @property
    def seconds(self) -> float | None:
        """How long the item ran; None while it runs, 0 when it was reused."""
        if self.reused:
            return 0.0
        if self.started_at is None or self.ended_at is None:
            return None
        return (self.ended_at - self.started_at).total_seconds()


@dataclass(slots=True)
class WorkflowStepResult:
    id: str
    info: WorkflowStepInfo
    status: StepStatus = "pending"
    items: list[WorkflowItem] = field(default_factory=list)
    item_count: int | None = None
    error: str | None = None
    item_by_index: dict[int | None, WorkflowItem] = field(default_factory=dict, repr=False, compare=False)

    @property
    def output(self) -> Any:
        """The step's output: its one item's, or (``for_each``) the list of its items' outputs."""
        if self.info.for_each:
            return [item.output for item in self.items]
        return self.items[0].output if self.items else None

    @property
    def usage(self) -> Usage:
        total = Usage()
        for item in self.items:
            total = total + item.usage
        return total

    @property
    def reused(self) -> bool:
        """Every item was reused from an earlier run's journal."""
        return bool(self.items) and self.status == "completed" and all(i.reused for i in self.items)

    @property
    def outcome(self) -> WorkflowStepOutcome | None:
        return self.items[0].outcome if self.items and not self.info.for_each else None

    def _settle(self) -> None:
        count = self.item_count if self.info.for_each else 1
        if any(i.status == "failed" and not i.continued for i in self.items) or self.error is not None:
            self.status = "failed"
        elif count is not None and len(self.items) == count and all(i.status != "running" for i in self.items):
            self.status = "completed"
        elif self.items:
            self.status = "running"


@dataclass(slots=True)
class WorkflowRun:
    """A workflow run: what ``session.run_workflow`` returns, and what ``session.workflow_runs`` lists."""

    id: str
    name: str
    status: RunStatus
    steps: list[WorkflowStepResult]
    output: Any = None
    """The last step's output, once the run completed."""
    outcome: WorkflowStepOutcome | None = None
    """The last step's outcome, when it has one: a completed run may still have failed its outcome."""
    error: str | None = None
    failed_step: str | None = None
    usage: Usage = field(default_factory=Usage)
    ran: int = 0
    reused: int = 0
    tool_use_id: str | None = None
    plan: dict[str, Any] = field(default_factory=dict)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    step_by_id: dict[str, WorkflowStepResult] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.step_by_id = {step.id: step for step in self.steps}

    def step(self, step_id: str) -> WorkflowStepResult:
        if (found := self.step_by_id.get(step_id)) is not None:
            return found
        raise KeyError(f"the run {self.id} has no step {step_id!r}; its steps: {', '.join(s.id for s in self.steps)}")

    @property
    def reused_steps(self) -> list[str]:
        """The steps whose every item was reused from an earlier run."""
        return [s.id for s in self.steps if s.reused]


def workflow_runs(events: Iterable[Event]) -> list[WorkflowRun]:
    """The runs the events hold, in the order they started."""
    runs: dict[str, WorkflowRun] = {}
    for event in events:
        # A turn's events are mostly its threads': the type says cheaply which ones a run can own (reading a
        # missing run_id from every other event costs pydantic's attribute fallback each time).
        if not event.type.startswith("workflow_run."):
            continue
        if isinstance(event, WorkflowRunStarted):
            runs[event.run_id] = WorkflowRun(
                id=event.run_id,
                name=event.name,
                status="running",
                steps=[WorkflowStepResult(s.id, s, item_count=s.items) for s in event.steps],
                tool_use_id=event.tool_use_id,
                plan=event.plan,
                started_at=event.created_at,
            )
        elif (run := runs.get(getattr(event, "run_id", ""))) is not None:
            _apply(run, event)
    return list(runs.values())


def fold_run(events: Iterable[Event]) -> WorkflowRun:
    """The one run ``events`` hold (its own events, as a runner emitted them)."""
    runs = workflow_runs(events)
    assert len(runs) == 1, "a runner's events hold exactly one run"
    return runs[0]


def _order(item: WorkflowItem) -> int:
    return -1 if item.index is None else item.index


def _apply(run: WorkflowRun, event: Event) -> None:
    if isinstance(event, WorkflowRunCompleted | WorkflowRunFailed):
        run.usage, run.ran, run.reused, run.ended_at = event.usage, event.ran, event.reused, event.created_at
        if isinstance(event, WorkflowRunCompleted):
            run.status, run.output, run.outcome = "completed", event.output, event.outcome
        else:
            run.status, run.error, run.failed_step = event.status, event.error, event.step_id
        return
    if not isinstance(event, WorkflowRunStepStarted | WorkflowRunStepCompleted | WorkflowRunStepFailed):
        return
    step = run.step_by_id.get(event.step_id)
    if step is None:
        return
    if event.items is not None:
        step.item_count = event.items
    if isinstance(event, WorkflowRunStepFailed) and event.session_thread_id is None and event.key is None:
        step.error = event.error  # failed before any item ran
        step._settle()
        return
    item = step.item_by_index.get(event.item)
    if item is None:
        item = WorkflowItem(index=event.item, status="running")
        step.item_by_index[event.item] = item
        step.items.append(item)
        if len(step.items) > 1 and _order(step.items[-2]) > _order(item):  # items mostly start in order
            step.items.sort(key=_order)
    if isinstance(event, WorkflowRunStepStarted):
        item.thread_id, item.started_at = event.session_thread_id, event.created_at
    elif isinstance(event, WorkflowRunStepCompleted):
        item.status, item.output, item.usage, item.outcome = "completed", event.output, event.usage, event.outcome
        item.reused, item.ended_at = event.reused_from is not None, event.created_at
        item.thread_id = event.session_thread_id or item.thread_id
    else:
        item.status, item.error, item.usage, item.ended_at = "failed", event.error, event.usage, event.created_at
        item.continued, item.output = event.continued, event.output
    step._settle()
