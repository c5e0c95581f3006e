"""Checking a plan before anything runs: its shape, its graph, its templates, and the agents it may use.

:func:`check_plan` turns a plan (a JSON-compatible mapping, or a :class:`WorkflowPlan`) into a
:class:`CheckedPlan`, or raises :class:`~agentcell.errors.WorkflowPlanError` naming the step at fault:

- the session's agent may not start workflow runs (its snapshotted ``multiagent.workflow_runs``);
- the plan is not data (a value JSON cannot hold), or a field has the wrong shape;
- two steps share an id, a step depends on an unknown step or on itself, or the steps form a cycle;
- a template names an input the run does not have, ``item`` outside a ``for_each`` step, a step that is not
  among the step's dependencies (direct or indirect), ``.output`` of a ``for_each`` step or ``.outputs``
  of another;
- a step names a saved agent the session does not allow runs to use (or another version of it), or defines
  one inline when the session's agent may not allow that, or names a model no provider serves;
- an output schema is not a valid JSON schema; a run ceiling on a model with no list price.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ...errors import AgentCellError, InvalidInputError, WorkflowPlanError
from ...ids import new_id
from ...records.agent import Agent
from ...records.common import utc_now
from ...records.model import ModelConfig
from ...records.session import ResolvedMultiAgent
from ...records.workflow import MAX_ITEMS, WorkflowPlan, WorkflowStep
from ...records.workflow_events import WorkflowStepInfo
from ...usage import Budget
from ..budget import check_priced
from ..updates import parse_budget
from .template import Ref, TemplateError, parse_refs, parse_single_ref

if TYPE_CHECKING:
    from ...providers.registry import ResolvedModel

__all__ = ["DEFAULT_CONCURRENCY", "CheckedPlan", "CheckedStep", "check_plan", "json_problem"]

DEFAULT_CONCURRENCY = max(2, min(8, 2 * (os.cpu_count() or 2)))
"""Step items running at once when neither the plan nor the caller says: twice the cores (4 on the
project's 2-core machines), so that items waiting on a model overlap without crowding the machine."""


@dataclass(frozen=True, slots=True)
class CheckedStep:
    spec: WorkflowStep
    agent: Agent
    """The full definition it runs: the session's snapshot of a saved agent, or the inline one."""
    inline: bool
    prompt_refs: tuple[Ref, ...]
    items_ref: Ref | None
    """The reference a templated ``for_each`` names; None for a listed one (or none)."""
    depth: int
    ancestors: frozenset[str]

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def for_each(self) -> bool:
        return self.spec.for_each is not None

    def info(self) -> WorkflowStepInfo:
        spec = self.spec
        return WorkflowStepInfo(
            id=spec.id,
            agent_name=self.agent.name,
            agent_id=self.agent.id,
            agent_version=None if self.inline else self.agent.version,
            depends_on=list(spec.depends_on),
            depth=self.depth,
            for_each=self.for_each,
            items=len(spec.for_each) if isinstance(spec.for_each, list) else None,
            outcome=spec.outcome is not None,
        )


@dataclass(frozen=True, slots=True)
class CheckedPlan:
    plan: WorkflowPlan
    """The plan with the run's inputs in place."""
    steps: tuple[CheckedStep, ...]
    """In the plan's order."""
    max_concurrency: int
    budget: Budget | None

    def step(self, step_id: str) -> CheckedStep:
        return next(s for s in self.steps if s.id == step_id)


def check_plan(
    plan: Mapping[str, Any] | WorkflowPlan,
    *,
    settings: ResolvedMultiAgent | None,
    session_agent: Agent,
    resolve_model: Callable[[ModelConfig], ResolvedModel],
    inputs: Mapping[str, Any] | None = None,
    max_concurrency: int | None = None,
    budget: str | int | float | Decimal | Budget | None = None,
) -> CheckedPlan:
    """The plan as it will run, checked whole (see the module docstring); nothing is appended."""
    if settings is None or not settings.workflow_runs:
        raise WorkflowPlanError(
            f"the session's agent {session_agent.name!r} may not start workflow runs: give the agent "
            "multiagent={'workflow_runs': True, 'workflow_agents': [...], 'workflow_inline_agents': True} and "
            "move the session to that version (session.update(agent_version=...)) or start a new one: a session "
            "keeps the settings of the agent version it runs. In a notebook, %workflows on does both"
        )
    data = plan.model_dump(mode="json") if isinstance(plan, WorkflowPlan) else plan
    if not isinstance(data, Mapping):
        raise WorkflowPlanError(f"a plan is an object with name and steps, not {type(data).__name__}")
    if (problem := json_problem(data, "plan")) is not None:
        raise WorkflowPlanError(problem)
    if inputs is not None:
        if not isinstance(inputs, Mapping) or not all(isinstance(k, str) for k in inputs):
            raise WorkflowPlanError("the run's inputs are an object of names to values")
        if (problem := json_problem(inputs, "inputs")) is not None:
            raise WorkflowPlanError(problem)
        data = {**data, "inputs": {**(data.get("inputs") or {}), **inputs}}
    parsed = _parse(data)
    ids = [s.id for s in parsed.steps]
    if duplicated := sorted({i for i in ids if ids.count(i) > 1}):
        raise WorkflowPlanError(f"two steps have the id {duplicated[0]!r}; step ids are unique", duplicated[0])
    for step in parsed.steps:
        for dep in step.depends_on:
            if dep == step.id:
                raise WorkflowPlanError("it depends on itself", step.id)
            if dep not in ids:
                raise WorkflowPlanError(
                    f"it depends on {dep!r}, which is no step of the plan (steps: {', '.join(ids)})", step.id
                )
    _check_acyclic(parsed)
    ancestors = _ancestors(parsed)
    depths = _depths(parsed)
    by_id = {s.id: s for s in parsed.steps}
    checked = []
    for step in parsed.steps:
        prompt_refs, items_ref = _check_templates(step, parsed.inputs, by_id, ancestors[step.id])
        agent, inline = _agent(step, settings, session_agent, resolve_model)
        _check_options(step, resolve_model)
        checked.append(CheckedStep(step, agent, inline, prompt_refs, items_ref, depths[step.id], ancestors[step.id]))
    concurrency = max_concurrency if max_concurrency is not None else parsed.max_concurrency
    if concurrency is not None and (
        isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1
    ):
        raise WorkflowPlanError(f"max_concurrency is a whole number from 1, not {concurrency!r}")
    try:
        ceiling = parse_budget(budget if budget is not None else parsed.budget)
    except InvalidInputError as exc:
        raise WorkflowPlanError(f"the run's budget: {exc}") from None
    if ceiling is not None:
        for each in checked:
            _check_priced(each, resolve_model)
    return CheckedPlan(parsed, tuple(checked), concurrency or DEFAULT_CONCURRENCY, ceiling)


# ---------------------------------------------------------------------------------------------- shape


def json_problem(value: Any, where: str) -> str | None:
    """Why ``value`` is not JSON-compatible data (a YAML date, a tuple, a float that is not finite), naming
    where; None when it is."""
    if value is None or isinstance(value, bool | int | str):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where} is {value}, which JSON cannot hold"
    if isinstance(value, list):
        return next((p for i, v in enumerate(value) if (p := json_problem(v, f"{where}[{i}]"))), None)
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where} has the key {key!r}, which is not a string; plans are JSON data"
            if (problem := json_problem(item, f"{where}.{key}")) is not None:
                return problem
        return None
    return f"{where} is a {type(value).__name__}, which JSON cannot hold; plans are JSON data (quote it as a string)"


