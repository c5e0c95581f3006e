"""A workflow run is recorded and replayed whole: every step thread's requests are answered from the recording,
with this run's ids (run, agents) where the recording has its own, and nothing reaches a provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentcell import Engine, ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedToolCall, WorkflowRun
from agentcell.providers.base import ModelRequest, TextPart, ToolResultPart
from agentcell.providers.replay import Replayer, ReplayMode

from .test_recording import Builds, Cells, unavailable


def _task(request: ModelRequest) -> str:
    return "".join(p.text for p in request.messages[0].content if isinstance(p, TextPart))


def _script(request: ModelRequest) -> ScriptedResponse:
    system = request.system or ""
    if system.startswith("writer"):
        return ScriptedResponse(steps=[ScriptedText(text=f"A line on {_task(request).rsplit(' ', 1)[-1]}.")])
    if system.startswith("editor"):
        return ScriptedResponse(steps=[ScriptedText(text="Edited: " + _task(request)[-60:])])
    # The coordinator: start a run on the saved agent its tool names, then report the run's id and output.
    results = [b.text for p in request.messages[-1].content if isinstance(p, ToolResultPart) for b in p.content]
    if not results:
        tool = next(t for t in request.tools if t.name == "start_workflow_run")
        agent = tool.input_schema["properties"]["plan"]["properties"]["steps"]["items"]["properties"]["agent"]
        writer = agent["anyOf"][0]["properties"]["id"]["enum"][0]
        plan = {"name": "lines", "steps": [
            {"id": "write", "agent": {"id": writer}, "for_each": ["tides", "moons"], "prompt": "Write on {{item}}"},
            {"id": "edit", "agent": {"inline": {"name": "editor", "system": "editor: tidy"}}, "depends_on": ["write"],
             "prompt": "Edit {{steps.write.outputs}}"}]}  # fmt: skip
        return ScriptedResponse(steps=[ScriptedToolCall(name="start_workflow_run", input={"plan": plan})])
    summary = json.loads(results[0])
    return ScriptedResponse(steps=[ScriptedText(text=f"Run {summary['run_id']} gave: {summary['output']}")])


def _notebook(tmp_path: Path, mode: ReplayMode, live: Builds, db: str) -> tuple[list[Any], Replayer]:
    cells = Cells()
    replayer = Replayer.for_notebook(tmp_path / "study.ipynb", mode, cell=cells)
    engine = Engine(tmp_path / db, replay=replayer)
    engine.providers.register("scripted", live)
    with engine:
        writer = engine.agents.create(name="writer", model="scripted", system="writer: one line")
        lead = engine.agents.create(
            name="lead",
            model="scripted",
            system="lead",
            multiagent={
                "spawn_threads": False,
                "workflow_runs": True,
                "workflow_agents": [{"id": writer.id}],
                "workflow_inline_agents": True,
            },
        )
        session = engine.sessions.create(agent=lead.id)
        cells.run(1)
        by_agent = session.send_sync("Write and edit two lines.")
        cells.run(2)
        plan = {"name": "mine", "steps": [
            {"id": "a", "agent": {"id": writer.id}, "prompt": "Write on stars"},
            {"id": "b", "agent": {"inline": {"name": "editor", "system": "editor: tidy"}}, "depends_on": ["a"],
             "prompt": "Edit {{steps.a.output}}"}]}  # fmt: skip
        by_user: WorkflowRun = session.run_workflow_sync(plan)
        return [by_agent, by_user, session.workflow_runs], replayer


def test_a_whole_run_replays_with_no_provider(tmp_path: Path) -> None:
    (agent_turn, user_run, _), _ = _notebook(tmp_path, "record", Builds(lambda: ScriptedProvider(_script)), "rec.db")
    (replayed_turn, replayed_run, runs), replayer = _notebook(tmp_path, "replay", Builds(unavailable), "rep.db")

    assert replayer.misses == 0 and replayer.live == 0
    assert replayer.recording.answered == len(replayer.recording.entries) == 7  # 1+2+1+1 steps, the lead twice
    # The coordinator's answer names this run's id (the recording had another), with the same output.
    assert replayed_turn.text.startswith(f"Run {runs[0].id} gave: Edited: ")
    assert agent_turn.text.split(" gave: ")[1] == replayed_turn.text.split(" gave: ")[1]
    assert runs[0].id not in agent_turn.text
    assert runs[0].step("write").output == ["A line on tides.", "A line on moons."]
    assert replayed_run.status == user_run.status == "completed"
    assert replayed_run.output == user_run.output == "Edited: Edit A line on stars."
    # Every step thread's requests were among those replayed: the threads have their recorded answers.
    assert [i.output for s in replayed_run.steps for i in s.items] == [
        i.output for s in user_run.steps for i in s.items
    ]
