"""A run started by the coordinating agent itself, through its start_workflow_run tool."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentcell import ScriptedResponse, ScriptedToolCall
from agentcell import events as ev
from agentcell.providers.base import ModelRequest, ToolResultPart
from agentcell.records import workflow_events as wf

from ._workflows import by_system, review_plan, say, task_of, workflow_engine
from .conftest import text_of


def _results(request: ModelRequest) -> list[tuple[str, bool]]:
    last = request.messages[-1]
    return [("".join(b.text for b in p.content if b.type == "text"), p.is_error)
            for p in last.content if isinstance(p, ToolResultPart)]  # fmt: skip


def _lead(plans: list[Any]) -> Any:
    """The coordinator: start each plan in turn, then say what the last run returned."""

    def lead(request: ModelRequest) -> ScriptedResponse:
        results = _results(request)
        if results and not plans:
            text, is_error = results[0]
            return say(("FAILED " if is_error else "GOT ") + text)
        if results:
            text, is_error = results[0]
            if not is_error:
                return say("GOT " + text)
        return ScriptedResponse(steps=[ScriptedToolCall(name="start_workflow_run", input={"plan": plans.pop(0)})])

    return lead


def _workers() -> dict[str, Any]:
    return {
        "drafter": lambda r: say("DRAFT of " + task_of(r).removeprefix("Draft ")),
        "critic": lambda r: say("review for " + task_of(r).split(":")[0]),
        "reviser": lambda r: say("REVISED"),
    }


async def test_the_agent_starts_a_run_and_reads_its_result_as_the_tools(db_path: Path, workspace: Path) -> None:
    plans: list[Any] = []
    engine, provider, session, agents = workflow_engine(db_path, workspace, by_system(lead=_lead(plans), **_workers()))
    plans.append(review_plan(agents))

    result = await session.ask("review a draft about tides")

    assert result.stop_reason == ev.EndTurn()
    first = provider.requests[0]
    offered = {t.name: t for t in first.tools}
    assert "start_workflow_run" in offered and "spawn_thread" not in offered
    description = offered["start_workflow_run"].description
    assert f"- {agents['drafter']} (drafter)" in description and "define its agent inline" in description
    use = next(e for e in result.events if isinstance(e, ev.AgentToolUse) and e.name == "start_workflow_run")
    answer = next(e for e in result.events if isinstance(e, ev.AgentToolResult) and e.tool_use_id == use.id)
    summary = json.loads(text_of(answer))
    assert not answer.is_error and summary["status"] == "completed" and summary["output"] == "REVISED"
    assert summary["steps"] == [{"id": "draft", "status": "completed"}, {"id": "reviews", "status": "completed"},
                                {"id": "final", "status": "completed"}]  # fmt: skip
    assert summary["outcome"]["status"] == "satisfied"
    # The coordinator's context holds the run's result, not what its steps produced on the way.
    assert "DRAFT of" not in text_of(answer) and "review for" not in text_of(answer)
    assert result.text.startswith("GOT ") and '"output": "REVISED"' in result.text
    # The steps are threads of the coordinator, nested under its tool call; the run's events carry its id.
    created = [e for e in result.events if isinstance(e, ev.SessionThreadCreated)]
    assert len(created) == 5 and {c.tool_use_id for c in created} == {use.id}
    assert {c.thread_id for c in created} == {None}
    started = next(e for e in result.events if isinstance(e, wf.WorkflowRunStarted))
    assert started.tool_use_id == use.id and started.run_id == summary["run_id"]
    (run,) = session.workflow_runs
    assert run.tool_use_id == use.id and run.output == "REVISED"
    # The tool's result is in the conversation once: no second note of the run in the history.
    history = json.dumps([m.model_dump(mode="json") for m in session.history().messages()])
    assert "The user ran the workflow" not in history
    await engine.aclose()


async def test_a_plan_that_cannot_run_is_an_error_result_naming_the_step(db_path: Path, workspace: Path) -> None:
    plans: list[Any] = []
    engine, _provider, session, agents = workflow_engine(db_path, workspace, by_system(lead=_lead(plans), **_workers()))
    broken = review_plan(agents)
    broken["steps"][2]["depends_on"] = ["draft"]  # final reads the reviews without depending on them
    plans.extend([broken, review_plan(agents)])

    result = await session.ask("go")

    answers = [e for e in result.events if isinstance(e, ev.AgentToolResult)]
    assert answers[0].is_error and answers[0].error_code == "INVALID_INPUT"
    assert text_of(answers[0]).startswith("the plan cannot run: step 'final': its prompt has {{steps.reviews.outputs}}")
    # The agent read the error, fixed the plan, and the second run went through.
    assert not answers[1].is_error and json.loads(text_of(answers[1]))["status"] == "completed"
    assert len(session.workflow_runs) == 1
    await engine.aclose()


async def test_a_failed_run_is_an_error_result_saying_why(db_path: Path, workspace: Path) -> None:
    from agentcell import ScriptedError

    plans: list[Any] = []
    workers = _workers() | {"critic": lambda r: ScriptedResponse(steps=[ScriptedError(message="no", retryable=False)])}
    engine, _, session, agents = workflow_engine(db_path, workspace, by_system(lead=_lead(plans), **workers))
    plans.append(review_plan(agents))

    result = await session.ask("go")

    answer = next(e for e in result.events if isinstance(e, ev.AgentToolResult))
    assert answer.is_error and answer.error_code == "WORKFLOW_FAILED"
    summary = json.loads(text_of(answer))
    assert summary["status"] == "failed" and summary["error"].startswith("step 'reviews' item 0: no")
    assert result.text.startswith("FAILED ")
    await engine.aclose()
