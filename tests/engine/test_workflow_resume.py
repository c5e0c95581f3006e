"""Resuming runs from the journal (the longest unchanged prefix, counted in requests not repeated), and the
budget a run spends: the session's, and a run's own ceiling."""

from __future__ import annotations

import asyncio
import copy
from decimal import Decimal
from pathlib import Path

from agentcell import ScriptedDelay, ScriptedResponse, ScriptedText
from agentcell import events as ev
from agentcell.providers.base import ModelRequest
from agentcell.records import workflow_events as wf
from agentcell.usage import Usage

from ._workflows import by_system, review_plan, say, task_of, workflow_engine


def _script() -> object:
    return by_system(
        drafter=lambda r: say("DRAFT of " + task_of(r).removeprefix("Draft ")),
        critic=lambda r: say("review for " + task_of(r).split(":")[0]),
        reviser=lambda r: say("REVISED: " + task_of(r)[-40:]),
    )


async def test_running_the_same_plan_again_reuses_every_step_and_sends_nothing(db_path: Path, workspace: Path) -> None:
    engine, provider, session, agents = workflow_engine(db_path, workspace, _script())  # type: ignore[arg-type]
    plan = review_plan(agents)
    first = await session.run_workflow(plan)
    sent = len(provider.requests)
    assert first.status == "completed" and sent == 6  # draft, three reviews, the revision and its grading

    again = await session.run_workflow(plan)

    assert len(provider.requests) == sent  # not one request repeated
    assert again.status == "completed" and again.id != first.id
    assert again.output == first.output and again.step("reviews").output == first.step("reviews").output
    assert again.outcome == first.outcome  # the journal keeps the outcome's verdict too
    assert again.reused_steps == ["draft", "reviews", "final"] and (again.ran, again.reused) == (0, 5)
    # The log says which were reused, and from where.
    events = session.events()
    journal = {e.key: e.id for e in events if isinstance(e, wf.WorkflowRunStepCompleted) and e.run_id == first.id}
    reused = [e for e in events if isinstance(e, wf.WorkflowRunStepCompleted) and e.run_id == again.id]
    assert [journal[e.key] for e in reused] == [e.reused_from for e in reused]
    assert all(e.session_thread_id is None and e.usage == Usage() for e in reused)
    assert not any(isinstance(e, wf.WorkflowRunStepStarted) and e.run_id == again.id for e in events)

    # resume=False runs everything afresh.
    fresh = await session.run_workflow(plan, resume=False)
    assert fresh.reused == 0 and len(provider.requests) == 2 * sent
    await engine.aclose()


async def test_an_edit_of_a_later_step_reuses_the_prefix_and_runs_the_rest(db_path: Path, workspace: Path) -> None:
    engine, provider, session, agents = workflow_engine(db_path, workspace, _script())  # type: ignore[arg-type]
    plan = review_plan(agents)
    await session.run_workflow(plan)
    sent = len(provider.requests)

    edited = copy.deepcopy(plan)
    edited["steps"][2]["prompt"] = "Revise, briefly:\n{{steps.reviews.outputs}}"
    run = await session.run_workflow(edited)

    assert run.reused_steps == ["draft", "reviews"] and (run.ran, run.reused) == (1, 4)
    new = provider.requests[sent:]
    assert next(r.system for r in new) == "reviser: you revise" and len(new) == 2  # the revision and its grading
    assert task_of(new[0]).startswith("Produce this outcome: Revise, briefly:")
    await engine.aclose()


async def test_after_a_step_runs_live_the_steps_after_it_run_live_too(db_path: Path, workspace: Path) -> None:
    engine, provider, session, agents = workflow_engine(db_path, workspace, _script())  # type: ignore[arg-type]
    plan = review_plan(agents)
    await session.run_workflow(plan)
    sent = len(provider.requests)

    # An option of the draft changes (a new key for it) but its answer does not: the reviews' rendered
    # prompts, and so their keys, are unchanged, yet they run again, since what they read came from a live
    # run this time.
    edited = copy.deepcopy(plan)
    edited["steps"][0]["max_turns"] = 3
    run = await session.run_workflow(edited)
    assert run.reused_steps == [] and run.ran == 5 and len(provider.requests) == 2 * sent
    assert run.step("reviews").output == [f"review for Review the draft for {i}" for i in ("style", "facts", "tone")]
    await engine.aclose()


