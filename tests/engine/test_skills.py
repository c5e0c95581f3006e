"""Skills in a turn, under the real turn loop and tool pipeline: the catalog as activate_skill's description,
activation mounting the folder read-only and returning the instructions once, the user's own activation,
and a skill's script run by the python tool."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from agentcell import InvalidInputError, ScriptedResponse, ScriptedText, ScriptedToolCall
from agentcell import events as ev
from agentcell.providers.base import ModelRequest, TextPart, ToolCallPart, ToolResultPart
from agentcell.tools.builtin.python import python_tool
from agentcell.tools.definition import ToolOutcome

from ..skill_folders import skill_folder
from .conftest import engine_over, prompt_text, text_of

SUMMARISE = "import sys\nwith open(sys.argv[1]) as f:\n    print('rows:', len(f.readlines()) - 1)\n"
HOUSE_STYLE = "# House style\nSummarise a CSV in exactly three bullets, numbers rounded to whole units."


def activate(name: str) -> ScriptedResponse:
    return ScriptedResponse(steps=[ScriptedToolCall(name="activate_skill", input={"name": name})])


def say(text: str) -> ScriptedResponse:
    return ScriptedResponse(steps=[ScriptedText(text=text)])


def csv_skill(parent: Path) -> Path:
    return skill_folder(
        parent,
        "csv-house-style",
        description="Summarise a CSV file in the house style. Use when asked to summarise tabular data.",
        body=HOUSE_STYLE,
        files={
            "scripts/summarise.py": SUMMARISE,
            "references/STYLE.md": "Bullets start with a verb.\n",
        },
    )


def results(events: list[ev.Event]) -> list[ev.AgentToolResult]:
    return [e for e in events if isinstance(e, ev.AgentToolResult)]


def tool_names(request: ModelRequest) -> list[str]:
    return [t.name for t in request.tools]


def test_an_agent_without_skills_gets_no_tool_and_no_catalog(db_path: Path, workspace: Path) -> None:
    engine, provider, _ = engine_over(db_path, workspace, [say("hi")])
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    session.send_sync("hello")
    [request] = provider.requests
    assert "activate_skill" not in tool_names(request)
    assert "skill" not in (request.system or "") and session.record.skills == []
    engine.close()


def test_the_catalog_is_activate_skills_description_with_names_as_an_enum(
    db_path: Path, workspace: Path, tmp_path: Path
) -> None:
    engine, provider, _ = engine_over(db_path, workspace, [say("ok")])
    csv = engine.skills.create(csv_skill(tmp_path / "src"))
    pdf = engine.skills.create(skill_folder(tmp_path / "src", "pdf", description="Read PDFs.", body="SECRET BODY"))
    agent = engine.agents.create(name="a", model="scripted", skills=[csv.id, pdf.id])
    session = engine.sessions.create(agent=agent.id)
    assert "activate_skill" in session.offered_tool_names()
    session.send_sync("hello")
    [tool] = [t for t in provider.requests[0].tools if t.name == "activate_skill"]
    assert f"- csv-house-style: {csv.description}" in tool.description
    assert "- pdf: Read PDFs." in tool.description
    assert "SECRET BODY" not in tool.description and HOUSE_STYLE not in prompt_text(provider.requests[0])
    assert tool.input_schema["properties"]["name"]["enum"] == ["csv-house-style", "pdf"]
    assert tool.input_schema["required"] == ["name"]
    engine.close()


def test_activation_mounts_the_folder_read_only_and_returns_the_wrapped_instructions(
    db_path: Path, workspace: Path, tmp_path: Path
) -> None:
    engine, provider, _ = engine_over(db_path, workspace, [activate("csv-house-style"), say("done")])
    skill = engine.skills.create(csv_skill(tmp_path / "src"))
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted", skills=[skill.id]).id)
    result = session.send_sync("summarise sales.csv")
    [answer] = results(result.events)
    text = text_of(answer)
    assert text.startswith('<skill_content name="csv-house-style">\n' + HOUSE_STYLE)
    assert text.endswith("</skill_content>")
    assert "Skill directory: .agentcell/skills/csv-house-style/v1/ (read-only" in text
    assert "<file>references/STYLE.md</file>" in text and "<file>scripts/summarise.py</file>" in text
    assert "Bullets start with a verb" not in text  # the files are listed, not read
    [activated] = [e for e in result.events if isinstance(e, ev.SessionSkillActivated)]
    use = next(e for e in result.events if isinstance(e, ev.AgentToolUse))
    assert (activated.tool_use_id, activated.name, activated.skill_id, activated.version) == (
        use.id,
        "csv-house-style",
        skill.id,
        1,
    )
    assert activated.files == ["references/STYLE.md", "scripts/summarise.py"] and activated.requested_by == "model"
    order = [e.type for e in result.events]
    assert order.index("agent.tool_use") < order.index("session.skill_activated") < order.index("agent.tool_result")
    mounted = workspace / ".agentcell/skills/csv-house-style/v1"
    assert (mounted / "SKILL.md").read_text().endswith(HOUSE_STYLE + "\n")
    assert (mounted / "references/STYLE.md").read_text() == "Bullets start with a verb.\n"
    assert not mounted.stat().st_mode & stat.S_IWUSR and not (mounted / "SKILL.md").stat().st_mode & stat.S_IWUSR
    assert isinstance(provider.requests[1].messages[-1].content[0], ToolResultPart)  # the model got it
    engine.close()


def test_instructions_stay_in_the_history_and_are_not_sent_twice(
    db_path: Path, workspace: Path, tmp_path: Path
) -> None:
    script = [activate("csv-house-style"), say("one"), activate("csv-house-style"), say("two"), say("three")]
    engine, provider, _ = engine_over(db_path, workspace, script)
    skill = engine.skills.create(csv_skill(tmp_path / "src"))
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted", skills=[skill.id]).id)
    session.send_sync("first")
    second = session.send_sync("second")
    session.send_sync("third")
    assert text_of(results(second.events)[0]).startswith("The skill csv-house-style is already active")
    assert len([e for e in session.events() if isinstance(e, ev.SessionSkillActivated)]) == 1
    for request in provider.requests[1:]:  # from the activation on, every request carries it exactly once
        assert prompt_text(request).count(HOUSE_STYLE) == 1
    engine.close()


def test_a_rerun_cell_takes_the_activation_off_the_path_so_the_next_one_sends_it_again(
    db_path: Path, workspace: Path, tmp_path: Path
) -> None:
    script = [activate("csv-house-style"), say("one"), activate("csv-house-style"), say("again")]
    engine, provider, _ = engine_over(db_path, workspace, script)
    skill = engine.skills.create(csv_skill(tmp_path / "src"))
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted", skills=[skill.id]).id)
    session.send_sync("summarise", cell_id="cell-1")
    rerun = session.send_sync("summarise", cell_id="cell-1")
    assert text_of(results(rerun.events)[0]).startswith('<skill_content name="csv-house-style">')
    assert prompt_text(provider.requests[-1]).count(HOUSE_STYLE) == 1
    engine.close()


@pytest.mark.parametrize("preset", ["workspace-write", "danger-full-access"])
def test_the_file_tools_read_a_mounted_skill_but_never_write_it(
    db_path: Path, workspace: Path, tmp_path: Path, preset: Any
) -> None:
    folder = ".agentcell/skills/csv-house-style/v1"
    writes = [
        ScriptedToolCall(name="read_file", input={"path": f"{folder}/references/STYLE.md"}),
        ScriptedToolCall(name="write_file", input={"path": f"{folder}/SKILL.md", "content": "obey me"}),
        ScriptedToolCall(name="edit_file", input={"path": f"{folder}/SKILL.md", "old_string": "#", "new_string": "!"}),
        ScriptedToolCall(name="write_file", input={"path": f"{folder}/new.md", "content": "x"}),
    ]
    script = [activate("csv-house-style"), ScriptedResponse(steps=writes), say("done")]
    engine, _, _ = engine_over(db_path, workspace, script)
    skill = engine.skills.create(csv_skill(tmp_path / "src"))
    agent = engine.agents.create(name="a", model="scripted", skills=[skill.id])
    session = engine.sessions.create(agent=agent.id, permissions=preset)
    result = session.send_sync("try to change it")
    read, *refused = results(result.events)[1:]
    assert "Bullets start with a verb." in text_of(read) and not read.is_error
    for answer in refused:
        assert answer.is_error and answer.error_code == "DENIED" and answer.denied_by == "preset"
        assert "read-only folder (a mounted skill)" in text_of(answer)
    assert (workspace / folder / "SKILL.md").read_text().endswith(HOUSE_STYLE + "\n")
    assert not (workspace / folder / "new.md").exists()
    engine.close()


def test_the_python_tool_runs_a_skills_script(
    db_path: Path, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workspace)  # as in a notebook: the kernel's directory is the workspace
    (workspace / "sales.csv").write_text("month,total\njan,10\nfeb,12\nmar,9\n")
    code = (  # in the tool's own interpreter: under workspace-write the python tool starts no processes
        "import runpy, sys\n"
        "sys.argv = ['.agentcell/skills/csv-house-style/v1/scripts/summarise.py', 'sales.csv']\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    script = [
        activate("csv-house-style"),
        ScriptedResponse(steps=[ScriptedToolCall(name="python", input={"code": code})]),
    ]
    engine, _, registry = engine_over(db_path, workspace, [*script, say("three rows")])
    registry.register(python_tool({}))
    skill = engine.skills.create(csv_skill(tmp_path / "src"))
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted", skills=[skill.id]).id)
    result = session.send_sync("summarise sales.csv")
    ran = results(result.events)[1]
    assert not ran.is_error and "rows: 3" in text_of(ran)
    engine.close()


def test_activation_goes_through_the_pipelines_guards_and_observers(
    db_path: Path, workspace: Path, tmp_path: Path
) -> None:
    engine, _, registry = engine_over(db_path, workspace, [activate("csv-house-style"), say("fine")])
    seen: list[ToolOutcome] = []
    registry.on_outcome(seen.append)
    registry.guard(lambda call: "no skills today" if call.name == "activate_skill" else None)
    skill = engine.skills.create(csv_skill(tmp_path / "src"))
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted", skills=[skill.id]).id)
    result = session.send_sync("summarise")
    [answer] = results(result.events)
    assert answer.is_error and answer.denied_by == "guard" and "no skills today" in text_of(answer)
    assert not any(isinstance(e, ev.SessionSkillActivated) for e in result.events)
    assert not (workspace / ".agentcell").exists()
    assert [(o.call.name, o.stage, o.definition.origin if o.definition else None) for o in seen] == [
        ("activate_skill", "guard", "engine")
    ]
    engine.close()


def test_the_user_activates_a_skill_before_the_models_first_request(
    db_path: Path, workspace: Path, tmp_path: Path
) -> None:
    engine, provider, _ = engine_over(db_path, workspace, [say("• three bullets")])
    skill = engine.skills.create(csv_skill(tmp_path / "src"))
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted", skills=[skill.id]).id)
    with pytest.raises(InvalidInputError, match="no skill named 'pdf' in this session; its skills: csv-house-style"):
        session.send_sync("/pdf read it", skills=["pdf"])
    assert session.events() == []  # refused before anything was appended
    result = session.send_sync("/csv-house-style summarise sales.csv", skills=["csv-house-style"])
    types = [e.type for e in result.events]
    assert types[:6] == [
        "user.message",
        "session.status_running",
        "agent.tool_use",
        "session.skill_activated",
        "agent.tool_result",
        "span.model_request_start",
    ]
    opening = result.events[0]
    assert isinstance(opening, ev.UserMessage) and opening.skills == ["csv-house-style"]
    activated = next(e for e in result.events if isinstance(e, ev.SessionSkillActivated))
    assert activated.requested_by == "user"
    [request] = provider.requests  # one request: the activation needed none
    user, assistant, answer = request.messages
    assert isinstance(user.content[0], TextPart) and user.content[0].text.startswith("/csv-house-style")
    assert isinstance(assistant.content[0], ToolCallPart) and assistant.content[0].name == "activate_skill"
    assert isinstance(answer.content[0], ToolResultPart) and HOUSE_STYLE in prompt_text(request)
    assert result.text == "• three bullets"
    assert (
        '"skills"'
        not in ev.UserMessage(id="e", created_at=opening.created_at, session_id="s", content=[]).model_dump_json()
    )
    engine.close()


def test_a_deleted_skill_is_still_in_the_catalog_but_fails_to_load(
    db_path: Path, workspace: Path, tmp_path: Path
) -> None:
    engine, _, _ = engine_over(db_path, workspace, [activate("csv-house-style"), say("sorry")])
    skill = engine.skills.create(csv_skill(tmp_path / "src"))
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted", skills=[skill.id]).id)
    engine.skills.delete(skill.id)
    assert "activate_skill" in session.offered_tool_names()
    [answer] = results(session.send_sync("summarise").events)
    assert answer.is_error and answer.error_code == "SKILL_NOT_FOUND" and "was deleted" in text_of(answer)
    engine.close()


def test_a_mount_path_holding_other_files_is_replaced_by_the_pinned_version(
    db_path: Path, workspace: Path, tmp_path: Path
) -> None:
    engine, _, _ = engine_over(db_path, workspace, [activate("csv-house-style"), say("ok")])
    skill = engine.skills.create(csv_skill(tmp_path / "src"))
    stale = workspace / ".agentcell/skills/csv-house-style/v1"
    stale.mkdir(parents=True)
    (stale / "SKILL.md").write_text("tampered")
    (stale / "extra.sh").write_text("rm -rf /")
    os.chmod(stale, 0o555)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted", skills=[skill.id]).id)
    session.send_sync("summarise")
    assert sorted(p.name for p in stale.rglob("*") if p.is_file()) == ["SKILL.md", "STYLE.md", "summarise.py"]
    assert (stale / "SKILL.md").read_text().endswith(HOUSE_STYLE + "\n")
    engine.close()
