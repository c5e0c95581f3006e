"""Starting a run: by the user (a turn opened by ``user.start_workflow_run``), or by the agent's own tool.

``start_workflow_run {plan, inputs?}`` is offered to the primary thread of an agent whose snapshotted
multi-agent settings allow workflow runs. The plan is checked as the user's would be; the run's steps are
threads of the caller's thread, nested under the tool call; the tool's result is the run's status and final
output only (each step's status, not its output), so the coordinator's context holds what the plan
produced rather than every intermediate result. A plan that cannot run is an ``INVALID_INPUT`` result
naming the step at fault; a run that fails is an error result saying why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from ...errors import WorkflowPlanError
from ...events import BudgetReached, EndTurn, ErrorInfo, ErrorStop, SessionError, StopReason
from ...providers.base import ToolSchema
from ...records.agent import Agent
from ...records.session import ResolvedMultiAgent
from ...records.workflow import WorkflowPlan
from ...records.workflow_events import UserStartWorkflowRun
from ...tools.base import ToolCall, ToolResult
from ...usage import Budget
from ..deps import TurnDeps
from ..inputs import check_cell_id
from ..log import SessionLog
from ..request import SessionTool
from ..updates import resolve_multiagent
from .result import WorkflowRun
from .run import WorkflowRunner
from .validate import CheckedPlan, check_plan

__all__ = [
    "START_TOOL",
    "check_workflow_plan",
    "ended_run",
    "run_started_by_user",
    "start_event",
    "workflow_tools",
]

START_TOOL = "start_workflow_run"


def _settings(log: SessionLog, deps: TurnDeps) -> ResolvedMultiAgent | None:
    """The session's snapshot, or for a session recorded before sessions kept one, resolved now."""
    settings = log.record.multiagent
    if settings is None and log.agent.multiagent is not None:
        settings = resolve_multiagent(log.agent, deps.agents)
    return settings


def check_workflow_plan(
    log: SessionLog,
    deps: TurnDeps,
    plan: Mapping[str, Any] | WorkflowPlan,
    *,
    inputs: Mapping[str, Any] | None = None,
    max_concurrency: int | None = None,
    budget: str | int | float | Decimal | Budget | None = None,
) -> CheckedPlan:
    """The plan checked against the session as it is now (its agent's snapshotted settings, its models)."""
    return check_plan(
        plan,
        settings=_settings(log, deps),
        session_agent=log.agent,
        resolve_model=deps.resolve_model,
        inputs=inputs,
        max_concurrency=max_concurrency,
        budget=budget,
    )


# ---------------------------------------------------------------------------------------------- the user


def start_event(
    log: SessionLog,
    deps: TurnDeps,
    plan: Mapping[str, Any] | WorkflowPlan,
    *,
    inputs: Mapping[str, Any] | None = None,
    max_concurrency: int | None = None,
    budget: str | int | float | Decimal | Budget | None = None,
    resume: bool = True,
    cell_id: str | None = None,
) -> UserStartWorkflowRun:
    """The event that opens a user's run, once the plan checked; raises WorkflowPlanError (nothing appended)."""
    check_cell_id(cell_id)
    checked = check_workflow_plan(log, deps, plan, inputs=inputs, max_concurrency=max_concurrency, budget=budget)
    data = plan.model_dump(mode="json", exclude_none=True) if isinstance(plan, WorkflowPlan) else dict(plan)
    start = log.make(
        UserStartWorkflowRun,
        plan=data,
        inputs=dict(inputs or {}),
        max_concurrency=max_concurrency,
        budget=checked.budget if budget is not None else None,
        resume=resume,
        cell_id=cell_id,
    )
    _remember(start.id, log, deps, checked)
    return start


_CHECKED: dict[str, tuple[ResolvedMultiAgent | None, Agent, CheckedPlan]] = {}
"""Plans checked by :func:`start_event`, by the id of the event, until its turn starts the run: a plan of many
steps is not checked twice over a moment in which nothing changed. Bounded, for events whose turn never ran."""


_ENDED: dict[str, WorkflowRun] = {}
"""Runs a user's turn ended, by the id of the event that opened it, until ``session.run_workflow`` takes its
result: the runner folded the run from its own events already, not to be folded again from the whole turn's."""


def _keep(cache: dict[str, Any], event_id: str, value: Any) -> None:
    """Bounded, for entries nobody takes (a turn that never ran, a caller that went away)."""
    while len(cache) >= 16:
        del cache[next(iter(cache))]
    cache[event_id] = value


def _remember(event_id: str, log: SessionLog, deps: TurnDeps, checked: CheckedPlan) -> None:
    _keep(_CHECKED, event_id, (_settings(log, deps), log.agent, checked))


def ended_run(start: UserStartWorkflowRun) -> WorkflowRun | None:
    """The run that the turn opened by ``start`` ended with, once (None if it did not end, or was taken)."""
    return _ENDED.pop(start.id, None)


def _recall(event_id: str, log: SessionLog, deps: TurnDeps) -> CheckedPlan | None:
    """The plan as checked when its event was made, if the session's agent and settings are still the same."""
    remembered = _CHECKED.pop(event_id, None)
    if remembered is None:
        return None
    settings, agent, checked = remembered
    return checked if settings == _settings(log, deps) and agent == log.agent else None


