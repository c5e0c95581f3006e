"""Outcomes on the scripted provider: the revision loop, its verdicts, its events, its budget and interrupts."""

from __future__ import annotations

import asyncio
import time
from decimal import Decimal
from pathlib import Path

import pytest

from agentcell import (
    ConfigurationError,
    CustomTool,
    CustomToolResult,
    Engine,
    InvalidInputError,
    ScriptedDelay,
    ScriptedResponse,
    ScriptedText,
    ScriptedToolCall,
)
from agentcell import events as ev
from agentcell.engine.outcomes import VERDICT_TOOL, OutcomeSpec, parse_verdict
from agentcell.providers.base import ModelResponse, TextPart
from agentcell.usage import flat_pricing

from ..conftest import event_seen
from .conftest import engine_over, prompt_text, verdict


def _work(text: str) -> ScriptedResponse:
    return ScriptedResponse(steps=[ScriptedText(text=text)])


def _outcome_events(session_events: list[ev.Event]) -> list[ev.Outcome]:
    return [e.outcome for e in session_events if isinstance(e, ev.SessionOutcomeUpdated)]


async def test_satisfied_at_revision_zero(db_path: Path, workspace: Path) -> None:
    script = [_work("Here is the haiku: old pond / frog leaps / splash"), verdict("satisfied", "Three lines, a frog.")]
    engine, provider, _ = engine_over(db_path, workspace, script)
    session = engine.sessions.create(agent=engine.agents.create(name="poet", model="scripted").id)

    result = await session.define_outcome("A haiku about a frog", rubric="Three lines; mentions a frog.")

    assert result.stop_reason == ev.EndTurn()
    outcome = result.outcome
    assert outcome is not None and outcome == session.outcome
    assert (outcome.status, outcome.iteration, outcome.explanation) == ("satisfied", 0, "Three lines, a frog.")
    assert outcome.completed_at is not None
    types = [e.type for e in result.events]
    assert types[:4] == ["user.define_outcome", "session.outcome_updated", "session.status_running",
                         "session.outcome_updated"]  # fmt: skip
    assert [o.status for o in _outcome_events(result.events)] == ["pending", "running", "evaluating", "satisfied"]
    assert all(o.completed_at is None for o in _outcome_events(result.events)[:-1])
    start = next(e for e in result.events if isinstance(e, ev.SpanOutcomeEvaluationStart))
    end = next(e for e in result.events if isinstance(e, ev.SpanOutcomeEvaluationEnd))
    assert (start.iteration, end.iteration, end.result) == (0, 0, "satisfied")
    assert end.outcome_evaluation_start_id == start.id and end.outcome_id == outcome.outcome_id
    assert types.index("span.outcome_evaluation_start") < types.index("span.outcome_evaluation_end")

    work, grading = provider.requests
    assert "A haiku about a frog" in prompt_text(work) and "mentions a frog" in prompt_text(work)
    assert grading.settings.tool_choice == "submit_verdict" and grading.tools == [VERDICT_TOOL]
    graded = prompt_text(grading)
    assert "Three lines; mentions a frog." in graded and "old pond / frog leaps" in graded
    # The grader's request is billed like the agent's: its span is inside the evaluation, its usage in both.
    spans = [e for e in result.events if isinstance(e, ev.SpanModelRequestEnd)]
    assert len(spans) == 2 and end.usage == spans[1].model_usage and end.usage.list_cost > 0
    assert session.usage.list_cost == spans[0].model_usage.list_cost + spans[1].model_usage.list_cost
    assert result.text == "Here is the haiku: old pond / frog leaps / splash"  # the verdict is no agent message
    await engine.aclose()
    assert Engine(db_path).sessions.get(session.id).outcome == outcome  # the state is in the log


async def test_satisfied_at_revision_two_after_feedback(db_path: Path, workspace: Path) -> None:
    script = [
        _work("draft one"),
        verdict("needs_revision", "It lacks a title."),
        _work("draft two, titled"),
        verdict("needs_revision", "It lacks a date."),
        _work("draft three, titled and dated"),
        verdict("satisfied", "Title and date present."),
    ]
    engine, provider, _ = engine_over(db_path, workspace, script)
    session = engine.sessions.create(agent=engine.agents.create(name="writer", model="scripted").id)

    result = await session.define_outcome("A memo", rubric="Has a title and a date.", max_iterations=3)

    assert result.outcome is not None
    assert (result.outcome.status, result.outcome.iteration) == ("satisfied", 2)
    ends = [e for e in result.events if isinstance(e, ev.SpanOutcomeEvaluationEnd)]
    assert [(e.iteration, e.result) for e in ends] == [(0, "needs_revision"), (1, "needs_revision"), (2, "satisfied")]
    statuses = [(o.status, o.iteration) for o in _outcome_events(result.events)]
    # needs_revision is a verdict, not a status (seed 002): after it the outcome is running again.
    assert statuses[:6] == [("pending", 0), ("running", 0), ("evaluating", 0), ("running", 1),
                            ("evaluating", 1), ("running", 2)]  # fmt: skip
    assert all(status != "needs_revision" for status, _ in statuses)
    # The grader's explanation reaches the agent before it revises, and the grader sees only the new draft.
    revision_request = provider.requests[2]
    assert "It lacks a title." in prompt_text(revision_request)
    feedback = [e for e in result.events if isinstance(e, ev.SystemMessage)]
    assert len(feedback) == 2 and "It lacks a date." in feedback[1].content[0].text
    last_grading = prompt_text(provider.requests[5])
    assert "draft three, titled and dated" in last_grading and "draft one" not in last_grading
    await engine.aclose()


