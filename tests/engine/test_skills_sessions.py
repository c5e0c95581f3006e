"""Skills across a session's life: pinned at creation (and when it moves to another agent version), kept
across a reopen, at most 20 across agents and threads, brought by a mounted git repository, offered to
spawned threads, and replayed from a recording with the same text."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agentcell import Engine, GitRepository, InvalidInputError, ScriptedProvider, ScriptedResponse, ScriptedToolCall
from agentcell import events as ev
from agentcell.providers.base import ModelRequest
from agentcell.providers.replay import Replayer
from agentcell.records.skill import MAX_SESSION_SKILLS

from ..skill_folders import skill_folder
from .conftest import engine_over, engine_replaying, prompt_text, text_of
from .test_skills import activate, results, say


def test_a_session_pins_the_latest_version_and_keeps_it_across_a_reopen(
    db_path: Path, workspace: Path, tmp_path: Path
) -> None:
    folder = skill_folder(tmp_path / "src", "tone", body="Answer in the FIRST tone.")
    engine, _, _ = engine_over(db_path, workspace)
    first = engine.skills.create(folder)
    agent = engine.agents.create(name="a", model="scripted", skills=[first.id])  # no version: latest
    session = engine.sessions.create(agent=agent.id)
    skill_folder(tmp_path / "src", "tone", body="Answer in the SECOND tone.")
    second = engine.skills.create(folder)
    assert (second.id, second.version) == (first.id, 2)
    newer = engine.sessions.create(agent=agent.id)
    assert [(p.name, p.version) for p in session.record.skills] == [("tone", 1)]
    assert [(p.name, p.version) for p in newer.record.skills] == [("tone", 2)]
    engine.close()

    # Another process on the same database (a kernel restart): the old session still has version 1.
    reopened, _, _ = engine_over(db_path, workspace, [activate("tone"), say("ok")])
    again = reopened.sessions.get(session.id)
    answer = results(again.send_sync("how should you answer?").events)[0]
    assert "FIRST tone" in text_of(answer) and "SECOND" not in text_of(answer)
    assert (workspace / ".agentcell/skills/tone/v1/SKILL.md").is_file()
    reopened.close()


def test_a_reference_may_pin_a_version_and_a_new_agent_version_pins_afresh(
    db_path: Path, workspace: Path, tmp_path: Path
) -> None:
    folder = skill_folder(tmp_path / "src", "tone", body="one")
    engine, _, _ = engine_over(db_path, workspace)
    first = engine.skills.create(folder)
    skill_folder(tmp_path / "src", "tone", body="two")
    engine.skills.create(folder)
    agent = engine.agents.create(name="a", model="scripted", skills=[{"skill_id": first.id, "version": 1}])
    session = engine.sessions.create(agent=agent.id)
    assert [p.version for p in session.record.skills] == [1]
    updated = engine.agents.update(agent.id, skills=[first.id])
    seen: list[ev.Event] = []
    session.subscribe(seen.append)  # type: ignore[arg-type]
    session.update(agent_version=updated.version)
    assert [p.version for p in session.record.skills] == [2]
    [event] = [e for e in seen if isinstance(e, ev.SessionUpdated)]
    assert event.skills is not None and [p.version for p in event.skills] == [2]
    assert '"skills"' in event.model_dump_json() and '"title"' not in event.model_dump_json()
    assert engine.sessions.get(session.id).record.skills == session.record.skills
    engine.close()


def test_unknown_skills_are_refused_when_the_agent_names_them(engine: Engine) -> None:
    with pytest.raises(InvalidInputError, match=r"skills\[0\]: no skill 'skill_nope' is stored"):
        engine.agents.create(name="a", model="scripted", skills=["skill_nope"])
    with pytest.raises(InvalidInputError, match="names each skill once"):
        engine.agents.create(name="a", model="scripted", skills=["skill_x", "skill_x"])


def test_a_session_has_at_most_twenty_skills_across_its_agents(db_path: Path, workspace: Path, tmp_path: Path) -> None:
    engine, _, _ = engine_over(db_path, workspace)
    skills = [engine.skills.create(skill_folder(tmp_path / "src", f"s{i}")).id for i in range(MAX_SESSION_SKILLS + 1)]
    with pytest.raises(InvalidInputError, match="at most 20 skills"):
        engine.agents.create(name="greedy", model="scripted", skills=skills)
    helper = engine.agents.create(name="helper", model="scripted", skills=skills[:1])
    lead = engine.agents.create(
        name="lead", model="scripted", skills=skills[1:], multiagent={"agents": [{"id": helper.id}]}
    )
    with pytest.raises(
        InvalidInputError, match="at most 20 skills across its agents and threads; this one would have 21"
    ):
        engine.sessions.create(agent=lead.id)
    assert engine.store.list_sessions() == []
    shared = engine.agents.create(
        name="lead2", model="scripted", skills=skills[:20], multiagent={"agents": [{"id": helper.id}]}
    )
    assert len(engine.sessions.create(agent=shared.id).record.skills) == 21  # one skill, two agents: 20 skills
    engine.close()


def test_a_spawned_thread_is_offered_its_own_agents_skills(db_path: Path, workspace: Path, tmp_path: Path) -> None:
    def script(request: ModelRequest) -> ScriptedResponse:
        text = prompt_text(request)
        if request.system == "helper":
            if "<skill_content" in text:
                return say("helped in style")
            return activate("helper-style")
        if "helped in style" in text:
            return say("all done")
        if "thread_id" in text:
            return ScriptedResponse(steps=[ScriptedToolCall(name="wait_thread", input={})])
        return ScriptedResponse(steps=[ScriptedToolCall(name="spawn_thread", input={"task": "help"})])

    engine, provider, _ = engine_over(db_path, workspace, script)
    mine = engine.skills.create(skill_folder(tmp_path / "src", "lead-style", description="the lead's"))
    theirs = engine.skills.create(skill_folder(tmp_path / "src", "helper-style", description="the helper's"))
    helper = engine.agents.create(name="helper", model="scripted", system="helper", skills=[theirs.id])
    lead = engine.agents.create(
        name="lead", model="scripted", system="lead", skills=[mine.id], multiagent={"agents": [{"id": helper.id}]}
    )
    session = engine.sessions.create(agent=lead.id)
    result = session.send_sync("go")
    assert result.text == "all done"
    for request in provider.requests:
        [catalog] = [t.input_schema["properties"]["name"]["enum"] for t in request.tools if t.name == "activate_skill"]
        assert catalog == (["helper-style"] if request.system == "helper" else ["lead-style"])
    [activated] = [e for e in result.events if isinstance(e, ev.SessionSkillActivated)]
    assert activated.thread_id is not None and activated.name == "helper-style"
    engine.close()


def _git(*args: str, cwd: Path | None = None) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip
    subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)


def test_a_mounted_git_repository_brings_its_skills(db_path: Path, workspace: Path, tmp_path: Path) -> None:
    bare, work = tmp_path / "origin" / "team.git", tmp_path / "author"
    _git("init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    _git("clone", "--quiet", str(bare), str(work))
    skill_folder(work / "skills", "release-notes", description="Write release notes.", body="Group by area.")
    skill_folder(work / ".agents" / "skills", "triage", description="Triage issues.", body="Label first.")
    skill_folder(work / "skills", "broken", frontmatter="name: broken\ndescription: [unclosed")
    _git("add", ".", cwd=work)
    _git("commit", "--quiet", "-m", "skills", cwd=work)
    _git("push", "--quiet", "origin", "main", cwd=work)

    script = [activate("triage"), say("labelled"), say("second turn")]
    engine, _, _ = engine_over(db_path, workspace, script)
    repo = GitRepository(url=bare.as_uri(), mount_path="team")
    plain = engine.sessions.create(
        agent=engine.agents.create(name="a", model="scripted").id,
        resources=[GitRepository(url=bare.as_uri(), skills=False)],
    )
    session = engine.sessions.create(agent=engine.agents.create(name="b", model="scripted").id, resources=[repo])
    assert session.record.skills == []  # not cloned yet
    result = session.send_sync("triage this")
    assert [(p.name, p.version, p.source) for p in session.record.skills] == [
        ("release-notes", 1, f"git_repository {bare.as_uri()}"),
        ("triage", 1, f"git_repository {bare.as_uri()}"),
    ]
    assert "Label first." in text_of(results(result.events)[0])
    [skipped] = [e for e in result.events if isinstance(e, ev.SessionError)]
    assert skipped.error.type == "skill_load_error"
    assert "skills/broken/SKILL.md:3: error: the frontmatter is not valid YAML" in skipped.error.message
    [pinned] = [e for e in result.events if isinstance(e, ev.SessionUpdated)]
    assert pinned.skills == session.record.skills
    # The clone changes (the agent may write there): the session keeps the versions it pinned.
    (workspace / "team" / "skills" / "release-notes" / "SKILL.md").write_text(
        "---\nname: release-notes\ndescription: x\n---\nchanged"
    )
    session.send_sync("again")
    assert [p.version for p in session.record.skills] == [1, 1]
    assert len([s for s in engine.skills.list() if s.name == "release-notes"]) == 1
    plain.send_sync("hi")
    assert plain.record.skills == [] and "activate_skill" not in plain.offered_tool_names()
    engine.close()


def test_a_replayed_turn_activates_the_same_skill_text_without_a_model(tmp_path: Path, workspace: Path) -> None:
    notebook = tmp_path / "skills.ipynb"
    script = [activate("csv-style"), say("• one\n• two\n• three")]

    def run(db: str, mode: str, provider: ScriptedProvider | None) -> tuple[list[ev.Event], Replayer]:
        replayer = Replayer.for_notebook(notebook, mode)  # type: ignore[arg-type]
        engine = engine_replaying(tmp_path / db, workspace, replayer, provider)
        folder = skill_folder(tmp_path / "src", "csv-style", body="Three bullets, always.")
        skill = engine.skills.create(folder)
        agent = engine.agents.create(name="nb", model="scripted", skills=[skill.id])
        events = engine.sessions.create(agent=agent.id).send_sync("summarise the sales").events
        engine.close()
        return events, replayer

    recorded, _ = run("record.db", "record", ScriptedProvider(script))
    replayed, replayer = run("replay.db", "replay", None)
    assert replayer.misses == 0 and replayer.recording.answered == 2
    for events in (recorded, replayed):
        assert "Three bullets, always." in text_of(results(events)[0])
        assert events[-1].type == "session.status_idle" and isinstance(events[-1], ev.SessionStatusIdle)
    texts = [text_of(e) for e in replayed if isinstance(e, ev.AgentMessage)]
    assert texts == ["• one\n• two\n• three"]
