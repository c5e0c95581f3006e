"""Running a checked plan: its steps as a graph, its items concurrently, each item in a session thread.

A step starts once every step it depends on has completed; its items (one, or one per ``for_each`` item)
start in order as room frees up among the run's ``max_concurrency`` slots, so independent steps and the
items of a ``for_each`` overlap. Scheduling follows the plan and the order in which work finishes, never a
clock or chance. Before an item runs, its prompt is rendered and its resume key made; when an earlier run
in the session journaled that key and the item's dependencies were all reused, the journaled output is
reused (``workflow_run.step_completed`` with ``reused_from``) and nothing is sent to a model.

A failing item under ``on_error: fail`` fails the run: nothing new starts, the items already running
finish (and are journaled, for the next run to reuse), then ``workflow_run.failed`` says which step and
why. Under ``on_error: continue`` the item's output is an explicit error value and the run goes on. A
request the budget cannot cover (the session's, or the run's own ceiling) stops the run the same way, as
``budget_reached``; an interrupt stops every running item and ends the run as ``interrupted``.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...ids import new_id
from ...records.workflow_events import (
    RunEndStatus,
    WorkflowRunCompleted,
    WorkflowRunFailed,
    WorkflowRunStarted,
    WorkflowRunStepCompleted,
    WorkflowRunStepFailed,
    WorkflowRunStepStarted,
    WorkflowStepOutcome,
)
from ...usage import Usage
from ..ceiling import SPEND_CEILING, SpendCeiling
from ..deps import TurnDeps
from ..log import SessionLog
from .journal import JOURNAL_EVENT_TYPES, ItemKeys, Journal
from .result import WorkflowRun, fold_run
from .step import ItemResult, StepThread, task_text
from .template import TemplateError, TemplateValues, render, resolve
from .validate import CheckedPlan, CheckedStep

__all__ = ["WorkflowRunner", "error_value"]


def error_value(step_id: str, item: int | None, message: str) -> dict[str, Any]:
    """What stands for the output of an item that failed under ``on_error: continue``."""
    value: dict[str, Any] = {"error": message, "step": step_id}
    if item is not None:
        value["item"] = item
    return value


@dataclass
class _StepDone:
    ok: bool
    output: Any = None
    reused: bool = False
    """Every item of the step was reused: the steps after it may reuse theirs."""
    outcome: WorkflowStepOutcome | None = None


@dataclass
class _Stop:
    status: RunEndStatus
    error: str
    step_id: str | None = None


@dataclass
class _Tally:
    usage: Usage = field(default_factory=Usage)
    ran: int = 0
    reused: int = 0


class WorkflowRunner:
    """One run of a checked plan in a session, from the thread ``parent_id`` (None: the primary thread)."""

    def __init__(
        self,
        log: SessionLog,
        deps: TurnDeps,
        plan: CheckedPlan,
        *,
        parent_id: str | None = None,
        tool_use_id: str | None = None,
        resume: bool = True,
    ) -> None:
        self.log = log
        self.deps = deps
        self.plan = plan
        self.parent_id = parent_id
        self.tool_use_id = tool_use_id
        self.resume = resume
        self.run_id = new_id("wfrun")
        self._slots = asyncio.Semaphore(plan.max_concurrency)
        self._journal = Journal()
        self._keys = ItemKeys()
        self._stop: _Stop | None = None
        self._tally = _Tally()
        self._events: list[Any] = []
        self._done: dict[str, _StepDone] = {}
        self._waiting_on: dict[str, int] = {}
        self._dependents: dict[str, list[CheckedStep]] = {}
        self._drivers: set[asyncio.Task[None]] = set()
        self._live = 0
        """Driving tasks not yet ended; the last one to end resolves ``_all_ended``."""
        self._all_ended: asyncio.Future[None] | None = None
        self._interrupted = False

    async def run(self) -> WorkflowRun:
        """Run the plan to its end and return the run as its events tell it. An interrupt (the task being
        cancelled) stops the running items, logs the run as interrupted, and is raised again."""
        if self.plan.budget is None:
            return await self._run()
        # The ceiling holds for the requests of this run only: its tasks start from a context of their own.
        context = contextvars.copy_context()
        context.run(SPEND_CEILING.set, SpendCeiling(self.plan.budget.max_list_cost))
        return await asyncio.get_running_loop().create_task(self._run(), context=context)

    def _stopping(self) -> bool:
        return self._stop is not None

    def _emit(self, event: Any) -> None:
        # The run folds from its events as stored (a secret scrubbed), as a reader of the log would.
        self._events.append(self.log.emit(event) or event)

    async def _run(self) -> WorkflowRun:
        log, plan = self.log, self.plan
        self._emit(
            log.make(
                WorkflowRunStarted,
                thread_id=self.parent_id,
                run_id=self.run_id,
                name=plan.plan.name,
                plan=plan.plan.model_dump(mode="json", exclude_none=True),
                steps=[s.info() for s in plan.steps],
                max_concurrency=plan.max_concurrency,
                budget=plan.budget,
                tool_use_id=self.tool_use_id,
            )
        )
        if self.resume:
            self._journal = Journal(log.events(types=JOURNAL_EVENT_TYPES))
        # Each step waits for a count of dependencies; a completed step counts down its dependents, so the
        # scheduler does work in proportion to the graph's edges, not to steps times completions.
        for step in plan.steps:
            self._waiting_on[step.id] = len(set(step.spec.depends_on))
            self._dependents[step.id] = []
        for step in plan.steps:
            for dep in dict.fromkeys(step.spec.depends_on):
                self._dependents[dep].append(step)
        self._all_ended = ended = asyncio.get_running_loop().create_future()
        try:
            self._start([step for step in plan.steps if not self._waiting_on[step.id]])
            if self._live:
                await ended
        except BaseException as exc:
            interrupted = isinstance(exc, asyncio.CancelledError)
            self._interrupted = True  # nothing starts any more
            for task in self._drivers:
                task.cancel()
            await asyncio.gather(*self._drivers, return_exceptions=True)
            if interrupted:
                self._end(_Stop("interrupted", "the run was interrupted"), self._done)
            raise
        return self._end(self._stop, self._done)

    def _start(self, steps: list[CheckedStep]) -> None:
        """Start each step as a task of its own (one that goes on with the steps that become ready after it)."""
        loop = asyncio.get_running_loop()
        for step in steps:
            self._live += 1
            task = loop.create_task(self._drive(step))
            self._drivers.add(task)
            task.add_done_callback(self._drivers.discard)

    async def _drive(self, step: CheckedStep | None) -> None:
        """Run ``step``, then the first of the steps its end made ready, and so on; the others of those start as
        tasks of their own. In a chain the next step starts in the task the last one ended in, with no task
        switch nor wait for a scheduler between them: every such hop is on the chain's critical path."""
        try:
            while step is not None:
                result = await self._step(step, self._done)
                step = self._ended(step, result)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug: the run raises it, once the other steps are stopped
            self._settle(exc)
        finally:
            self._live -= 1
            if not self._live:
                self._settle(None)

    def _settle(self, error: Exception | None) -> None:
        ended = self._all_ended
        if ended is not None and not ended.done():
            if error is None:
                ended.set_result(None)
            else:
                ended.set_exception(error)

    def _ended(self, step: CheckedStep, result: _StepDone) -> CheckedStep | None:
        """Note a step's end; start the steps it made ready, but the first, which is returned for the caller to
        run (None when there is none, or when the run is stopping)."""
        self._done[step.id] = result
        if not result.ok:
            return None  # what depends on it never starts
        ready: list[CheckedStep] = []
        for dependent in self._dependents[step.id]:
            self._waiting_on[dependent.id] -= 1
            if not self._waiting_on[dependent.id]:
                ready.append(dependent)
        if not ready or self._stop is not None or self._interrupted:
            return None
        self._start(ready[1:])
        return ready[0]

    def _end(self, stop: _Stop | None, done: Mapping[str, _StepDone]) -> WorkflowRun:
        log, plan, tally = self.log, self.plan, self._tally
        last = plan.steps[-1].id
        if stop is None and last not in done:  # cannot happen: a step is left out only after a stop
            stop = _Stop("failed", f"the step {last!r} never became ready")
        common = {
            "thread_id": self.parent_id,
            "run_id": self.run_id,
            "name": plan.plan.name,
            "tool_use_id": self.tool_use_id,
            "usage": tally.usage,
            "ran": tally.ran,
            "reused": tally.reused,
        }
        if stop is None:
            final = done[last]
            self._emit(log.make(WorkflowRunCompleted, output=final.output, outcome=final.outcome, **common))
        else:
            self._emit(
                log.make(WorkflowRunFailed, status=stop.status, error=stop.error, step_id=stop.step_id, **common)
            )
        return fold_run(self._events)

    # ------------------------------------------------------------------------------------------ steps

    async def _step(self, step: CheckedStep, done: Mapping[str, _StepDone]) -> _StepDone:
        spec = step.spec
        # Only what the step's templates name: every step they may name is an ancestor, so it is done.
        refs = (*step.prompt_refs, step.items_ref) if step.items_ref is not None else step.prompt_refs
        outputs = {ref.step: done[ref.step].output for ref in refs if ref.step is not None and ref.step in done}
        values = TemplateValues(inputs=self.plan.plan.inputs, outputs=outputs)
        may_reuse = all(done[dep].reused for dep in spec.depends_on)
        if spec.for_each is None:
            result = await self._item(_Item(step), values, may_reuse)
            return _StepDone(result.ok, result.output, result.reused, result.outcome)
        items = spec.for_each
        if step.items_ref is not None:
            try:
                items = resolve(step.items_ref, values)
            except TemplateError as exc:
                return self._failed_before(step, f"its for_each: {exc}")
            if not isinstance(items, list):
                what = type(items).__name__
                return self._failed_before(step, f"its for_each {{{{{step.items_ref.text}}}}} is a {what}, not a list")
        assert isinstance(items, list)
        count = len(items)
        results = await asyncio.gather(
            *(self._item(_Item(step, index, value, count), values, may_reuse) for index, value in enumerate(items))
        )
        ok = all(r.ok for r in results)
        return _StepDone(ok, [r.output for r in results], ok and all(r.reused for r in results))

    def _failed_before(self, step: CheckedStep, error: str) -> _StepDone:
        """The step failed before any item could run (its items, or a template, could not be resolved)."""
        self._emit(
            self.log.make(
                WorkflowRunStepFailed, thread_id=self.parent_id, run_id=self.run_id, step_id=step.id, error=error
            )
        )
        if self._stop is None:
            self._stop = _Stop("failed", f"step {step.id!r}: {error}", step.id)
        return _StepDone(False)

    async def _item(self, item: _Item, values: TemplateValues, may_reuse: bool) -> _ItemDone:
        log, step = self.log, item.step
        where = {"thread_id": self.parent_id, "run_id": self.run_id, **item.fields()}
        if self._stopping():  # the run is stopping: what has not started, does not
            return _ItemDone(False)
        try:
            prompt = render(step.spec.prompt, values.with_item(item.value, item.index is not None))
        except TemplateError as exc:
            return self._item_failed(item, where, f"its prompt: {exc}")
        task = task_text(step, prompt)
        key = self._keys.key(step, task, item.index, item.value)
        entry = self._journal.get(key) if may_reuse else None
        if entry is not None:
            self._tally.reused += 1
            reused = log.make(
                WorkflowRunStepCompleted,
                key=key,
                output=entry.output,
                reused_from=entry.id,
                outcome=entry.outcome,
                **where,
            )
            self._emit(reused)
            return _ItemDone(True, entry.output, reused=True, outcome=entry.outcome)
        async with self._slots:
            if self._stopping():  # it stopped while this item waited for a slot
                return _ItemDone(False)
            thread_id = new_id("sthr")
            started = log.make(
                WorkflowRunStepStarted, session_thread_id=thread_id, key=key, item_value=item.value, **where
            )
            ended: list[_ItemDone] = []
            thread = StepThread(log, self.deps, step, thread_id, parent_id=self.parent_id, tool_use_id=self.tool_use_id)
            # The item's start and end are stored with the thread's opening and closing events (one
            # transaction each), not one commit apiece; a closing after which other work starts at once (the
            # next step of a chain in this task, or an item waiting for the slot this one frees) is stored in
            # the transaction of that work's opening.
            await thread.run(
                task,
                before=lambda: self._emit(started),
                after=lambda result: ended.append(self._item_ended(item, where, thread_id, key, result)),
                hold_close=bool(self._dependents.get(step.id)) or self._slots.locked(),
            )
        return ended[0]

    def _item_ended(
        self, item: _Item, where: dict[str, Any], thread_id: str, key: str, result: ItemResult
    ) -> _ItemDone:
        self._tally.ran += 1
        self._tally.usage = self._tally.usage + result.usage
        if not result.ok:
            return self._item_failed(
                item, where, result.error or "the step failed", thread_id=thread_id, key=key, result=result
            )
        completed = self.log.make(
            WorkflowRunStepCompleted,
            session_thread_id=thread_id,
            key=key,
            output=result.output,
            usage=result.usage,
            outcome=result.outcome,
            **where,
        )
        self._emit(completed)
        return _ItemDone(True, result.output, outcome=result.outcome)

    def _item_failed(
        self,
        item: _Item,
        where: dict[str, Any],
        error: str,
        *,
        thread_id: str | None = None,
        key: str | None = None,
        result: ItemResult | None = None,
    ) -> _ItemDone:
        stop_reason = result.stop_reason if result is not None else None
        budget = result is not None and result.budget_reached
        interrupted = stop_reason == "interrupted"
        # Continuing past the budget or an interrupt would only fail the next item the same way.
        continued = item.step.spec.on_error == "continue" and not budget and not interrupted
        output = error_value(item.step.id, item.index, error) if continued else None
        failed = self.log.make(
            WorkflowRunStepFailed,
            session_thread_id=thread_id,
            key=key,
            error=error,
            stop_reason=stop_reason,
            usage=result.usage if result is not None else Usage(),
            continued=continued,
            output=output,
            **where,
        )
        self._emit(failed)
        if continued:
            return _ItemDone(True, output)
        if self._stop is None:
            status: RunEndStatus = "budget_reached" if budget else "interrupted" if interrupted else "failed"
            self._stop = _Stop(status, f"{item.label}: {error}", item.step.id)
        return _ItemDone(False)


@dataclass(frozen=True, slots=True)
class _Item:
    """One run of a step: the step itself (``index`` None), or one item of its ``for_each``."""

    step: CheckedStep
    index: int | None = None
    value: Any = None
    count: int | None = None

    def fields(self) -> dict[str, Any]:
        return {"step_id": self.step.id, "item": self.index, "items": self.count}

    @property
    def label(self) -> str:
        return f"step {self.step.id!r}" + (f" item {self.index}" if self.index is not None else "")


@dataclass(frozen=True, slots=True)
class _ItemDone:
    ok: bool
    output: Any = None
    reused: bool = False
    outcome: WorkflowStepOutcome | None = None
