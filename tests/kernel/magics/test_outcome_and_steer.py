"""The ``%%outcome`` and ``%steer`` bodies: parsing a cell, and running both through the real notebook host."""

from __future__ import annotations

import asyncio

import pytest
from IPython.core.error import UsageError

from agentcell import ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedToolCall
from agentcell import events as ev
from agentcell.engine.outcomes import OutcomeSpec
from agentcell.kernel.host import NotebookAgent
from agentcell.kernel.magics.outcome import parse_outcome_cell, run_outcome_cell
from agentcell.kernel.magics.steer import steer_line
from agentcell.sessions import Session
from agentcell.tools import default_registry, tool, untool

from ...engine.conftest import verdict
from ..conftest import Recorder


def test_a_cell_reads_as_description_then_rubric() -> None:
    spec = parse_outcome_cell("max_iterations=5 grader=scripted", "A memo.\nOn one page.\n---\n- has a title\n")
    assert spec == OutcomeSpec("A memo.\nOn one page.", "- has a title", max_iterations=5, grader_model="scripted")
    assert parse_outcome_cell("", "A memo.\nRubric: has a date").rubric == "has a date"
    from_file = parse_outcome_cell("rubric=criteria.md", "A memo.")
    assert from_file.rubric == ev.FileRubric(path="criteria.md")


@pytest.mark.parametrize(
    ("line", "body", "message"),
    [
        ("", "A memo.", "no rubric"),
        ("", "---\n- a title", "write what the agent is to produce"),
        ("rubric=r.md", "A memo.\n---\n- a title", "not both"),
        ("max_iterations=many", "A.\n---\nB", "a number"),
        ("colour=blue", "A.\n---\nB", "unknown option 'colour=blue'"),
    ],
)
def test_a_malformed_cell_says_what_is_wrong(line: str, body: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_outcome_cell(line, body)


async def test_an_outcome_cell_runs_through_the_host_and_its_view_alone_says_where_it_ended(
    host: NotebookAgent, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = host
    script = [ScriptedResponse(steps=[ScriptedText(text="Memo: Q3.")]), verdict("satisfied", "Titled.")]
    agent.engine.providers.register("scripted", ScriptedProvider(script))
    recorder = Recorder()
    agent.renderer_factory = lambda session: recorder

    await run_outcome_cell(agent, "max_iterations=2", "A memo.\n---\n- has a title")

    assert capsys.readouterr().out == ""  # the outcome panel says it; a stdout line would repeat the verdict
    assert recorder.closed is not None and recorder.closed.outcome is not None
    assert recorder.closed.outcome.status == "satisfied"
    assert any(isinstance(i, ev.SpanOutcomeEvaluationEnd) for i in recorder.items)


async def test_steer_reaches_the_running_turn_and_refuses_when_none_runs(host: NotebookAgent) -> None:
    agent = host
    provider = ScriptedProvider(
        [
            ScriptedResponse(steps=[ScriptedToolCall(name="wait_here")]),
            ScriptedResponse(steps=[ScriptedText(text="ok, briefly")]),
        ]
    )
    agent.engine.providers.register("scripted", provider)
    agent.renderer_factory = lambda session: Recorder()
    with pytest.raises(UsageError, match="no turn is running"):
        steer_line(agent, "be brief")
    started, release = asyncio.Event(), asyncio.Event()

    @tool(registry=default_registry())
    async def wait_here() -> str:
        """Wait until released."""
        started.set()
        await release.wait()
        return "released"

    try:
        turn = asyncio.create_task(agent.ask("work"))
        await started.wait()
        assert "next request" in steer_line(agent, "be brief")
        release.set()
        await turn
    finally:
        untool(wait_here)
    session: Session = agent.session
    assert provider.requests[1].messages[-1].content[-1].text == "be brief"  # type: ignore[union-attr]
    assert session.events(types=("user.message",))[-1].content[0].text == "be brief"  # type: ignore[union-attr]
    with pytest.raises(UsageError, match="TEXT"):
        steer_line(agent, "  ")
