"""A session's workflow runs (issue 20's plans of steps over agents): run, check and list them. Part of the
:class:`~agentcell.sessions.Session` handle, kept apart so the handle stays one screen of state and turns."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from .engine.workflows import WorkflowRun, check_workflow_plan, ended_run, start_event, workflow_runs
from .engine.workflows.result import RUN_EVENT_TYPES
from .errors import SessionTerminatedError, WorkflowPlanError
from .events import StreamItem
from .records.workflow import WorkflowPlan
from .usage import Budget

if TYPE_CHECKING:
    from .core import Engine
    from .engine.deps import TurnDeps
    from .engine.log import SessionLog
    from .engine.turn import TurnSupervisor

__all__ = ["WorkflowMethods"]


class WorkflowMethods:
    """``Session``'s workflow methods; they use the handle's log, turn supervisor and services."""

    if TYPE_CHECKING:
        _engine: Engine
        _log: SessionLog
        _turns: TurnSupervisor

        @property
        def id(self) -> str: ...

        @property
        def status(self) -> Literal["idle", "running", "terminated"]: ...

        def _deps(self) -> TurnDeps: ...

    @property
    def workflow_runs(self) -> list[WorkflowRun]:
        """The workflow runs of this session, in the order they started, as the log tells them."""
        return workflow_runs(self._log.events(types=RUN_EVENT_TYPES))

    async def run_workflow(
        self,
        plan: Mapping[str, Any] | WorkflowPlan,
        *,
        inputs: Mapping[str, Any] | None = None,
        max_concurrency: int | None = None,
        budget: str | int | Decimal | Budget | None = None,
        resume: bool = True,
        cell_id: str | None = None,
        on_item: Callable[[StreamItem], None] | None = None,
    ) -> WorkflowRun:
        """Run a workflow plan as one turn of this session and return the run: its status, each step's
        status, output and usage, and its output (the last step's). Each step item runs in a session thread.

        The plan is checked whole first (raising WorkflowPlanError, naming the step, before anything is
        appended); the session's agent must allow workflow runs. ``inputs`` replace the plan's inputs of the
        same name; ``budget`` is the run's own ceiling on list cost (the session's budget holds too);
        ``max_concurrency`` caps the step items running at once. With ``resume`` (the default) step items
        that an earlier run of the session completed with the same resume key are reused, not run again.
        """
        if self.status == "terminated":
            raise SessionTerminatedError(f"session {self.id} was terminated; create a new session")
        deps = self._deps()
        start = start_event(
            self._log, deps, plan, inputs=inputs, max_concurrency=max_concurrency, budget=budget, resume=resume,
            cell_id=cell_id,
        )  # fmt: skip
        if on_item is None:  # the kernel's renderer listens to the session itself
            turn = await self._turns.run([start], deps)
        else:
            async for item in self._turns.stream([start], deps, ()):
                on_item(item)
            last = self._turns.last
            assert last is not None  # stream() returns only once the turn ended
            turn = last
        if (run := ended_run(start)) is not None:  # as the runner folded it from its own events
            return run
        runs = workflow_runs(turn.events)
        if not runs:
            errors = "; ".join(e.message for e in turn.errors) or turn.stop_reason.type
            raise WorkflowPlanError(f"the workflow run did not start: {errors}")
        return runs[-1]

    def check_workflow(
        self,
        plan: Mapping[str, Any] | WorkflowPlan,
        *,
        inputs: Mapping[str, Any] | None = None,
        max_concurrency: int | None = None,
        budget: str | int | Decimal | Budget | None = None,
    ) -> None:
        """Check a plan as :meth:`run_workflow` would, without running it or appending anything: raises
        WorkflowPlanError naming the step at fault."""
        check_workflow_plan(self._log, self._deps(), plan, inputs=inputs, max_concurrency=max_concurrency,
                            budget=budget)  # fmt: skip

    def run_workflow_sync(
        self,
        plan: Mapping[str, Any] | WorkflowPlan,
        *,
        inputs: Mapping[str, Any] | None = None,
        max_concurrency: int | None = None,
        budget: str | int | Decimal | Budget | None = None,
        resume: bool = True,
    ) -> WorkflowRun:
        """:meth:`run_workflow` for scripts without an event loop."""
        return self._engine.run_sync(
            self.run_workflow(plan, inputs=inputs, max_concurrency=max_concurrency, budget=budget, resume=resume)
        )
