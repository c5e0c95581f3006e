"""Plans that cannot run are refused whole before anything is appended, each with an error naming the step."""

from __future__ import annotations

import copy
import datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentcell import WorkflowPlanError
from agentcell.engine.workflows.template import TemplateError, TemplateValues, parse_refs, render

from ._workflows import by_system, review_plan, say, workflow_engine
from .conftest import engine_over

Edit = Callable[[dict[str, Any]], None]


def _step(plan: dict[str, Any], step_id: str) -> dict[str, Any]:
    return next(s for s in plan["steps"] if s["id"] == step_id)


def _set(step_id: str, **fields: Any) -> Edit:
    return lambda plan: _step(plan, step_id).update(fields)


def _drop(step_id: str, field: str) -> Edit:
    return lambda plan: _step(plan, step_id).pop(field)


def _add(step: dict[str, Any]) -> Edit:
    return lambda plan: plan["steps"].append(step)


INLINE = {"inline": {"name": "x", "system": "critic: x"}}

MATRIX: list[tuple[str, Edit, str | None, str]] = [
    ("unknown dependency", _set("final", depends_on=["reveiws"]), "final", "depends on 'reveiws', which is no step"),
    ("depends on itself", _set("draft", depends_on=["draft"]), "draft", "it depends on itself"),
    ("a cycle", _set("draft", depends_on=["final"]), "draft", "the steps draft → reviews → final → draft form a cycle"),
    ("two steps, one id", _add({"id": "draft", "agent": INLINE, "prompt": "again"}), "draft", "two steps have the id"),
    (
        "a template naming a step that is not a dependency",
        _set("final", prompt="{{steps.draft.output}}", depends_on=[]),
        "final",
        "'draft' is not among its dependencies: add it to depends_on",
    ),
    (
        "an indirect dependency is fine",
        _set("final", prompt="{{steps.draft.output}} {{steps.reviews.outputs}}"),
        None,
        "",
    ),
    ("a template naming no step", _set("final", prompt="{{steps.nope.output}}"), "final", "there is no step 'nope'"),
    (
        "a template naming a missing input",
        _set("draft", prompt="{{inputs.subject}}"),
        "draft",
        "the run has no input 'subject' (inputs: topic)",
    ),
    ("item outside for_each", _set("draft", prompt="{{item}}"), "draft", "the step has no for_each"),
    (
        ".output of a for_each step",
        _set("final", prompt="{{steps.reviews.output}}"),
        "final",
        "its list of outputs is steps.reviews.outputs",
    ),
    (
        ".outputs of a single step",
        _set("reviews", prompt="{{steps.draft.outputs}}"),
        "reviews",
        "'draft' has no for_each: write steps.draft.output",
    ),
    ("a template that reaches nothing", _set("draft", prompt="{{session.id}}"), "draft", "reaches nothing"),
    (
        "for_each that is not one reference",
        _set("reviews", for_each="{{inputs.topic}} and more"),
        "reviews",
        "for_each is a list, or one template naming a list",
    ),
    (
        "an unknown agent",
        _set("draft", agent={"id": "agent_nobody"}),
        "draft",
        "the agent agent_nobody is not one a run's plan may use here",
    ),
    ("another version of an allowed agent", _set("draft", agent="VERSION"), "draft", "is allowed at version 1, not 2"),
    (
        "an inline agent on a model nobody serves",
        _set("reviews", agent={"inline": {"name": "c", "model": "nope:x"}}),
        "reviews",
        "names the model 'nope:x', which cannot be used",
    ),
    (
        "a version on an inline agent",
        _set("reviews", agent={"inline": {"name": "c"}, "version": 1}),
        "reviews",
        "an inline agent has none",
    ),
    (
        "both kinds of agent",
        _set("reviews", agent={"inline": {"name": "c"}, "id": "agent_x"}),
        "reviews",
        'give either "id"',
    ),
    ("no prompt", _drop("draft", "prompt"), "draft", "prompt: Field required"),
    ("an unknown option", _set("draft", retries=3), "draft", "retries: Extra inputs are not permitted"),
    ("a bad on_error", _set("draft", on_error="ignore"), "draft", "on_error: Input should be 'fail' or 'continue'"),
    (
        "a schema that is no schema",
        _set("draft", output_schema={"type": "nonsense"}),
        "draft",
        "its output_schema is not a valid JSON schema",
    ),
    (
        "a grader nobody serves",
        _set("final", outcome={"rubric": "r", "grader_model": "nope:x"}),
        "final",
        "its outcome names the model 'nope:x'",
    ),
    (
        "not JSON data",
        _set("draft", prompt=datetime.date(2026, 1, 1)),
        None,
        "plan.steps[0].prompt is a date, which JSON cannot hold",
    ),
    ("no steps", lambda plan: plan.update(steps=[]), None, "steps: List should have at least 1 item"),
    ("a step without an id", lambda plan: plan["steps"][0].pop("id"), None, "steps[0].id: Field required"),
    ("a run budget that is no amount", lambda plan: plan.update(budget="lots"), None, "the run's budget: a budget is"),
]


