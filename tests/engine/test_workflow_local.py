"""A real two-step run on the embedded model (SmolLM2-135M in llama.cpp): each step a thread of real
requests, the second step's prompt rendered from the first step's real output."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcell import Engine
from agentcell import events as ev
from agentcell.records import workflow_events as wf


@pytest.mark.slow
async def test_a_two_step_run_on_the_local_model(db_path: Path) -> None:
    engine = Engine(db_path)
    model = {"id": "local:smollm2", "max_tokens": 24, "temperature": 0}
    lead = engine.agents.create(
        name="lead",
        model=model,
        multiagent={"spawn_threads": False, "workflow_runs": True, "workflow_inline_agents": True},
    )
    session = engine.sessions.create(agent=lead.id)
    plan = {
        "name": "colour",
        "steps": [
            {"id": "name", "agent": {"inline": {"name": "namer"}}, "prompt": "Name one colour. Answer with one word."},
            {"id": "use", "agent": {"inline": {"name": "writer"}}, "depends_on": ["name"],
             "prompt": "Write one short sentence about the colour {{steps.name.output}}."},
        ],
    }  # fmt: skip

    run = await session.run_workflow(plan)

    assert run.status == "completed", run.error
    named, used = run.step("name").output, run.step("use").output
    assert isinstance(named, str) and named.strip() and isinstance(used, str) and used.strip()
    events = session.events()
    sent = [e for e in events if isinstance(e, ev.AgentThreadMessageReceived)]
    assert sent[1].content[0].text == f"Write one short sentence about the colour {named}."  # type: ignore[union-attr]
    for step in run.steps:
        (item,) = step.items
        spans = [e for e in events if isinstance(e, ev.SpanModelRequestEnd) and e.thread_id == item.thread_id]
        assert len(spans) == 1 and not spans[0].is_error
        assert item.usage.input_tokens > 0 and item.usage.output_tokens > 0  # real tokens, counted
    assert session.usage.output_tokens == run.usage.output_tokens
    assert [e.type for e in events if isinstance(e, wf.WorkflowRunCompleted)] == ["workflow_run.completed"]
    await engine.aclose()