def _parse(data: Mapping[str, Any]) -> WorkflowPlan:
    try:
        return WorkflowPlan.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = list(error["loc"])
        step: str | None = None
        if len(loc) >= 2 and loc[0] == "steps" and isinstance(loc[1], int):
            raw = data.get("steps")
            entry = raw[loc[1]] if isinstance(raw, list) and loc[1] < len(raw) else None
            named = entry.get("id") if isinstance(entry, Mapping) else None
            step = named if isinstance(named, str) else None
            if step is None:
                loc[:2] = [f"steps[{loc[1]}]"]
            else:
                loc = loc[2:]
        where = ".".join(str(p) for p in loc if not str(p).startswith(("function-", "literal[")))
        message = str(error["msg"]).removeprefix("Value error, ")
        more = len(exc.errors()) - 1
        extra = f" (and {more} more problem{'s' * (more > 1)})" if more else ""
        raise WorkflowPlanError(f"{where or 'the plan'}: {message}{extra}", step) from None


def _check_acyclic(plan: WorkflowPlan) -> None:
    deps = {s.id: s.depends_on for s in plan.steps}
    order = list(deps)
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    path: list[str] = []

    def visit(step_id: str) -> None:
        state[step_id] = 1
        path.append(step_id)
        for dep in deps[step_id]:
            if state.get(dep) == 1:
                # In the direction work flows (a step after the ones it depends on), from the cycle's step
                # that comes first in the plan: the one named.
                flow = list(reversed(path[path.index(dep) :]))
                first = min(flow, key=order.index)
                flow = flow[flow.index(first) :] + flow[: flow.index(first)]
                raise WorkflowPlanError(f"the steps {' → '.join([*flow, first])} form a cycle", first)
            if dep not in state:
                visit(dep)
        path.pop()
        state[step_id] = 2

    for step in plan.steps:
        if step.id not in state:
            visit(step.id)


