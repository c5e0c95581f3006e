"""Workflow runs over scripted agents: the plan of issue 20 end to end, concurrency measured by overlap,
failing items under both on_error values, output schemas, max_turns, and an interrupt."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agentcell import Engine, ScriptedError, ScriptedResponse, ScriptedToolCall, WorkflowRun
from agentcell import events as ev
from agentcell.engine.workflows import DEFAULT_CONCURRENCY
from agentcell.providers.base import ModelRequest, ToolResultPart
from agentcell.records import workflow_events as wf
from agentcell.tools import ToolRegistry, tool

from ._workflows import by_system, last_text, review_plan, say, task_of, workflow_engine


def _review_script() -> object:
    return by_system(
        drafter=lambda r: say("DRAFT of " + task_of(r).removeprefix("Draft ")),
        critic=lambda r: say("review for " + task_of(r).split(":")[0].removeprefix("Review the draft for ")),
        reviser=lambda r: say("REVISED with " + str(task_of(r).count("review for")) + " reviews"),
    )


async def test_the_three_step_plan_runs_each_item_in_a_thread_and_reports_the_outcome_apart(
    db_path: Path, workspace: Path
) -> None:
    engine, provider, session, agents = workflow_engine(db_path, workspace, _review_script())  # type: ignore[arg-type]

    run = await session.run_workflow(review_plan(agents))

    assert isinstance(run, WorkflowRun) and run.id.startswith("wfrun_")
    assert run.status == "completed" and run.error is None
    assert [(s.id, s.status) for s in run.steps] == [("draft", "completed"), ("reviews", "completed"),
                                                    ("final", "completed")]  # fmt: skip
    assert run.step("draft").output == "DRAFT of tides"
    # The for_each items ran in the order listed, each on the draft (a template of a dependency's output).
    assert run.step("reviews").output == ["review for style", "review for facts", "review for tone"]
    critic_tasks = [task_of(r) for r in provider.requests if r.system == "critic: you review"]
    assert sorted(critic_tasks) == sorted(
        f"Review the draft for {i}:\nDRAFT of tides" for i in ("style", "facts", "tone")
    )
    # The last step read the list of outputs as JSON, and its output is the run's.
    reviser_task = next(task_of(r) for r in provider.requests if r.system == "reviser: you revise")
    assert '["review for style", "review for facts", "review for tone"]' in reviser_task
    assert run.output == run.step("final").output == "REVISED with 3 reviews"
    # Completion is not success: the outcome's result is reported apart, on the step and on the run.
    assert run.outcome is not None and run.outcome.status == "satisfied"
    assert run.step("final").outcome == run.outcome and run.step("draft").outcome is None

    # Every item is a session thread of its own: its own events, history and usage.
    events = session.events()
    created = [e for e in events if isinstance(e, ev.SessionThreadCreated)]
    started = [e for e in events if isinstance(e, wf.WorkflowRunStepStarted)]
    assert [c.session_thread_id for c in created] == [s.session_thread_id for s in started]
    assert len({c.session_thread_id for c in created}) == 5
    assert [(c.agent_name, c.agent_version) for c in created] == [("drafter", 1), ("critic", None), ("critic", None),
                                                                  ("critic", None), ("reviser", 1)]  # fmt: skip
    assert created[1].inline_agent is not None and created[1].inline_agent["system"] == "critic: you review"
    for item in (i for s in run.steps for i in s.items):
        mine = [e for e in events if e.thread_id == item.thread_id]
        assert mine[-1].type == "agent.thread_message_sent" and mine[-2].type == "session.thread_status_idle"
        spent = sum((e.model_usage for e in mine if isinstance(e, ev.SpanModelRequestEnd)), start=ev.Usage())
        assert item.usage == spent and item.usage.output_tokens > 0
        assert session.history(item.thread_id).messages()[0].role == "user"
    # The outcome was graded in the last step's thread, not the primary one.
    graded = [e for e in events if isinstance(e, ev.SpanOutcomeEvaluationEnd)]
    assert [e.thread_id for e in graded] == [run.step("final").items[0].thread_id]
    assert session.outcome is None
    # The run's usage is its items', and it is the session's too.
    assert run.usage == sum((s.usage for s in run.steps), start=ev.Usage())
    assert session.usage.list_cost == run.usage.list_cost
    assert (run.ran, run.reused) == (5, 0)

    # The run reads the same from the log after a reopen; the agent's conversation holds its output only.
    await engine.aclose()
    with Engine(db_path, providers={"scripted": provider}) as again:
        reopened = again.sessions.get(session.id)
        (folded,) = reopened.workflow_runs
        assert (folded.id, folded.status, folded.output) == (run.id, "completed", run.output)
        assert folded.step("reviews").output == run.step("reviews").output
        primary = reopened.history().messages()
        assert len(primary) == 1 and "REVISED with 3 reviews" in primary[0].content[0].text  # type: ignore[union-attr]
        assert "review for style" not in json.dumps([m.model_dump() for m in primary])


def _meeting(registry: ToolRegistry, parties: int) -> list[int]:
    """A tool that returns only once ``parties`` calls are inside it at the same time (then lets the next
    group meet); returns the list of how many were inside at each entry."""
    barrier = asyncio.Barrier(parties)
    inside: list[int] = []
    count = 0

    @tool(registry=registry, parallel_safe=True)
    async def meet(name: str) -> str:
        """Meet the other items."""
        nonlocal count
        count += 1
        inside.append(count)
        try:
            await asyncio.wait_for(barrier.wait(), 10)
        except TimeoutError:
            return f"{name} waited alone"
        finally:
            count -= 1
        return f"{name} met"

    return inside


def _meeting_script(request: ModelRequest) -> ScriptedResponse:
    results = [b.text for m in request.messages for p in m.content if isinstance(p, ToolResultPart) for b in p.content]
    if not results:
        return ScriptedResponse(steps=[ScriptedToolCall(name="meet", input={"name": task_of(request)})])
    return say(results[0])


@pytest.mark.parametrize("limit", [None, 8])
async def test_a_for_each_of_eight_runs_its_items_together_up_to_the_limit(
    db_path: Path, workspace: Path, limit: int | None
) -> None:
    engine, _, session, _ = workflow_engine(db_path, workspace, by_system(worker=_meeting_script))
    parties = limit or DEFAULT_CONCURRENCY
    inside = _meeting(engine.tools, parties)  # type: ignore[arg-type]
    plan = {"name": "fan-out", "max_concurrency": limit,
            "steps": [{"id": "each", "agent": {"inline": {"name": "w", "system": "worker: meet"}},
                       "for_each": list(range(8)), "prompt": "item {{item}}"}]}  # fmt: skip

    run = await session.run_workflow(plan)

    assert run.status == "completed"
    # Each group of `parties` items was inside the tool at the same time (none waited alone), and never more.
    assert run.output == [f"item {i} met" for i in range(8)]
    assert max(inside) == parties
    running: list[tuple[float, int]] = []
    for event in session.events():
        if isinstance(event, ev.SessionThreadStatusRunning | ev.SessionThreadStatusIdle):
            running.append((event.created_at.timestamp(), 1 if event.type.endswith("running") else -1))
    level = peak = 0
    for _, change in sorted(running):
        level += change
        peak = max(peak, level)
    assert peak == parties
    await engine.aclose()


def _flaky(fail_item: str) -> object:
    def critic(request: ModelRequest) -> ScriptedResponse:
        if fail_item in task_of(request):
            return ScriptedResponse(steps=[ScriptedError(message="the critic broke", retryable=False, status_code=400)])
        return say("ok " + task_of(request).split(":")[0])

    return by_system(
        drafter=lambda r: say("DRAFT"),
        critic=critic,
        reviser=lambda r: say("REVISED from " + task_of(r)),
    )


async def test_a_failing_item_fails_the_run_under_on_error_fail(db_path: Path, workspace: Path) -> None:
    engine, provider, session, agents = workflow_engine(db_path, workspace, _flaky("facts"))  # type: ignore[arg-type]
    plan = review_plan(agents)
    plan["max_concurrency"] = 1  # the items after the failing one have not started when it fails

    run = await session.run_workflow(plan)

    assert run.status == "failed" and run.failed_step == "reviews"
    assert run.error is not None and "step 'reviews' item 1" in run.error and "the critic broke" in run.error
    reviews = run.step("reviews")
    assert reviews.status == "failed"
    assert [(i.index, i.status) for i in reviews.items] == [(0, "completed"), (1, "failed")]  # item 2 never started
    assert run.step("final").status == "pending" and run.output is None
    assert not any(r.system == "reviser: you revise" for r in provider.requests)
    failed = next(e for e in session.events() if isinstance(e, wf.WorkflowRunStepFailed))
    assert (failed.item, failed.stop_reason, failed.continued) == (1, "error", False)
    assert session.last_turn is not None and isinstance(session.last_turn.stop_reason, ev.ErrorStop)
    await engine.aclose()


async def test_a_failing_item_is_an_explicit_error_value_under_on_error_continue(
    db_path: Path, workspace: Path
) -> None:
    engine, provider, session, agents = workflow_engine(db_path, workspace, _flaky("facts"))  # type: ignore[arg-type]
    plan = review_plan(agents)
    plan["steps"][1]["on_error"] = "continue"

    run = await session.run_workflow(plan)

    assert run.status == "completed"
    error = {"error": "the critic broke", "step": "reviews", "item": 1}
    assert run.step("reviews").output == ["ok Review the draft for style", error, "ok Review the draft for tone"]
    assert run.step("reviews").items[1].continued
    # The next step got the error value in its prompt, never a silent gap.
    reviser_task = next(task_of(r) for r in provider.requests if r.system == "reviser: you revise")
    assert json.dumps(error) in reviser_task
    await engine.aclose()


async def test_an_output_schema_makes_the_output_json_and_a_bad_answer_gets_one_more_turn(
    db_path: Path, workspace: Path
) -> None:
    answers = iter(['Here: {"files": ["a.py"]}', '{"files": "not a list"}', '{"files": ["a.py", "b.py"]}'])

    def lister(request: ModelRequest) -> ScriptedResponse:
        return say(next(answers))

    engine, provider, session, _ = workflow_engine(
        db_path, workspace, by_system(lister=lister, summary=lambda r: say("summary of " + task_of(r).split(": ")[1]))
    )
    schema = {"type": "object", "properties": {"files": {"type": "array", "items": {"type": "string"}}},
              "required": ["files"]}  # fmt: skip
    plan = {
        "name": "files",
        "steps": [
            {"id": "list", "agent": {"inline": {"name": "lister", "system": "lister: list"}}, "prompt": "List files",
             "output_schema": schema},
            {"id": "sum", "agent": {"inline": {"name": "s", "system": "summary: sum"}}, "depends_on": ["list"],
             "for_each": "{{steps.list.output.files}}", "prompt": "Summarise: {{item}}"},
        ],
    }  # fmt: skip

    first = await session.run_workflow(plan)
    # The JSON inside prose was taken as the value, and a for_each ran over a field of it.
    assert first.step("list").output == {"files": ["a.py"]}
    assert first.output == ["summary of a.py"]
    lister_task = task_of(next(r for r in provider.requests if r.system == "lister: list"))
    assert (
        lister_task.startswith("List files\n\nAnswer with only a JSON value") and '"required": ["files"]' in lister_task
    )

    second = await session.run_workflow(plan, resume=False)
    # An answer the schema refuses is sent back once with what is wrong; the second answer is the output.
    assert second.status == "completed" and second.step("list").output == {"files": ["a.py", "b.py"]}
    retry = [r for r in provider.requests if r.system == "lister: list"][-1]
    assert "does not match the step's output schema at files" in last_text(retry)
    assert second.output == ["summary of a.py", "summary of b.py"]
    await engine.aclose()


async def test_max_turns_bounds_each_item(db_path: Path, workspace: Path) -> None:
    def looper(request: ModelRequest) -> ScriptedResponse:
        return ScriptedResponse(steps=[ScriptedToolCall(name="read_file", input={"path": "missing.txt"})])

    engine, provider, session, _ = workflow_engine(db_path, workspace, by_system(looper=looper))
    plan = {"name": "loop", "steps": [{"id": "spin", "agent": {"inline": {"name": "l", "system": "looper: go"}},
                                      "prompt": "go", "max_turns": 2}]}  # fmt: skip
    run = await session.run_workflow(plan)
    assert run.status == "failed" and "reached max_turns (2)" in (run.error or "")
    assert len(provider.requests) == 2
    await engine.aclose()


async def test_interrupting_a_run_stops_its_items_and_logs_it_interrupted(db_path: Path, workspace: Path) -> None:
    from agentcell import ScriptedDelay

    engine, _, session, _ = workflow_engine(
        db_path, workspace, by_system(slow=lambda r: ScriptedResponse(steps=[ScriptedDelay(seconds=30)]))
    )
    plan = {"name": "slow", "steps": [{"id": "wait", "agent": {"inline": {"name": "s", "system": "slow: wait"}},
                                       "for_each": [1, 2], "prompt": "{{item}}"}]}  # fmt: skip
    both = asyncio.Event()
    seen: list[str] = []

    def listener(item: object) -> None:
        if getattr(item, "type", None) == "span.model_request_start":
            seen.append("x")
            if len(seen) == 2:
                both.set()

    session.subscribe(listener)
    task = asyncio.create_task(session.run_workflow(plan))
    await both.wait()
    session.interrupt()
    run = await task
    assert run.status == "interrupted"
    assert [i.status for i in run.step("wait").items] == ["failed", "failed"]
    idles = [e for e in session.events() if isinstance(e, ev.SessionThreadStatusIdle)]
    assert [e.stop_reason for e in idles] == [ev.Interrupted(), ev.Interrupted()]
    assert session.last_turn is not None and session.last_turn.stop_reason == ev.Interrupted()
    await engine.aclose()


async def test_the_run_waits_for_its_dependencies(db_path: Path, workspace: Path) -> None:
    order: list[str] = []

    def record(request: ModelRequest) -> ScriptedResponse:
        order.append(task_of(request))
        return say(task_of(request).upper())

    engine, _, session, _ = workflow_engine(db_path, workspace, by_system(w=record))
    agent = {"inline": {"name": "w", "system": "w: work"}}
    plan = {"name": "diamond", "steps": [
        {"id": "d", "agent": agent, "prompt": "d {{steps.b.output}} {{steps.c.output}}", "depends_on": ["b", "c"]},
        {"id": "b", "agent": agent, "prompt": "b {{steps.a.output}}", "depends_on": ["a"]},
        {"id": "c", "agent": agent, "prompt": "c {{steps.a.output}}", "depends_on": ["a"]},
        {"id": "a", "agent": agent, "prompt": "a {{inputs.x}}"},
    ], "inputs": {"x": "one"}}  # fmt: skip
    run = await session.run_workflow(plan, inputs={"x": "two"})
    assert order[0] == "a two" and sorted(order[1:3]) == ["b A TWO", "c A TWO"] and order[3] == "d B A TWO C A TWO"
    assert [s.info.depth for s in run.steps] == [2, 1, 1, 0]
    assert run.output == "A TWO"  # the plan's last step is a
    await engine.aclose()
