"""Seed 002's sessions, sentence by sentence: overrides, versions, the principal, resolved multiagent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcell import (
    Engine,
    InvalidInputError,
    ScriptedProvider,
    ScriptedResponse,
    ScriptedText,
    ScriptedToolCall,
)
from agentcell import events as ev
from agentcell.providers.base import ModelRequest
from agentcell.records.agent import Agent
from agentcell.records.skill import SkillRef

from ..skill_folders import skill_folder


def test_session_level_overrides_replace_the_agents_fields_for_that_session(engine: Engine, tmp_path: Path) -> None:
    """'Replacement model ... system prompt ... tool list ... MCP server list ... skill list. Full
    replacement ... omit to use the agent's'."""
    agent = engine.agents.create(name="a", model="scripted", system="be brief", tools=[{"type": "filter", "deny": []}])
    s1 = engine.skills.create(skill_folder(tmp_path, "s1"))
    session = engine.sessions.create(
        agent={"id": agent.id, "model": "scripted:other", "system": "be thorough", "tools": [], "skills": [s1.id]}
    )
    assert (session.agent.model.id, session.agent.system, session.agent.tools, session.agent.skills) == (
        "scripted:other",
        "be thorough",
        [],
        [SkillRef(skill_id=s1.id)],
    )
    assert [(p.name, p.version) for p in session.record.skills] == [("s1", 1)]
    assert session.agent.version == agent.version and session.agent.id == agent.id
    assert engine.agents.get(agent.id).system == "be brief"  # the saved agent is untouched
    plain = engine.sessions.create(agent={"id": agent.id})
    assert plain.agent == agent
    assert engine.sessions.get(session.id).agent.system == "be thorough"  # kept in the record


def test_an_override_of_an_unknown_or_fixed_field_is_an_error_never_dropped(engine: Engine) -> None:
    agent = engine.agents.create(name="a", model="scripted")
    with pytest.raises(InvalidInputError, match="cannot override the agent's nmae"):
        engine.sessions.create(agent={"id": agent.id, "nmae": "typo"})
    with pytest.raises(InvalidInputError, match="cannot override the agent's name"):
        engine.sessions.create(agent={"id": agent.id, "name": "renamed"})
    with pytest.raises(InvalidInputError):
        engine.sessions.create(agent={"id": agent.id, "tools": [{"type": "nonsense"}]})
    assert engine.sessions.list() == []


def test_updating_tools_or_mcp_servers_replaces_them_and_emits_the_materialised_agent(engine: Engine) -> None:
    """'Present only when the update changed agent (tools or mcp_servers); when present it is the full
    materialised snapshot, not a diff.'"""
    agent = engine.agents.create(name="a", model="scripted", system="hi", tools=[{"type": "filter", "deny": ["x"]}])
    session = engine.sessions.create(agent=agent.id)
    session.update(tools=[{"type": "filter", "deny": ["bash"]}])
    session.update(tools=[{"type": "filter", "deny": ["bash"]}])  # unchanged: no event
    session.update(mcp_servers=[{"name": "files", "command": ["python", "-m", "srv"], "env": {"TOKEN": "s3"}}])
    session.update(tools=[])
    updates = [json.loads(e.model_dump_json()) for e in session.events(types=["session.updated"])]
    assert [u["agent"]["tools"] for u in updates] == [
        [{"type": "filter", "allow": None, "deny": ["bash"]}],
        [{"type": "filter", "allow": None, "deny": ["bash"]}],
        [],
    ]
    assert (
        updates[1]["agent"]["mcp_servers"][0]["name"] == "files" and "env" not in updates[1]["agent"]["mcp_servers"][0]
    )
    assert all(u["agent"]["system"] == "hi" and u["agent"]["id"] == agent.id for u in updates)  # whole agent
    assert "s3" not in json.dumps(updates)
    assert session.agent.tools == [] and engine.agents.get(agent.id).tools == agent.tools
    assert engine.agents.get(agent.id).version == 1  # no new agent version


@pytest.mark.parametrize("how", ["id", "dict", "object"])
def test_a_specified_version_must_be_at_least_one_however_the_agent_is_given(engine: Engine, how: str) -> None:
    """'The specific agent version to use. Omit to use the latest version. Must be at least 1 if specified.'"""
    agent = engine.agents.create(name="a", model="scripted")
    given: object = {"id": agent.id, "version": 0} if how == "dict" else agent if how == "object" else agent.id
    with pytest.raises(InvalidInputError, match="at least 1"):
        engine.sessions.create(agent=given, version=None if how == "dict" else 0)  # type: ignore[arg-type]


def test_every_session_snapshots_an_execution_principal(engine: Engine) -> None:
    """'Execution principal snapshotted from the agent at session creation. Always present;
    {"type": "service_account"} when runs carry no customer-named principal.'"""
    agent = engine.agents.create(name="a", model="scripted")
    plain = engine.sessions.create(agent=agent.id)
    assert json.loads(plain.record.model_dump_json())["principal"] == {"type": "service_account", "name": None}
    named = engine.sessions.create(agent=agent.id, principal={"type": "user", "name": "ana"})
    assert engine.sessions.get(named.id).record.principal.name == "ana"


def test_multiagent_is_null_alone_and_holds_full_definitions_frozen_at_creation(tmp_path: Path) -> None:
    """'Resolved multiagent orchestration configuration. Null when the agent is single-threaded.' 'Full agent
    definitions of the predefined agents'. A later edit of a helper does not change a running session."""
    coordinator_script: list[ScriptedResponse] = []

    def respond(request: ModelRequest) -> ScriptedResponse:
        if request.system and request.system.startswith("v"):  # the helper's thread
            return ScriptedResponse(steps=[ScriptedText(text="helped")])
        return coordinator_script.pop(0)

    provider = ScriptedProvider(respond)
    with Engine(tmp_path / "db", providers={"scripted": provider}) as engine:
        alone = engine.sessions.create(agent=engine.agents.create(name="solo", model="scripted").id)
        assert alone.record.multiagent is None
        helper = engine.agents.create(name="helper", model="scripted", system="v1 prompt")
        coordinator_script += [
            ScriptedResponse(steps=[ScriptedToolCall(name="spawn_thread", input={"task": "help", "agent": helper.id})]),
            ScriptedResponse(steps=[ScriptedToolCall(name="wait_thread", input={})]),
            ScriptedResponse(steps=[ScriptedText(text="done")]),
        ]
        coordinator = engine.agents.create(
            name="lead", model="scripted", multiagent={"agents": [{"id": helper.id}], "inline_agents": True}
        )
        session = engine.sessions.create(agent=coordinator.id)
        resolved = session.record.multiagent
        assert resolved is not None
        flags = (resolved.spawn_threads, resolved.inline_agents, resolved.advisor, resolved.workflow_runs)
        assert flags == (True, True, False, False)
        assert [type(a) for a in resolved.agents] == [Agent] and resolved.agents[0].system == "v1 prompt"
        engine.agents.update(helper.id, system="v2 prompt")
        again = engine.sessions.get(session.id)
        assert again.record.multiagent is not None and again.record.multiagent.agents[0].system == "v1 prompt"
        result = session.send_sync("delegate", tool_choice=["spawn_thread"])
        assert result.stop_reason == ev.EndTurn()
        assert [r.system for r in provider.requests if r.system and r.system.startswith("v")] == ["v1 prompt"]
