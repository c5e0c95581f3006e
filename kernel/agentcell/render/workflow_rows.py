"""A workflow run as its progress view lists it: the steps as rows grouped by dependency depth, each with
its status, items, duration, tokens and cost, and the run's totals.

The runs come from the engine's own fold of the ``workflow_run.*`` events
(:func:`agentcell.engine.workflows.workflow_runs`); the widget's ``widgets/js/src/workflow.ts`` computes the
same rows by the same rules, and the parity test over the recorded event logs compares the two. The static
fallbacks (:mod:`.markdown`, :mod:`.fallback_html`) print these rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .._format import format_usd
from ..engine.workflows import WorkflowItem, WorkflowRun, WorkflowStepResult
from ..records.workflow_events import WorkflowRunStepStarted
from ..usage import Usage

if TYPE_CHECKING:
    from .fold import TurnFold

__all__ = [
    "RunSummary",
    "StepRow",
    "format_seconds",
    "item_label",
    "item_threads",
    "row_cells",
    "run_label",
    "run_summary",
    "step_label",
    "totals_text",
]


@dataclass(frozen=True)
class _Progress:
    """How far a step, or a whole run, has got: what its row (or the run's head line) says."""

    label: str
    """waiting, running, completed, completed with N failed, reused, failed, stopped, not run."""
    done: int
    """Items that ended (completed or failed)."""
    total: int | None
    """How many items there are; None while a ``for_each``'s items are not known."""
    running: int
    seconds: float | None
    """From the first item's start to the last one's end; None when no item ran (all reused, or none yet)."""
    usage: Usage

    def _figures(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "done": self.done,
            "total": self.total,
            "seconds": self.seconds,
            "input": self.usage.input_tokens,
            "output": self.usage.output_tokens,
            "cost": format_usd(self.usage.spent),
        }


@dataclass(frozen=True)
class StepRow(_Progress):
    step: WorkflowStepResult

    def record(self) -> dict[str, Any]:
        """The row as the event-log fixtures record it (the widget's ``rowRecord``)."""
        return {"step": self.step.id, "depth": self.step.info.depth, **self._figures()}


@dataclass(frozen=True)
class RunSummary(_Progress):
    run: WorkflowRun
    levels: list[list[StepRow]]
    """Rows by dependency depth, each level in the plan's order."""

    def record(self) -> dict[str, Any]:
        return {"run": self.run.id, **self._figures(), "levels": [[r.record() for r in level] for level in self.levels]}


def step_label(run: WorkflowRun, step: WorkflowStepResult, *, turn_over: bool) -> str:
    live = run.status == "running" and not turn_over
    if step.status == "failed":
        return "failed"
    if step.status == "running":
        return "running" if live else "stopped"
    if step.status == "pending":
        return "waiting" if live else "not run"
    if step.reused:
        return "reused"
    failed = sum(1 for item in step.items if item.status == "failed")
    return f"completed, {failed} failed" if failed else "completed"


def run_label(run: WorkflowRun, *, turn_over: bool) -> str:
    if run.status == "running":
        return "stopped" if turn_over else "running"
    status = run.status.replace("_", " ")
    if run.outcome is not None and run.outcome.status != "satisfied":
        return f"{status}, outcome {run.outcome.status.replace('_', ' ')}"
    return status


def format_seconds(seconds: float) -> str:
    """The widget's ``formatSeconds``: ``340 ms``, ``2.5 s``, ``3 min 4 s``."""
    if seconds < 1:
        return f"{round(seconds * 1000)} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes = int(seconds // 60)
    return f"{minutes} min {round(seconds - minutes * 60)} s"


def _span(starts: list[datetime | None], ends: list[datetime | None]) -> float | None:
    """From the earliest start to the latest end, over the ends known (a fallback has no clock)."""
    known_starts = [s for s in starts if s is not None]
    known_ends = [e for e in ends if e is not None]
    if not known_starts or not known_ends:
        return None
    seconds = (max(known_ends) - min(known_starts)).total_seconds()
    return seconds if seconds >= 0 else None


def _item_usage(fold: TurnFold, item: WorkflowItem) -> Usage:
    """An item's own usage once it ended; while it runs, what its thread's requests spent so far."""
    if item.status != "running" or item.thread_id is None:
        return item.usage
    thread = fold.threads.get(item.thread_id)
    return thread.turn_usage if thread is not None else Usage()


def step_row(fold: TurnFold, run: WorkflowRun, step: WorkflowStepResult) -> StepRow:
    ran = [item for item in step.items if item.started_at is not None]
    usage = Usage()
    for item in step.items:
        usage = usage + _item_usage(fold, item)
    return StepRow(
        step=step,
        label=step_label(run, step, turn_over=fold.turn_over),
        done=sum(1 for item in step.items if item.status != "running"),
        total=step.item_count if step.info.for_each else 1,
        running=0 if fold.turn_over else sum(1 for item in step.items if item.status == "running"),
        seconds=_span([item.started_at for item in ran], [item.ended_at for item in ran]),
        usage=usage,
    )


def run_summary(fold: TurnFold, run: WorkflowRun) -> RunSummary:
    rows = [step_row(fold, run, step) for step in run.steps]
    by_depth: dict[int, list[StepRow]] = {}
    for row in rows:
        by_depth.setdefault(row.step.info.depth, []).append(row)
    totals = [row.total for row in rows]
    usage = Usage()
    for row in rows:
        usage = usage + row.usage
    return RunSummary(
        run=run,
        levels=[by_depth[depth] for depth in sorted(by_depth)],
        label=run_label(run, turn_over=fold.turn_over),
        done=sum(row.done for row in rows),
        total=None if any(t is None for t in totals) else sum(t for t in totals if t is not None),
        running=sum(row.running for row in rows),
        seconds=_span([run.started_at], [run.ended_at or fold.ended_at]),
        usage=usage,
    )


def _tokens(usage: Usage) -> str:
    return f"in {usage.input_tokens:,} · out {usage.output_tokens:,}"


def _cost(usage: Usage) -> str:
    """The widget's ``usageCost``: never ``$0`` for requests of a model without a list price."""
    if usage.unpriced_requests:
        return f"cost unknown beyond {format_usd(usage.spent)}" if usage.spent else "cost unknown"
    return format_usd(usage.spent)


def totals_text(summary: RunSummary) -> str:
    """The head line's figures, as the widget's progress view has them."""
    items = f"{summary.done} items done" if summary.total is None else f"{summary.done} of {summary.total} items"
    parts = [
        items,
        f"{summary.running} running" if summary.running else "",
        f"{summary.run.reused} reused" if summary.run.reused else "",
        "" if summary.seconds is None else format_seconds(summary.seconds),
        _tokens(summary.usage),
        _cost(summary.usage),
    ]
    return " · ".join(part for part in parts if part)


def row_cells(row: StepRow) -> dict[str, str]:
    """A row's columns as text: status, step, agent, items, time, tokens, cost."""
    count = f"{row.done} done" if row.total is None else f"{row.done}/{row.total}"
    running = f" · {row.running} running" if row.running else ""
    return {
        "status": row.label,
        "step": row.step.id,
        "agent": row.step.info.agent_name,
        "items": f"{count} items{running}" if row.step.info.for_each else "",
        "time": "—" if row.seconds is None else format_seconds(row.seconds),
        "tokens": _tokens(row.usage),
        "cost": _cost(row.usage),
    }


def item_threads(fold: TurnFold, run: WorkflowRun) -> Iterator[tuple[str | None, str]]:
    """In the plan's order, each step's item threads as ``(thread id, heading)`` then, for a step that
    failed before any item ran, ``(None, its error)``: what a fallback shows under the table."""
    values: dict[tuple[str, str, int | None], Any] = {
        (e.run_id, e.step_id, e.item): e.item_value
        for e in fold.workflow_events
        if isinstance(e, WorkflowRunStepStarted) and e.item is not None
    }
    for step in run.steps:
        for item in step.items:
            if item.thread_id is not None and item.thread_id in fold.threads:
                yield item.thread_id, item_label(step, item, values.get((run.id, step.id, item.index)))
        if step.error:
            yield None, f"{step.id}: {step.error}"


def item_label(step: WorkflowStepResult, item: WorkflowItem, value: Any = None) -> str:
    """How one item of a step went, for the heading of its thread (the widget's item line)."""
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    shown = shown if len(shown) <= 60 else shown[:59] + "…"
    where = f"{step.id} · item {(item.index or 0) + 1}{f': {shown}' if value is not None else ''}"
    where = where if step.info.for_each else step.id
    if item.reused:
        return f"{where} — reused from an earlier run"
    if item.status == "failed":
        return f"{where} — failed{', the run went on' if item.continued else ''}"
    return f"{where} — {item.status}"