def _ancestors(plan: WorkflowPlan) -> dict[str, frozenset[str]]:
    deps = {s.id: s.depends_on for s in plan.steps}
    found: dict[str, frozenset[str]] = {}

    def of(step_id: str) -> frozenset[str]:
        if step_id not in found:
            found[step_id] = frozenset(d for dep in deps[step_id] for d in (dep, *of(dep)))
        return found[step_id]

    return {s.id: of(s.id) for s in plan.steps}


def _depths(plan: WorkflowPlan) -> dict[str, int]:
    deps = {s.id: s.depends_on for s in plan.steps}
    found: dict[str, int] = {}

    def of(step_id: str) -> int:
        if step_id not in found:
            found[step_id] = 1 + max((of(d) for d in deps[step_id]), default=-1)
        return found[step_id]

    return {s.id: of(s.id) for s in plan.steps}


# ---------------------------------------------------------------------------------------------- templates


def _check_templates(
    step: WorkflowStep, inputs: Mapping[str, Any], steps: Mapping[str, WorkflowStep], ancestors: frozenset[str]
) -> tuple[tuple[Ref, ...], Ref | None]:
    try:
        prompt_refs = tuple(parse_refs(step.prompt))
    except TemplateError as exc:
        raise WorkflowPlanError(f"its prompt: {exc}", step.id) from None
    items_ref = None
    if isinstance(step.for_each, str):
        try:
            items_ref = parse_single_ref(step.for_each)
        except TemplateError as exc:
            raise WorkflowPlanError(f"its for_each: {exc}", step.id) from None
        if items_ref is None or items_ref.root == "item":
            raise WorkflowPlanError(
                "for_each is a list, or one template naming a list: {{inputs.NAME}} or {{steps.ID.output}}", step.id
            )
    elif isinstance(step.for_each, list) and len(step.for_each) > MAX_ITEMS:
        raise WorkflowPlanError(f"for_each has {len(step.for_each)} items; the most is {MAX_ITEMS}", step.id)
    for where, ref in [*(("prompt", r) for r in prompt_refs), *((("for_each", items_ref),) if items_ref else ())]:
        problem = _ref_problem(ref, step, inputs, steps, ancestors)
        if problem is not None:
            raise WorkflowPlanError(f"its {where} has {{{{{ref.text}}}}}, but {problem}", step.id)
    return prompt_refs, items_ref


