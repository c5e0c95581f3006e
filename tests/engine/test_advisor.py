"""The advisor: consulted through a tool in the primary thread, its answer the result, its usage billed;
combinations the allow-list does not permit are refused when the agent is made."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcell import Engine, InvalidInputError, ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedToolCall
from agentcell import events as ev
from agentcell.engine.advisor import ADVISOR_SYSTEM
from agentcell.usage import flat_pricing

from .conftest import engine_over, prompt_text, text_of


async def test_the_advisor_answers_through_the_tool_and_its_usage_counts(db_path: Path, workspace: Path) -> None:
    script = [
        ScriptedResponse(steps=[ScriptedToolCall(name="consult_advisor", input={"question": "dict or list?"})]),
        ScriptedResponse(steps=[ScriptedText(text="I will use a dict.")]),
    ]
    mentor = ScriptedProvider([ScriptedResponse(steps=[ScriptedText(text="Use a dict: lookups by key.")])],
                              pricing=flat_pricing(15, 75))  # fmt: skip
    engine, provider, _ = engine_over(db_path, workspace, script, advisors={"scripted*": ["mentor*"]})
    engine.providers.register("mentor", mentor)
    agent = engine.agents.create(name="a", model="scripted", advisor="mentor:big")
    session = engine.sessions.create(agent=agent.id)

    result = await session.ask("store users by id")

    answer = next(e for e in result.events if isinstance(e, ev.AgentToolResult))
    assert not answer.is_error and text_of(answer) == "Use a dict: lookups by key."
    assert result.text == "I will use a dict."
    asked = mentor.requests[0]
    assert asked.system == ADVISOR_SYSTEM and asked.tools == [] and asked.model == "big"
    assert "dict or list?" in prompt_text(asked) and "User: store users by id" in prompt_text(asked)
    # The consultation is a request of the session: spanned with the advisor's model, billed at its price.
    starts = [e for e in result.events if isinstance(e, ev.SpanModelRequestStart)]
    assert [s.model for s in starts] == ["scripted", "mentor:big", "scripted"]
    ends = [e for e in result.events if isinstance(e, ev.SpanModelRequestEnd)]
    assert ends[1].model_usage.list_cost > 0
    assert session.usage.list_cost == sum(e.model_usage.list_cost for e in ends)
    # The tool is offered to the primary thread of an agent with an advisor only.
    assert "consult_advisor" in {t.name for t in provider.requests[0].tools}
    await engine.aclose()


def test_disallowed_advisors_fail_at_agent_creation(db_path: Path) -> None:
    with Engine(db_path) as engine:
        with pytest.raises(
            InvalidInputError, match=r"advisor 'claude-haiku-4-5' is not permitted .* 'claude-sonnet-4-5'"
        ):
            engine.agents.create(name="a", model="claude-sonnet-4-5", advisor="claude-haiku-4-5")
        agent = engine.agents.create(name="a", model="claude-sonnet-4-5", advisor="claude-opus-4-1")
        assert agent.advisor == "claude-opus-4-1"
        with pytest.raises(InvalidInputError, match="permitted advisors for it: claude-opus-"):
            engine.agents.update(agent.id, advisor="local:smollm2")
        with pytest.raises(InvalidInputError, match="not permitted"):  # a new model must permit the advisor too
            engine.agents.update(agent.id, model="local:smollm2")
        assert engine.agents.update(agent.id, advisor=None).advisor is None
        # The test double may consult anything by default.
        assert engine.agents.create(name="b", model="scripted", advisor="claude-opus-4-1").version == 1
    with Engine(db_path, advisors={"claude-*": ["claude-*"]}) as custom:
        assert custom.agents.create(name="c", model="claude-sonnet-4-5", advisor="claude-haiku-4-5").advisor
        with pytest.raises(InvalidInputError, match="none"):
            custom.agents.create(name="d", model="scripted", advisor="scripted")


async def test_an_advisor_that_fails_is_a_tool_error_not_a_failed_turn(db_path: Path, workspace: Path) -> None:
    from agentcell import ScriptedError

    script = [
        ScriptedResponse(steps=[ScriptedToolCall(name="consult_advisor", input={"question": "help?"})]),
        ScriptedResponse(steps=[ScriptedText(text="I will go on alone.")]),
    ]
    broken = ScriptedProvider([ScriptedResponse(steps=[ScriptedError(message="down", retryable=False)])])
    engine, _, _ = engine_over(db_path, workspace, script, advisors={"scripted*": ["mentor*"]})
    engine.providers.register("mentor", broken)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted", advisor="mentor").id)
    result = await session.ask("go")
    answer = next(e for e in result.events if isinstance(e, ev.AgentToolResult))
    assert answer.is_error and "the advisor's request failed: down" in text_of(answer)
    assert result.text == "I will go on alone." and result.stop_reason == ev.EndTurn()
    await engine.aclose()
