"""A real outcome loop on the embedded model (SmolLM2-135M in llama.cpp): the agent writes, and the grader,
forced to call submit_verdict, answers with a verdict its JSON schema allows (a llama.cpp grammar)."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from agentcell import Engine
from agentcell import events as ev
from agentcell.engine.outcomes import VERDICT_TOOL


@pytest.mark.slow
async def test_a_short_outcome_loop_on_the_local_model(db_path: Path) -> None:
    engine = Engine(db_path)
    agent = engine.agents.create(name="greeter", model={"id": "local:smollm2", "max_tokens": 32, "temperature": 0})
    session = engine.sessions.create(agent=agent.id)

    result = await session.define_outcome(
        "Write one sentence that greets the user, whose name is Ada.",
        rubric="The sentence greets Ada by name.",
        max_iterations=2,
    )

    outcome = result.outcome
    assert outcome is not None and outcome.completed_at is not None
    assert outcome.status in ("satisfied", "failed", "max_iterations_reached")
    starts = [e for e in result.events if isinstance(e, ev.SpanOutcomeEvaluationStart)]
    ends = [e for e in result.events if isinstance(e, ev.SpanOutcomeEvaluationEnd)]
    assert 1 <= len(ends) == len(starts) <= 2 and [e.iteration for e in ends] == list(range(len(ends)))
    for end in ends:
        # A verdict from the forced call itself, never the fallback for a reply that was not one.
        jsonschema.validate({"result": end.result if end.result != "max_iterations_reached" else "needs_revision",
                             "explanation": end.explanation}, VERDICT_TOOL.input_schema)  # fmt: skip
        assert "no valid verdict" not in end.explanation and end.explanation.strip()
        assert end.usage.input_tokens > 0 and end.usage.output_tokens > 0  # real tokens, counted
    assert ends[-1].result == outcome.status and ends[-1].explanation == outcome.explanation
    # Every cycle's work is a real agent message; the grader's requests show in the session's usage.
    assert len([e for e in result.events if isinstance(e, ev.AgentMessage)]) == len(ends)
    spans = [e for e in result.events if isinstance(e, ev.SpanModelRequestEnd)]
    assert len(spans) == 2 * len(ends) and not any(s.is_error for s in spans)
    assert session.usage.output_tokens == sum(s.model_usage.output_tokens for s in spans)
    await engine.aclose()
