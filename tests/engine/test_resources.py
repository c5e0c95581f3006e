"""Session resources, mounted for real: a git repository cloned by the system git from a bare repository the
test makes (file://), an uploaded file copied from the local upload store, and a SQLite memory store read
and written through the memory tools, with read_only refused. The agent uses them through its tools."""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path
from typing import Literal

import pytest

from agentcell import (
    ConfigurationError,
    Engine,
    GitRepository,
    InvalidInputError,
    ScriptedResponse,
    ScriptedText,
    ScriptedToolCall,
)
from agentcell import events as ev
from agentcell.engine.mount import _git_env
from agentcell.errors import ResourceMountError
from agentcell.providers.base import ModelRequest, ToolSchema
from agentcell.tools.base import ToolCall, ToolResult

from .conftest import engine_over, text_of


def _git(*args: str, cwd: Path | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def origin(tmp_path: Path) -> tuple[str, str, str]:
    """A bare repository with two commits on main and one on a branch: (file:// url, first sha, last sha)."""
    bare, work = tmp_path / "origin" / "project.git", tmp_path / "author"
    _git("init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    _git("clone", "--quiet", str(bare), str(work))
    (work / "README.md").write_text("version one\n")
    _git("add", ".", cwd=work)
    _git("commit", "--quiet", "-m", "one", cwd=work)
    first = _git("rev-parse", "HEAD", cwd=work)
    (work / "README.md").write_text("version two\n")
    _git("commit", "--quiet", "-am", "two", cwd=work)
    last = _git("rev-parse", "HEAD", cwd=work)
    _git("checkout", "--quiet", "-b", "feature", cwd=work)
    (work / "FEATURE.md").write_text("the feature\n")
    _git("add", ".", cwd=work)
    _git("commit", "--quiet", "-m", "feature", cwd=work)
    _git("push", "--quiet", "origin", "main", "feature", cwd=work)
    return bare.as_uri(), first, last


def _reads(*paths: str) -> list[ScriptedResponse]:
    calls = [ScriptedToolCall(name="read_file", input={"path": p}) for p in paths]
    return [ScriptedResponse(steps=calls), ScriptedResponse(steps=[ScriptedText(text="read them")])]


async def test_git_repositories_are_cloned_at_their_branch_or_commit_and_read_by_the_agent(
    db_path: Path, workspace: Path, origin: tuple[str, str, str]
) -> None:
    url, first, _ = origin
    script = _reads("project/FEATURE.md", "pinned/README.md")
    engine, provider, _ = engine_over(db_path, workspace, script)
    session = engine.sessions.create(
        agent=engine.agents.create(name="a", model="scripted", system="You review code.").id,
        resources=[
            GitRepository(url=url, branch="feature"),
            {"type": "git_repository", "url": url, "commit": first, "mount_path": "pinned"},
        ],
    )

    result = await session.ask("read the repos")

    answers = [text_of(e) for e in result.events if isinstance(e, ev.AgentToolResult)]
    assert "the feature" in answers[0] and "version one" in answers[1]
    assert _git("rev-parse", "HEAD", cwd=workspace / "pinned") == first
    assert _git("rev-parse", "--abbrev-ref", "HEAD", cwd=workspace / "project") == "feature"
    system = provider.requests[0].system or ""
    assert system.startswith("You review code.\n\n# Resources")
    assert f"- project/: a clone of the git repository {url} at feature" in system
    assert f"- pinned/: a clone of the git repository {url} at {first}" in system
    # A second turn (or a reopened session) leaves the clone, and what the agent changed in it, alone.
    (workspace / "project" / "FEATURE.md").write_text("edited by the agent\n")
    await session.ask("again")
    assert (workspace / "project" / "FEATURE.md").read_text() == "edited by the agent\n"
    await engine.aclose()


async def test_a_failing_clone_is_a_clear_error(db_path: Path, workspace: Path, tmp_path: Path) -> None:
    engine, provider, _ = engine_over(db_path, workspace)
    missing = (tmp_path / "nowhere.git").as_uri()
    session = engine.sessions.create(
        agent=engine.agents.create(name="a", model="scripted").id,
        resources=[GitRepository(url=missing, authorization_token="ghp_s3cr3t")],
    )
    result = await session.ask("go")
    assert isinstance(result.stop_reason, ev.ErrorStop) and provider.requests == []
    assert [(e.type, e.retry_status) for e in result.errors] == [("resource_mount_error", "terminal")]
    assert f"cannot clone {missing}" in result.errors[0].message
    assert not (workspace / "nowhere").exists()  # nothing half-cloned is left
    with pytest.raises(ResourceMountError, match=r"does not appear to be a git repository|not found"):
        session.mount()
    await engine.aclose()
    assert not _holds(db_path, b"ghp_s3cr3t")


def _holds(path: Path, secret: bytes) -> bool:
    return secret in path.read_bytes()


TOKEN_HEADER = base64.b64encode(b"x-access-token:ghp_s3cr3t").decode()


def test_a_token_reaches_git_as_an_http_header_of_its_process_only() -> None:
    env = _git_env("ghp_s3cr3t")
    header = subprocess.run(
        ["git", "config", "--get", "http.extraHeader"], env=env, capture_output=True, text=True, check=True
    )
    assert header.stdout.strip() == f"Authorization: Basic {TOKEN_HEADER}"
    assert TOKEN_HEADER not in " ".join(os.environ.values())  # only that process's environment holds it


async def test_a_token_is_kept_nowhere(db_path: Path, workspace: Path, origin: tuple[str, str, str]) -> None:
    url, _, _ = origin
    engine, _, _ = engine_over(db_path, workspace, [ScriptedResponse(steps=[ScriptedText(text="ok")])])
    session = engine.sessions.create(
        agent=engine.agents.create(name="a", model="scripted").id,
        resources=[GitRepository(url=url, authorization_token="ghp_s3cr3t")],
    )
    result = await session.ask("go")
    assert result.stop_reason == ev.EndTurn()
    clone = workspace / "project"
    assert (clone / "README.md").read_text() == "version two\n"
    for path in clone.joinpath(".git").rglob("*"):
        if path.is_file():
            assert not _holds(path, b"ghp_s3cr3t") and not _holds(path, TOKEN_HEADER.encode())
    await engine.aclose()
    assert not _holds(db_path, b"ghp_s3cr3t")


async def test_an_uploaded_file_is_mounted_and_read(db_path: Path, workspace: Path, tmp_path: Path) -> None:
    source = tmp_path / "sales.csv"
    source.write_text("month,total\njan,10\n")
    script: list[ScriptedResponse] = []  # filled once the file has its id
    engine, _, _ = engine_over(db_path, workspace, script)
    file_id = engine.files.upload(source)
    source.write_text("changed after the upload\n")  # the store kept its own copy
    upload = engine.files.get(file_id)
    assert (upload.filename, upload.size) == ("sales.csv", 19) and upload.path.is_relative_to(db_path.parent)
    script.extend(_reads(f"uploads/{file_id}", "data/input.csv"))
    session = engine.sessions.create(
        agent=engine.agents.create(name="a", model="scripted").id,
        resources=[
            {"type": "file", "file_id": file_id},
            {"type": "file", "file_id": file_id, "mount_path": "data/input.csv"},
        ],
    )
    result = await session.ask("read the uploads")
    answers = [text_of(e) for e in result.events if isinstance(e, ev.AgentToolResult)]
    assert len(answers) == 2 and all("jan,10" in a for a in answers)
    assert engine.files.list() == [upload]
    await engine.aclose()


async def test_a_missing_upload_or_a_path_outside_the_workspace_fails_the_mount(
    db_path: Path, workspace: Path, tmp_path: Path
) -> None:
    engine, _, _ = engine_over(db_path, workspace)
    agent = engine.agents.create(name="a", model="scripted")
    gone = engine.sessions.create(agent=agent.id, resources=[{"type": "file", "file_id": "file_missing"}])
    with pytest.raises(ResourceMountError, match="no uploaded file 'file_missing'"):
        gone.mount()
    upload = tmp_path / "u.txt"
    upload.write_text("u")
    file_id = engine.files.upload(upload)
    outside = engine.sessions.create(
        agent=agent.id, resources=[{"type": "file", "file_id": file_id, "mount_path": "../escaped.txt"}]
    )
    with pytest.raises(ResourceMountError, match="not inside the workspace"):
        outside.mount()
    assert not (tmp_path / "escaped.txt").exists()
    await engine.aclose()


def _memory_script(*calls: ScriptedToolCall) -> list[ScriptedResponse]:
    return [ScriptedResponse(steps=list(calls)), ScriptedResponse(steps=[ScriptedText(text="noted")])]


async def test_a_memory_store_is_read_and_written_through_the_memory_tools(db_path: Path, workspace: Path) -> None:
    script = _memory_script(
        ScriptedToolCall(name="memory_read", input={"path": "prefs/units.md"}),
        ScriptedToolCall(name="memory_write", input={"path": "projects/x.md", "content": "x ships in May"}),
        ScriptedToolCall(name="memory_list", input={}),
    )
    engine, provider, _ = engine_over(db_path, workspace, script)
    store = engine.memory_stores.create(name="team", description="what the team decided")
    engine.memory_stores.write(store.id, "prefs/units.md", "metric units")
    agent = engine.agents.create(name="a", model="scripted")
    session = engine.sessions.create(
        agent=agent.id,
        resources=[{"type": "memory_store", "memory_store_id": store.id, "instructions": "Check prefs first."}],
    )

    result = await session.ask("remember that x ships in May")

    answers = [text_of(e) for e in result.events if isinstance(e, ev.AgentToolResult)]
    assert answers[0] == "metric units" and answers[1].startswith("wrote projects/x.md")
    assert "prefs/units.md" in answers[2] and "projects/x.md" in answers[2]
    assert engine.memory_stores.read(store.id, "projects/x.md").content == "x ships in May"
    system = provider.requests[0].system or ""
    assert "# Memory" in system and f"- team (id {store.id}, read and write) — what the team decided" in system
    assert "Guidance: Check prefs first." in system
    await engine.aclose()
    with Engine(db_path) as reopened:  # the notes outlive the engine
        assert reopened.memory_stores.read(store.id, "projects/x.md").content == "x ships in May"


async def test_a_read_only_memory_store_refuses_writes(db_path: Path, workspace: Path) -> None:
    script = _memory_script(
        ScriptedToolCall(name="memory_write", input={"path": "prefs/units.md", "content": "imperial"}),
        ScriptedToolCall(name="memory_delete", input={"path": "prefs/units.md"}),
        ScriptedToolCall(name="memory_search", input={"query": "METRIC"}),
    )
    engine, provider, _ = engine_over(db_path, workspace, script)
    store = engine.memory_stores.create(name="policies")
    engine.memory_stores.write(store.id, "prefs/units.md", "metric units")
    session = engine.sessions.create(
        agent=engine.agents.create(name="a", model="scripted").id,
        resources=[{"type": "memory_store", "memory_store_id": store.id, "access": "read_only"}],
    )
    result = await session.ask("switch to imperial")
    results = [e for e in result.events if isinstance(e, ev.AgentToolResult)]
    assert [r.is_error for r in results] == [True, True, False]
    assert all("attached read_only" in text_of(r) for r in results[:2])
    assert "metric units" in text_of(results[2])
    assert engine.memory_stores.read(store.id, "prefs/units.md").content == "metric units"
    assert f"- policies (id {store.id}, read only)" in (provider.requests[0].system or "")
    await engine.aclose()


async def test_memory_tools_are_only_offered_where_a_store_is_attached(db_path: Path, workspace: Path) -> None:
    engine, provider, _ = engine_over(db_path, workspace)
    store = engine.memory_stores.create(name="m")
    agent = engine.agents.create(name="a", model="scripted")
    with_memory = engine.sessions.create(
        agent=agent.id, resources=[{"type": "memory_store", "memory_store_id": store.id}]
    )
    without = engine.sessions.create(agent=agent.id)
    await with_memory.ask("hi")
    await without.ask("hi")

    def names(request: ModelRequest) -> set[str]:
        return {t.name for t in request.tools}

    assert {"memory_read", "memory_write"} <= names(provider.requests[0])
    assert not {n for n in names(provider.requests[1]) if n.startswith("memory_")}
    await engine.aclose()


def test_memory_attachments_are_validated_when_the_session_is_made(db_path: Path, workspace: Path) -> None:
    engine, _, _ = engine_over(db_path, workspace)
    agent = engine.agents.create(name="a", model="scripted")
    store = engine.memory_stores.create(name="m")
    with pytest.raises(InvalidInputError, match="no memory store 'memstore_nope'"):
        engine.sessions.create(agent=agent.id, resources=[{"type": "memory_store", "memory_store_id": "memstore_nope"}])
    with pytest.raises(InvalidInputError, match="4096"):
        engine.sessions.create(
            agent=agent.id,
            resources=[{"type": "memory_store", "memory_store_id": store.id, "instructions": "x" * 4097}],
        )
    engine.tools = _PlainHost()
    with pytest.raises(ConfigurationError, match="ToolRegistry"):
        engine.sessions.create(agent=agent.id, resources=[{"type": "memory_store", "memory_store_id": store.id}])
    assert engine.sessions.list() == []
    engine.close()


class _PlainHost:
    """A tool host that is no ToolRegistry: it cannot take the memory tools."""

    def schemas(self, scope: str | None = None) -> list[ToolSchema]:
        return []

    def execution_mode(self, call: ToolCall) -> Literal["parallel", "exclusive"]:
        return "exclusive"

    async def execute(self, call: ToolCall, *, approver: object = None) -> ToolResult:
        return ToolResult.error("no tools")
