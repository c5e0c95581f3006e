"""Agent versions and update semantics."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcell import (
    AgentNotFoundError,
    AgentVersionNotFoundError,
    CustomTool,
    Engine,
    InvalidInputError,
    McpServer,
    ModelConfig,
    SkillRef,
    StoreError,
)
from agentcell.records.agent import MAX_SYSTEM_CHARS

from ..skill_folders import skill_folder


def test_create_makes_version_one_and_update_the_next(engine: Engine) -> None:
    a1 = engine.agents.create(name="helper", model="scripted", system="be brief")
    a2 = engine.agents.update(a1.id, system="be terse")
    assert (a1.version, a2.version) == (1, 2)
    assert engine.agents.get(a1.id).system == "be terse"
    assert engine.agents.get(a1.id, 1).system == "be brief"  # earlier versions are untouched
    assert [a.version for a in engine.agents.versions(a1.id)] == [1, 2]
    assert a2.created_at == a1.created_at
    assert a2.updated_at >= a1.updated_at


def test_list_fields_are_replaced_whole_omitted_kept_empty_cleared(engine: Engine, tmp_path: Path) -> None:
    tool = CustomTool(name="lookup", description="look up a word")
    server = McpServer(name="files", command=["python", "-m", "server"])
    skill = engine.skills.create(skill_folder(tmp_path, "x"))
    skills = [SkillRef(skill_id=skill.id)]
    a1 = engine.agents.create(name="a", model="scripted", tools=[tool], mcp_servers=[server], skills=[skill.id])
    a2 = engine.agents.update(a1.id, system="new")  # lists omitted: kept
    assert (a2.tools, a2.mcp_servers, a2.skills) == ([tool], [server], skills)
    a3 = engine.agents.update(a1.id, tools=[])  # [] clears only that list
    assert (a3.tools, a3.mcp_servers, a3.skills) == ([], [server], skills)
    assert engine.agents.update(a1.id, skills=[]).skills == []
    other = CustomTool(name="other")
    a4 = engine.agents.update(a1.id, tools=[other])  # replacement, not a merge
    assert a4.tools == [other]


def test_system_none_clears_and_omitted_keeps(engine: Engine) -> None:
    a1 = engine.agents.create(name="a", model="scripted", system="s")
    assert engine.agents.update(a1.id, name="b").system == "s"
    assert engine.agents.update(a1.id, system=None).system is None


def test_system_prompt_limit(engine: Engine) -> None:
    at_limit = engine.agents.create(name="a", model="scripted", system="x" * MAX_SYSTEM_CHARS)
    with pytest.raises(InvalidInputError, match="100,000"):
        engine.agents.create(name="a", model="scripted", system="x" * (MAX_SYSTEM_CHARS + 1))
    with pytest.raises(InvalidInputError, match="100,000"):
        engine.agents.update(at_limit.id, system="y" * (MAX_SYSTEM_CHARS + 1))
    assert engine.agents.get(at_limit.id).version == 1  # the failed update stored nothing


def test_model_is_a_name_or_a_config(engine: Engine) -> None:
    by_name = engine.agents.create(name="a", model="scripted")
    assert by_name.model == ModelConfig(id="scripted")
    config = ModelConfig(id="scripted", max_tokens=256, thinking_budget=1024)
    by_config = engine.agents.create(name="b", model=config)
    assert by_config.model.settings().max_tokens == 256
    assert by_config.model.settings().thinking_budget == 1024
    updated = engine.agents.update(by_name.id, model={"id": "scripted", "max_tokens": 10})
    assert updated.model.max_tokens == 10


def test_an_update_that_changes_nothing_makes_no_version(engine: Engine) -> None:
    a1 = engine.agents.create(name="a", model="scripted", system="s")
    assert engine.agents.update(a1.id, system="s", model="scripted").version == 1


@pytest.mark.parametrize("version", [0, -1, True, "2"])
def test_bad_versions_are_refused(engine: Engine, version: object) -> None:
    a1 = engine.agents.create(name="a", model="scripted")
    with pytest.raises(InvalidInputError, match="at least 1"):
        engine.agents.get(a1.id, version)  # type: ignore[arg-type]


def test_unknown_agent_and_version(engine: Engine) -> None:
    with pytest.raises(AgentNotFoundError, match="no agent with id 'agent_nope'"):
        engine.agents.get("agent_nope")
    with pytest.raises(AgentNotFoundError):
        engine.agents.update("agent_nope", system="x")
    a1 = engine.agents.create(name="a", model="scripted")
    with pytest.raises(AgentVersionNotFoundError, match="versions run from 1 to 1"):
        engine.agents.get(a1.id, 7)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": ""}, "name"),
        ({"model": ""}, "model"),
        ({"metadata": {"k": 1}}, "strings"),
        ({"metadata": {f"k{i}": "v" for i in range(17)}}, "at most 16"),
        ({"tools": [{"type": "custom", "name": "bad name!"}]}, "tools"),
        ({"tools": [{"type": "custom", "name": "t"}, {"type": "custom", "name": "t"}]}, "unique"),
        ({"mcp_servers": [{"name": "m", "type": "stdio"}]}, "needs a command"),
    ],
)
def test_invalid_agents_get_a_clear_error(engine: Engine, fields: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"name": "a", "model": "scripted"} | fields
    with pytest.raises(InvalidInputError, match=message):
        engine.agents.create(**args)  # type: ignore[arg-type]
    assert engine.agents.list() == []


def test_versions_are_immutable_in_the_store(engine: Engine) -> None:
    a1 = engine.agents.create(name="a", model="scripted", system="original")
    with pytest.raises(StoreError, match="immutable"):
        engine.store.put_agent_version(a1.model_copy(update={"system": "rewritten"}))
    assert engine.agents.get(a1.id, 1).system == "original"


def test_list_shows_the_latest_version_of_each_agent(engine: Engine) -> None:
    a = engine.agents.create(name="a", model="scripted")
    b = engine.agents.create(name="b", model="scripted")
    engine.agents.update(a.id, name="a2")
    assert {(x.id, x.version, x.name) for x in engine.agents.list()} == {(a.id, 2, "a2"), (b.id, 1, "b")}


@pytest.mark.parametrize("url", ["notaurl", "ftp://host/mcp", "http://", "/local/path"])
def test_an_mcp_server_url_that_is_no_http_url_is_refused_when_given(engine: Engine, url: str) -> None:
    """Issue 21, 10: told at once, not at the next turn."""
    with pytest.raises(InvalidInputError, match="http:// or https://"):
        engine.agents.create(name="a", model="scripted", mcp_servers=[{"name": "s", "type": "http", "url": url}])
    assert engine.agents.list() == []