async def test_max_iterations_reached_ends_without_another_cycle(db_path: Path, workspace: Path) -> None:
    script = [_work("v1"), verdict("needs_revision", "Too short."), _work("v2"), verdict("needs_revision", "Still.")]
    engine, provider, _ = engine_over(db_path, workspace, script)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)

    result = await session.define_outcome("An essay", rubric="At least 500 words.", max_iterations=2)

    assert result.outcome is not None
    assert (result.outcome.status, result.outcome.iteration) == ("max_iterations_reached", 1)
    assert result.outcome.explanation == "Still." and result.outcome.completed_at is not None
    ends = [e for e in result.events if isinstance(e, ev.SpanOutcomeEvaluationEnd)]
    assert [e.result for e in ends] == ["needs_revision", "max_iterations_reached"]
    assert len(provider.requests) == 4 and result.stop_reason == ev.EndTurn()
    await engine.aclose()


async def test_failed_is_terminal_at_once(db_path: Path, workspace: Path) -> None:
    script = [_work("I cannot reach the server."), verdict("failed", "The data source does not exist.")]
    engine, provider, _ = engine_over(db_path, workspace, script)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)

    result = await session.define_outcome("Fetch the report", rubric="The report's numbers.", max_iterations=5)

    assert result.outcome is not None
    assert (result.outcome.status, result.outcome.explanation) == ("failed", "The data source does not exist.")
    assert len(provider.requests) == 2  # no revision after a failed verdict
    await engine.aclose()


async def test_interrupted_while_evaluating(db_path: Path, workspace: Path) -> None:
    script = [_work("done"), ScriptedResponse(steps=[ScriptedDelay(seconds=30)])]
    engine, _, _ = engine_over(db_path, workspace, script)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    grading = event_seen(session, "span.outcome_evaluation_start")

    task = asyncio.create_task(session.define_outcome("x", rubric="y"))
    await grading.wait()
    assert session.outcome is not None and session.outcome.status == "evaluating"
    started = time.perf_counter()
    session.interrupt()
    result = await task

    assert time.perf_counter() - started < 1.0
    assert result.stop_reason == ev.Interrupted()
    end = next(e for e in result.events if isinstance(e, ev.SpanOutcomeEvaluationEnd))
    assert end.result == "interrupted"
    outcome = session.outcome
    assert outcome is not None and outcome.status == "interrupted" and outcome.completed_at is not None
    assert "user.interrupt" in [e.type for e in result.events]
    await engine.aclose()


async def test_the_grader_is_held_to_the_budget(db_path: Path, workspace: Path) -> None:
    # Output at $15/M, input free: the agent's request (16 tokens of room) fits $0.01; the grader's
    # (1,024 tokens of room for the verdict, $0.015) does not.
    engine, provider, _ = engine_over(db_path, workspace, [_work("ok")], pricing=flat_pricing(0, 15))
    agent = engine.agents.create(name="a", model={"id": "scripted", "max_tokens": 16})
    session = engine.sessions.create(agent=agent.id, budget="0.01")

    result = await session.define_outcome("x", rubric="y")

    assert result.stop_reason == ev.BudgetReached()
    assert len(provider.requests) == 1  # the grader's request was never sent
    assert result.outcome is not None and result.outcome.status == "failed"
    assert "budget" in (result.outcome.explanation or "")
    assert session.usage.list_cost <= Decimal("0.01")
    await engine.aclose()


async def test_an_outcome_paused_for_a_custom_tool_resumes_with_its_answer(db_path: Path, workspace: Path) -> None:
    script = [
        ScriptedResponse(steps=[ScriptedToolCall(name="ask_user", input={"q": "which city?"})]),
        _work("The forecast for Oslo: sun."),
        verdict("satisfied", "Names the city."),
    ]
    engine, provider, _ = engine_over(db_path, workspace, script)
    agent = engine.agents.create(name="a", model="scripted", tools=[CustomTool(name="ask_user")])
    session = engine.sessions.create(agent=agent.id)

    paused = await session.define_outcome("A forecast", rubric="Names a city.")
    assert isinstance(paused.stop_reason, ev.RequiresAction)
    assert session.outcome is not None and session.outcome.status == "running"
    use = next(e for e in paused.events if isinstance(e, ev.AgentCustomToolUse))
    resumed = await session.ask(CustomToolResult(custom_tool_use_id=use.id, content="Oslo"))

    assert resumed.outcome is not None and resumed.outcome.status == "satisfied"
    assert "The forecast for Oslo: sun." in prompt_text(provider.requests[2])
    await engine.aclose()