async def run_started_by_user(log: SessionLog, deps: TurnDeps, start: UserStartWorkflowRun) -> StopReason:
    """The work of a turn the user opened with a run: the turn's stop reason says how the run ended."""
    try:
        checked = _recall(start.id, log, deps) or check_workflow_plan(
            log, deps, start.plan, inputs=start.inputs, max_concurrency=start.max_concurrency, budget=start.budget
        )
    except WorkflowPlanError as exc:  # checked when it was given; only a change of the session gets here
        log.emit(log.make(SessionError, error=ErrorInfo(type="invalid_request_error", message=str(exc))))
        return ErrorStop(message=str(exc))
    run = await WorkflowRunner(log, deps, checked, resume=start.resume).run()
    _keep(_ENDED, start.id, run)
    if run.status == "completed":
        return EndTurn()
    if run.status == "budget_reached":
        return BudgetReached()
    return ErrorStop(message=f"the workflow run {run.name!r} failed: {run.error}")


# ---------------------------------------------------------------------------------------------- the agent


def workflow_tools(log: SessionLog, deps: TurnDeps, agent: Agent) -> list[SessionTool]:
    """``start_workflow_run``, when the session's agent may start runs."""
    del agent  # the session's snapshot decides, as it does for the threads' tools
    settings = _settings(log, deps)
    if settings is None or not settings.workflow_runs:
        return []

    async def start(call: ToolCall) -> ToolResult:
        plan, inputs = call.input.get("plan"), call.input.get("inputs")
        if isinstance(plan, str):  # a model that wrote the plan as a JSON string
            try:
                plan = json.loads(plan)
            except ValueError:
                return ToolResult.error("plan is a JSON object: {name, steps: [...]}", "INVALID_INPUT")
        if not isinstance(plan, Mapping):
            return ToolResult.error("start_workflow_run needs a plan: {name, steps: [...]}", "INVALID_INPUT")
        if inputs is not None and not isinstance(inputs, Mapping):
            return ToolResult.error("inputs is an object of names to values", "INVALID_INPUT")
        try:
            checked = check_workflow_plan(log, deps, plan, inputs=inputs)
        except WorkflowPlanError as exc:
            return ToolResult.error(f"the plan cannot run: {exc}", "INVALID_INPUT")
        run = await WorkflowRunner(log, deps, checked, parent_id=call.thread_id, tool_use_id=call.tool_use_id).run()
        return tool_result(run)

    return [SessionTool(_schema(settings), start)]


def tool_result(run: WorkflowRun) -> ToolResult:
    """The run as its coordinator reads it: status and final output, each step's status and no more."""
    summary: dict[str, Any] = {"run_id": run.id, "name": run.name, "status": run.status}
    summary["steps"] = [{"id": s.id, "status": s.status, **({"reused": True} if s.reused else {})} for s in run.steps]
    if run.status == "completed":
        summary["output"] = run.output
    else:
        summary["error"] = run.error
    if run.outcome is not None:
        summary["outcome"] = {"status": run.outcome.status, "explanation": run.outcome.explanation}
    text = json.dumps(summary, ensure_ascii=False, indent=1)
    return ToolResult.text(text) if run.status == "completed" else ToolResult.error(text, "WORKFLOW_FAILED")


def _schema(settings: ResolvedMultiAgent) -> ToolSchema:
    lines = [
        "Start a workflow run: a plan of steps, each run by an agent in a thread of its own, and wait for its "
        "result. Steps run when the steps they depend_on are done; independent steps and the items of a "
        "for_each run at the same time. Prompts are templates: {{inputs.NAME}}, {{item}} (in a for_each "
        "step), {{steps.ID.output}} and, for a for_each step, {{steps.ID.outputs}} (a list). Optional per "
        "step: output_schema (a JSON schema; the output is then that JSON), max_turns, outcome {rubric, "
        'max_iterations} (graded and revised), on_error "fail" or "continue". Returns the run\'s status and '
        "the last step's output.",
    ]
    if settings.workflow_agents:
        lines.append('Saved agents a step may use (agent: {"id": ...}):')
        for agent in settings.workflow_agents:
            about = f": {agent.description}" if agent.description else ""
            lines.append(f"- {agent.id} ({agent.name}){about}")
    if settings.workflow_inline_agents:
        lines.append('A step may also define its agent inline: agent: {"inline": {"name", "system", "model"?}}.')
    agent_choices: list[dict[str, Any]] = []
    if settings.workflow_agents:
        agent_choices.append(
            {
                "type": "object",
                "properties": {"id": {"type": "string", "enum": [a.id for a in settings.workflow_agents]}},
                "required": ["id"],
            }
        )
    if settings.workflow_inline_agents:
        inline = {
            "type": "object",
            "properties": {"name": {"type": "string"}, "system": {"type": "string"}, "model": {"type": "string"}},
            "required": ["name"],
        }
        agent_choices.append({"type": "object", "properties": {"inline": inline}, "required": ["inline"]})
    step = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "Letters, digits, _ and -; named in depends_on and templates."},
            "agent": agent_choices[0] if len(agent_choices) == 1 else {"anyOf": agent_choices},
            "prompt": {"type": "string"},
            "depends_on": {"type": "array", "items": {"type": "string"}},
            "for_each": {"description": "A list of items, or a template naming one: {{steps.ID.output}}"},
            "output_schema": {"type": "object"},
            "max_turns": {"type": "integer", "minimum": 1},
            "outcome": {
                "type": "object",
                "properties": {"rubric": {"type": "string"}, "max_iterations": {"type": "integer"}},
            },
            "on_error": {"type": "string", "enum": ["fail", "continue"]},
        },
        "required": ["id", "agent", "prompt"],
    }
    plan = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "inputs": {"type": "object"},
            "steps": {"type": "array", "items": step, "minItems": 1},
        },
        "required": ["name", "steps"],
    }
    return ToolSchema(
        name=START_TOOL,
        description="\n".join(lines),
        input_schema={
            "type": "object",
            "properties": {"plan": plan, "inputs": {"type": "object"}},
            "required": ["plan"],
        },
    )