def _ref_problem(
    ref: Ref,
    step: WorkflowStep,
    inputs: Mapping[str, Any],
    steps: Mapping[str, WorkflowStep],
    ancestors: frozenset[str],
) -> str | None:
    if ref.root == "item":
        return None if step.for_each is not None else "the step has no for_each, so there is no item"
    if ref.root == "inputs":
        name = ref.path[0]
        if name not in inputs:
            return f"the run has no input {name!r} (inputs: {', '.join(inputs) or 'none'})"
        return None
    assert ref.step is not None
    if ref.step not in steps:
        return f"there is no step {ref.step!r}"
    if ref.step not in ancestors:
        return f"{ref.step!r} is not among its dependencies: add it to depends_on"
    many = steps[ref.step].for_each is not None
    if ref.many and not many:
        return f"{ref.step!r} has no for_each: write steps.{ref.step}.output"
    if many and not ref.many:
        return f"{ref.step!r} runs for_each: its list of outputs is steps.{ref.step}.outputs"
    return None


# ---------------------------------------------------------------------------------------------- agents


def _agent(
    step: WorkflowStep,
    settings: ResolvedMultiAgent,
    session_agent: Agent,
    resolve_model: Callable[[ModelConfig], ResolvedModel],
) -> tuple[Agent, bool]:
    choice = step.agent
    if choice.inline is None:
        allowed = {a.id: a for a in settings.workflow_agents}
        agent = allowed.get(str(choice.id))
        if agent is None:
            usable = ", ".join(f"{a.id} ({a.name})" for a in settings.workflow_agents) or "none"
            inline = "; or define one inline" if settings.workflow_inline_agents else ""
            raise WorkflowPlanError(
                f"the agent {choice.id} is not one a run's plan may use here; it may use: {usable}{inline}", step.id
            )
        if choice.version is not None and choice.version != agent.version:
            raise WorkflowPlanError(
                f"the agent {agent.id} ({agent.name}) is allowed at version {agent.version}, not {choice.version} "
                "(the session keeps the versions its agent allowed when the session was created)",
                step.id,
            )
        return agent, False
    if not settings.workflow_inline_agents:
        raise WorkflowPlanError(
            f"it defines the agent {choice.inline.name!r} inline, and the session's agent may not allow a plan to "
            "define agents: use a saved agent it allows, or give it multiagent.workflow_inline_agents",
            step.id,
        )
    spec = choice.inline
    now = utc_now()
    agent = Agent(
        id=new_id("agent"),
        version=1,
        name=spec.name,
        description=spec.description,
        model=ModelConfig(id=spec.model) if spec.model else session_agent.model,
        system=spec.system,
        created_at=now,
        updated_at=now,
    )
    _resolve(agent.model, resolve_model, step.id, f"the inline agent {spec.name!r}")
    return agent, True


def _resolve(
    model: ModelConfig, resolve_model: Callable[[ModelConfig], ResolvedModel], step_id: str, what: str
) -> ResolvedModel:
    try:
        return resolve_model(model)
    except AgentCellError as exc:
        raise WorkflowPlanError(f"{what} names the model {model.id!r}, which cannot be used: {exc}", step_id) from None


def _check_options(step: WorkflowStep, resolve_model: Callable[[ModelConfig], ResolvedModel]) -> None:
    if step.output_schema is not None:
        from jsonschema.exceptions import SchemaError  # seconds to import: only for a plan with a schema (step.py)
        from jsonschema.validators import validator_for

        try:
            validator_for(step.output_schema).check_schema(step.output_schema)
        except SchemaError as exc:
            raise WorkflowPlanError(f"its output_schema is not a valid JSON schema: {exc.message}", step.id) from None
    if step.outcome is not None and step.outcome.grader_model is not None:
        _resolve(ModelConfig(id=step.outcome.grader_model), resolve_model, step.id, "its outcome")


def _check_priced(step: CheckedStep, resolve_model: Callable[[ModelConfig], ResolvedModel]) -> None:
    models = [step.agent.model]
    if step.spec.outcome is not None and step.spec.outcome.grader_model is not None:
        models.append(ModelConfig(id=step.spec.outcome.grader_model))
    for model in models:
        resolved = _resolve(model, resolve_model, step.id, "it")
        try:
            check_priced(resolved)
        except InvalidInputError as exc:
            raise WorkflowPlanError(f"the run has a budget, and {exc}", step.id) from None