async def test_an_interrupted_run_resumes_with_the_items_it_finished(db_path: Path, workspace: Path) -> None:
    blocking = {"on": True}

    def worker(request: ModelRequest) -> ScriptedResponse:
        if "item 2" in task_of(request) and blocking["on"]:
            return ScriptedResponse(steps=[ScriptedDelay(seconds=30)])
        return say("done " + task_of(request))

    engine, provider, session, _ = workflow_engine(
        db_path, workspace, by_system(worker=worker, merger=lambda r: say("merged " + task_of(r)))
    )
    plan = {
        "name": "fan",
        "steps": [
            {"id": "each", "agent": {"inline": {"name": "w", "system": "worker: w"}}, "for_each": [0, 1, 2, 3],
             "prompt": "item {{item}}"},
            {"id": "merge", "agent": {"inline": {"name": "m", "system": "merger: m"}}, "depends_on": ["each"],
             "prompt": "{{steps.each.outputs}}"},
        ],
    }  # fmt: skip
    three_done = asyncio.Event()

    def listener(item: object) -> None:
        done = list(session.events(types=["workflow_run.step_completed"]))
        if isinstance(item, wf.WorkflowRunStepCompleted) and len(done) == 3:
            three_done.set()

    unsubscribe = session.subscribe(listener)
    task = asyncio.create_task(session.run_workflow(plan))
    await three_done.wait()
    unsubscribe()
    session.interrupt()
    interrupted = await task
    assert interrupted.status == "interrupted"
    assert [i.status for i in interrupted.step("each").items] == ["completed", "completed", "failed", "completed"]
    sent = len(provider.requests)

    blocking["on"] = False
    resumed = await session.run_workflow(plan)
    assert resumed.status == "completed"
    assert [i.reused for i in resumed.step("each").items] == [True, True, False, True]
    assert [r.system for r in provider.requests[sent:]] == ["worker: w", "merger: m"]  # 4 items, 1 repeated
    assert resumed.output == "merged " + str(["done item 0", "done item 1", "done item 2", "done item 3"]).replace(
        "'", '"'
    )
    await engine.aclose()


def _costly(text: str) -> ScriptedResponse:
    """A response billed 1,000 input and 1,000 output tokens: $0.018 at $3/$15 per million."""
    return ScriptedResponse(steps=[ScriptedText(text=text)], usage=Usage(input_tokens=1000, output_tokens=1000))


def _chain(length: int) -> dict[str, object]:
    agent = {"inline": {"name": "w", "system": "w: work", "model": "scripted"}}
    steps = [{"id": f"s{i}", "agent": agent, "prompt": f"step {i}", **({"depends_on": [f"s{i - 1}"]} if i else {})}
             for i in range(length)]  # fmt: skip
    return {"name": "chain", "steps": steps}


async def test_a_run_ceiling_stops_the_run_before_it_spends_past_it(db_path: Path, workspace: Path) -> None:
    script = by_system(w=lambda r: _costly("ok"), lead=lambda r: _costly("fine"))
    engine, provider, session, _ = workflow_engine(db_path, workspace, script)
    ceiling = Decimal("0.15")

    run = await session.run_workflow(_chain(12), budget=ceiling)

    assert run.status == "budget_reached" and run.failed_step is not None
    assert run.usage.list_cost is not None and run.usage.list_cost <= ceiling
    ran = [s for s in run.steps if s.status == "completed"]
    assert 1 <= len(ran) < 11 and len(provider.requests) == len(ran)  # the refused request was never sent
    failed = run.step(run.failed_step)
    assert failed.status == "failed" and failed.items[0].error == "the budget cannot cover the step's next request"
    said = [e for e in session.events() if isinstance(e, ev.SessionError) and e.thread_id == failed.items[0].thread_id]
    assert said and said[0].error.message.startswith("the workflow run's budget cannot cover the next request")
    assert "of the run's $0.15 is left" in said[0].error.message
    assert all(s.status == "pending" for s in run.steps[len(ran) + 1 :])
    started = next(e for e in session.events() if isinstance(e, wf.WorkflowRunStarted))
    assert started.budget is not None and started.budget.max_list_cost == ceiling
    assert session.last_turn is not None and session.last_turn.stop_reason == ev.BudgetReached()
    # The ceiling is the run's: the session (which has no budget) goes on spending outside it.
    for _ in range(10):  # more than the ceiling would have let through
        result = await session.ask("and now?")
        assert result.stop_reason == ev.EndTurn() and result.text == "fine"
    await engine.aclose()


async def test_a_run_counts_toward_the_session_budget(db_path: Path, workspace: Path) -> None:
    engine, provider, session, _ = workflow_engine(db_path, workspace, by_system(w=lambda r: _costly("ok")))
    session.update(budget="0.15")
    run = await session.run_workflow(_chain(12))
    assert run.status == "budget_reached"
    assert session.usage.list_cost == run.usage.list_cost and run.usage.list_cost <= Decimal("0.15")  # type: ignore[operator]
    assert len(provider.requests) == len([s for s in run.steps if s.status == "completed"])
    said = [e for e in session.events() if isinstance(e, ev.SessionError)]
    assert said and said[0].error.message.startswith("the budget cannot cover the next request")  # the session's
    await engine.aclose()
