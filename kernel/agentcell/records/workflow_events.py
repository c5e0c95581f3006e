"""The events of a workflow run: the user starting one, the run starting, each step's items, the run ending.

A run's events belong to the thread that started it (the primary thread for a run the user started, the
coordinator's thread for one started by its ``start_workflow_run`` tool); each step item runs in a session
thread of its own, named by ``session_thread_id``, whose events are a thread's like any other. A completed
step item is the journal of the run: its ``key`` (the agent version, the rendered prompt and the options)
lets a later run of the same plan in the same session reuse its ``output`` instead of running it again, and
such a reuse is logged as a ``workflow_run.step_completed`` with ``reused_from`` set. Members of the
:data:`~agentcell.events.Event` union, pinned by the same wire snapshot.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..usage import Budget, Usage
from .envelope import EventEnvelope

__all__ = [
    "RunEndStatus",
    "UserStartWorkflowRun",
    "WorkflowEvent",
    "WorkflowRunCompleted",
    "WorkflowRunFailed",
    "WorkflowRunStarted",
    "WorkflowRunStepCompleted",
    "WorkflowRunStepFailed",
    "WorkflowRunStepStarted",
    "WorkflowStepInfo",
    "WorkflowStepOutcome",
]

RunEndStatus = Literal["failed", "interrupted", "budget_reached"]
"""How a run that did not complete ended."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _Event(_Model, EventEnvelope):
    pass


class UserStartWorkflowRun(_Event):
    """The user started a workflow run (``session.run_workflow``, a ``%%workflow`` cell): it opens a turn,
    which the run fills."""

    type: Literal["user.start_workflow_run"] = "user.start_workflow_run"
    plan: dict[str, Any]
    """The plan as given (JSON-compatible), validated before this event was appended."""
    inputs: dict[str, Any] = {}
    """Values that replace the plan's own ``inputs`` of the same name for this run."""
    max_concurrency: int | None = Field(default=None, ge=1)
    budget: Budget | None = None
    """The run's own ceiling on list cost, replacing the plan's (the session's budget holds as well)."""
    resume: bool = True
    """Whether step items journaled by earlier runs in the session may be reused."""
    cell_id: str | None = None
    """The notebook cell whose run opened this turn (as for ``user.message``)."""


class WorkflowStepInfo(_Model):
    """A step as a front end lays it out before it runs."""

    id: str
    agent_name: str
    agent_id: str
    agent_version: int | None = None
    """The saved version the step runs; None for an inline agent."""
    depends_on: list[str] = []
    depth: int = Field(ge=0)
    """0 for a step without dependencies, else one more than its deepest dependency: steps of one depth
    can run at the same time."""
    for_each: bool = False
    items: int | None = None
    """How many items a ``for_each`` step has, when the plan lists them; None until a ``for_each`` over
    an input or an earlier step's output is known (its ``step_started`` events say it)."""
    outcome: bool = False
    """Whether the step's output is graded by an outcome."""


class WorkflowRunStarted(_Event):
    type: Literal["workflow_run.started"] = "workflow_run.started"
    run_id: str
    name: str
    plan: dict[str, Any]
    """The validated plan, with the run's inputs in place (JSON-compatible)."""
    steps: list[WorkflowStepInfo]
    """In the plan's order."""
    max_concurrency: int = Field(ge=1)
    """The most step items that run at the same time."""
    budget: Budget | None = None
    """The run's own ceiling on list cost; None when only the session's budget holds."""
    tool_use_id: str | None = None
    """The coordinator's ``start_workflow_run`` call; None when the user started the run."""


class WorkflowRunStepStarted(_Event):
    """A step item began in its own session thread."""

    type: Literal["workflow_run.step_started"] = "workflow_run.step_started"
    run_id: str
    step_id: str
    item: int | None = None
    """The index of the ``for_each`` item, from 0; None for a step without ``for_each``."""
    items: int | None = None
    """How many items the step's ``for_each`` has; None for a step without ``for_each``."""
    item_value: Any = None
    session_thread_id: str
    key: str
    """The resume key: a hash of the step, its agent version, its rendered prompt and its options."""


class WorkflowStepOutcome(_Model):
    """Where a step's outcome ended: completing a step is not the same as satisfying its outcome."""

    outcome_id: str
    status: Literal["satisfied", "max_iterations_reached", "failed", "interrupted"]
    explanation: str | None = None
    iteration: int = Field(default=0, ge=0)


class WorkflowRunStepCompleted(_Event):
    """A step item produced its output: the run's journal entry for its ``key``."""

    type: Literal["workflow_run.step_completed"] = "workflow_run.step_completed"
    run_id: str
    step_id: str
    item: int | None = None
    items: int | None = None
    session_thread_id: str | None = None
    """The thread that produced the output; None when it was reused."""
    key: str
    output: Any = None
    """The step item's output: its final message, or the JSON value its output schema validated."""
    usage: Usage = Usage()
    """The step item's own usage (its thread's requests, grading included); zero when reused."""
    reused_from: str | None = None
    """The earlier ``workflow_run.step_completed`` whose output this reuses; None when the item ran."""
    outcome: WorkflowStepOutcome | None = None


class WorkflowRunStepFailed(_Event):
    """A step item did not produce an output. With ``continued`` (the step's ``on_error: continue``) its
    output is the explicit error value in ``output`` and the run goes on; otherwise the run fails."""

    type: Literal["workflow_run.step_failed"] = "workflow_run.step_failed"
    run_id: str
    step_id: str
    item: int | None = None
    items: int | None = None
    session_thread_id: str | None = None
    """The thread that failed; None when the step failed before one started (its template, its items)."""
    key: str | None = None
    error: str
    stop_reason: str | None = None
    """How the step's thread stopped (``error``, ``max_turns``, ``budget_reached``, ``interrupted``...)."""
    usage: Usage = Usage()
    continued: bool = False
    output: Any = None
    """With ``continued``: the error value that stands for the item's output."""


class WorkflowRunCompleted(_Event):
    """Every step completed (items that failed under ``on_error: continue`` included)."""

    type: Literal["workflow_run.completed"] = "workflow_run.completed"
    run_id: str
    name: str
    tool_use_id: str | None = None
    output: Any = None
    """The last step's output (a ``for_each`` step's: the list of its items' outputs)."""
    usage: Usage = Usage()
    """The run's own usage: the sum of its step items'."""
    ran: int = Field(default=0, ge=0)
    """Step items that ran live."""
    reused: int = Field(default=0, ge=0)
    """Step items whose journaled output was reused."""
    outcome: WorkflowStepOutcome | None = None
    """The last step's outcome, when it has one: reported apart, since completing is not succeeding."""


class WorkflowRunFailed(_Event):
    type: Literal["workflow_run.failed"] = "workflow_run.failed"
    run_id: str
    name: str
    tool_use_id: str | None = None
    status: RunEndStatus
    error: str
    step_id: str | None = None
    """The step that failed the run, when one did."""
    usage: Usage = Usage()
    ran: int = Field(default=0, ge=0)
    reused: int = Field(default=0, ge=0)


WorkflowEvent = (
    UserStartWorkflowRun
    | WorkflowRunStarted
    | WorkflowRunStepStarted
    | WorkflowRunStepCompleted
    | WorkflowRunStepFailed
    | WorkflowRunCompleted
    | WorkflowRunFailed
)
"""The workflow run events, members of :data:`~agentcell.events.Event`."""