async def test_a_rubric_file_is_read_from_the_workspace(db_path: Path, workspace: Path) -> None:
    (workspace / "rubric.md").write_text("- cites two sources\n")
    engine, provider, _ = engine_over(db_path, workspace, [_work("w"), verdict("satisfied", "ok")])
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)

    await session.define_outcome("A summary", rubric=ev.FileRubric(path="rubric.md"))

    assert "- cites two sources" in prompt_text(provider.requests[1])
    assert "rubric.md" in prompt_text(provider.requests[0])  # the agent is told where the rubric is
    with pytest.raises(InvalidInputError, match=r"missing\.md"):
        await session.define_outcome("A summary", rubric=ev.FileRubric(path="missing.md"))
    await engine.aclose()


@pytest.mark.parametrize(
    ("spec", "error", "message"),
    [
        (OutcomeSpec("  ", "r"), InvalidInputError, "description"),
        (OutcomeSpec("d", ""), InvalidInputError, "rubric"),
        (OutcomeSpec("d", "r", max_iterations=21), InvalidInputError, "max_iterations"),
        (OutcomeSpec("d", "r", grader_model="nosuch:model"), ConfigurationError, "no provider serves"),
    ],
)
async def test_invalid_outcomes_are_refused_before_anything_is_stored(
    db_path: Path, workspace: Path, spec: OutcomeSpec, error: type[Exception], message: str
) -> None:
    engine, _, _ = engine_over(db_path, workspace)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    with pytest.raises(error, match=message):
        await session.ask(spec)
    assert session.events() == []
    await engine.aclose()


def test_a_verdict_in_text_is_read_and_a_missing_one_fails() -> None:
    as_text = ModelResponse(content=[TextPart(text='{"result": "needs_revision", "explanation": "add a chart"}')],
                            stop_reason="end_turn")  # fmt: skip
    assert parse_verdict(as_text).result == "needs_revision"
    rambling = ModelResponse(content=[TextPart(text="Looks fine to me!")], stop_reason="end_turn")
    missing = parse_verdict(rambling)
    assert missing.result == "failed" and "no valid verdict" in missing.explanation
    assert "Looks fine" in missing.explanation


async def test_a_new_outcome_supersedes_an_unfinished_one(db_path: Path, workspace: Path) -> None:
    script = [ScriptedResponse(steps=[ScriptedToolCall(name="ask_user")]), _work("w"), verdict("satisfied", "ok")]
    engine, _, _ = engine_over(db_path, workspace, script)
    agent = engine.agents.create(name="a", model="scripted", tools=[CustomTool(name="ask_user")])
    session = engine.sessions.create(agent=agent.id)
    first = await session.define_outcome("first", rubric="r")
    assert first.outcome is not None and first.outcome.status == "running"
    second = await session.define_outcome("second", rubric="r")
    states = _outcome_events(second.events)
    assert (states[0].outcome_id, states[0].status) == (first.outcome.outcome_id, "interrupted")
    assert second.outcome is not None and second.outcome.status == "satisfied"
    assert second.outcome.outcome_id != first.outcome.outcome_id
    # The old outcome ends before the new one is defined, so the log never has two running at once.
    assert isinstance(second.events[0], ev.SessionOutcomeUpdated) and isinstance(second.events[1], ev.UserDefineOutcome)
    await engine.aclose()


async def test_a_message_instead_of_the_awaited_answer_ends_a_paused_outcome(db_path: Path, workspace: Path) -> None:
    script = [ScriptedResponse(steps=[ScriptedToolCall(name="ask_user")]), _work("hello")]
    engine, _, _ = engine_over(db_path, workspace, script)
    agent = engine.agents.create(name="a", model="scripted", tools=[CustomTool(name="ask_user")])
    session = engine.sessions.create(agent=agent.id)
    await session.define_outcome("x", rubric="y")
    chat = await session.ask("never mind, just say hello")
    assert chat.text == "hello"
    outcome = session.outcome
    assert outcome is not None and outcome.status == "interrupted" and outcome.completed_at is not None
    assert "a message came instead of an answer" in (outcome.explanation or "")
    assert not any(isinstance(e, ev.SpanOutcomeEvaluationStart) for e in chat.events)  # no grading of a chat
    await engine.aclose()