@pytest.mark.parametrize("row", MATRIX, ids=[m[0] for m in MATRIX])
async def test_an_invalid_plan_is_refused_naming_the_step(
    db_path: Path, workspace: Path, row: tuple[str, Edit, str | None, str]
) -> None:
    case, edit, step_id, message = row
    engine, provider, session, agents = workflow_engine(db_path, workspace, by_system())
    plan = copy.deepcopy(review_plan(agents))
    if case == "another version of an allowed agent":
        engine.agents.update(agents["drafter"], system="drafter: v2")  # version 2 exists, the session allows 1
        edit = _set("draft", agent={"id": agents["drafter"], "version": 2})
    edit(plan)
    before = len(session.events())
    if not message:  # the case that is valid after all: checking passes (the run is not started here)
        session.check_workflow(plan)
        assert len(session.events()) == before
        return
    with pytest.raises(WorkflowPlanError) as checked:
        session.check_workflow(plan)  # what a %%workflow cell asks before it shows a turn
    with pytest.raises(WorkflowPlanError) as raised:
        await session.run_workflow(plan)
    assert str(checked.value) == str(raised.value)
    assert message in str(raised.value)
    assert raised.value.step_id == step_id
    if step_id is not None:
        assert str(raised.value).startswith(f"step {step_id!r}: ")
    assert len(session.events()) == before and provider.requests == []
    await engine.aclose()


async def test_inline_agents_only_when_the_session_allows_them(db_path: Path, workspace: Path) -> None:
    engine, _, session, agents = workflow_engine(db_path, workspace, by_system(), inline=False)
    with pytest.raises(WorkflowPlanError, match="defines the agent 'critic' inline") as raised:
        await session.run_workflow(review_plan(agents))
    assert raised.value.step_id == "reviews" and session.events() == []
    await engine.aclose()


async def test_a_run_only_when_the_agent_may_start_runs(db_path: Path, workspace: Path) -> None:
    engine, provider, _ = engine_over(db_path, workspace, by_system(w=lambda r: say("x")))
    for multiagent in (None, {"inline_agents": True}):
        solo = engine.agents.create(name="solo", model="scripted", multiagent=multiagent)
        session = engine.sessions.create(agent=solo.id)
        plan = {
            "name": "p",
            "steps": [{"id": "a", "agent": {"inline": {"name": "w", "system": "w: x"}}, "prompt": "x"}],
        }
        with pytest.raises(WorkflowPlanError, match="'solo' may not start workflow runs") as raised:
            await session.run_workflow(plan)
        assert raised.value.step_id is None and session.events() == []
        # Nor does its agent get the tool.
        await session.ask("hi")
        assert "start_workflow_run" not in {t.name for t in provider.requests[-1].tools}
    await engine.aclose()


def test_the_workflow_agents_must_exist_when_the_agent_is_saved(db_path: Path, workspace: Path) -> None:
    engine, _, _ = engine_over(db_path, workspace)
    with pytest.raises(Exception, match=r"multiagent.workflow_agents\[0\]: no agent with id 'agent_gone'"):
        engine.agents.create(name="lead", model="scripted",
                             multiagent={"workflow_runs": True, "workflow_agents": [{"id": "agent_gone"}]})  # fmt: skip
    engine.close()


def test_templates_render_strings_as_they_are_and_other_values_as_json() -> None:
    values = TemplateValues(
        inputs={"name": "tides", "cfg": {"depth": [3, 4]}},
        outputs={"a": "text out", "b": [{"k": 1}, "two"]},
        item={"file": "x.py"},
        has_item=True,
    )
    template = (
        "{{ inputs.name }}|{{inputs.cfg}}|{{inputs.cfg.depth.1}}|{{steps.a.output}}|{{steps.b.outputs}}|{{item.file}}"
    )
    assert [r.text for r in parse_refs(template)][:2] == ["inputs.name", "inputs.cfg"]
    assert render(template, values) == 'tides|{"depth": [3, 4]}|4|text out|[{"k": 1}, "two"]|x.py'
    with pytest.raises(TemplateError, match=r"inputs.cfg has no 'width' \(it is an object with depth\)"):
        render("{{inputs.cfg.width}}", values)
    with pytest.raises(TemplateError, match=r"steps.b.outputs has no '5' \(it is a list of 2\)"):
        render("{{steps.b.outputs.5}}", values)
