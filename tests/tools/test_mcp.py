"""MCP servers as tools, against a real server subprocess (``mcp_server.py``) over stdio and HTTP."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp.types import Tool, ToolAnnotations

from agentcell import Engine
from agentcell.events import ImageBlock
from agentcell.records.agent import McpServer
from agentcell.tools import PermissionPreset, ToolRegistry, ToolResult
from agentcell.tools.mcp import McpConnection, McpTools, kernel_command

from ._support import Approvals, make_call, process_alive

SERVER = Path(__file__).with_name("mcp_server.py")
SCOPE = "agent_mcp"


def _stdio(name: str) -> McpServer:
    return McpServer(name=name, command=[sys.executable, str(SERVER), "stdio"])


@pytest.fixture
def free(registry_for: Callable[[PermissionPreset], ToolRegistry]) -> ToolRegistry:
    return registry_for("danger-full-access")


async def _call(registry: ToolRegistry, tool: str, **arguments: Any) -> ToolResult:
    return await registry.execute(make_call(tool, scope=SCOPE, **arguments))


async def test_a_stdio_servers_tools_are_listed_called_and_removed(free: ToolRegistry, workspace: Path) -> None:
    async with McpTools(free, [_stdio("demo")], scope=SCOPE, cwd=workspace) as servers:
        (status,) = servers.statuses()
        assert (status.name, status.state, status.error) == ("demo", "running", None)
        names = ["add", "pid", "pixel", "fail", "dotted_name", "huge", "crash"]
        names = [f"demo__{name}" for name in names]
        assert sorted(status.tools) == sorted(names)
        assert sorted(s.name for s in free.schemas(SCOPE)) == sorted(names)
        assert free.schemas() == [] and free.schemas("another_agent") == []
        add = free.get("demo__add", SCOPE)
        assert add is not None and add.description == "Add two integers."
        assert add.input_schema["required"] == ["a", "b"]

        assert (await _call(free, "demo__add", a=2, b=3)).text_content == "5"
        assert (await _call(free, "demo__dotted_name")).text_content == "dotted"
        failed = await _call(free, "demo__fail", reason="no luck")
        assert failed.is_error and "no luck" in failed.text_content
        wrong = await _call(free, "demo__add", a="two", b=3)
        assert wrong.is_error and "validation error" in wrong.text_content
        image = (await _call(free, "demo__pixel")).content[0]
        assert isinstance(image, ImageBlock) and image.source.media_type == "image/png"
        assert base64.b64decode(image.source.data).startswith(b"\x89PNG")

        # readOnlyHint is an untrusted hint: it makes nothing parallel unless annotations are trusted.
        assert free.execution_mode(make_call("demo__pid", scope=SCOPE)) == "exclusive"
        assert free.execution_mode(make_call("demo__add", scope=SCOPE)) == "exclusive"
        pid = int((await _call(free, "demo__pid")).text_content)
        assert process_alive(pid)
    assert free.schemas(SCOPE) == []
    assert not process_alive(pid)


async def test_mcp_tools_ask_before_running_unless_annotations_are_trusted(
    registry: ToolRegistry, workspace: Path
) -> None:
    async with McpTools(registry, [_stdio("demo")], scope=SCOPE, cwd=workspace):
        approvals = Approvals(False)
        result = await registry.execute(make_call("demo__pid", scope=SCOPE), approver=approvals)
        assert result.error_code == "DECLINED" and approvals.asked[0].keys == ("demo__pid:execute",)
    async with McpTools(registry, [_stdio("demo")], scope=SCOPE, cwd=workspace, trust_annotations=True):
        assert registry.evaluate_permission(make_call("demo__pid", scope=SCOPE)) == "allow"
        assert registry.evaluate_permission(make_call("demo__add", scope=SCOPE)) == "ask"
        assert registry.execution_mode(make_call("demo__pid", scope=SCOPE)) == "parallel"
        assert registry.execution_mode(make_call("demo__add", scope=SCOPE)) == "exclusive"


async def test_a_crashed_stdio_server_answers_with_errors_and_the_others_go_on(
    free: ToolRegistry, workspace: Path
) -> None:
    async with McpTools(free, [_stdio("doomed"), _stdio("steady")], scope=SCOPE, cwd=workspace) as servers:
        pid = int((await _call(free, "doomed__pid")).text_content)
        crashed = await _call(free, "doomed__crash")
        assert (crashed.is_error, crashed.error_code) == (True, "MCP_UNAVAILABLE")
        assert "'doomed' is not running" in crashed.text_content
        assert "about to crash" in crashed.text_content  # the end of its stderr
        again = await _call(free, "doomed__add", a=1, b=1)
        assert again.error_code == "MCP_UNAVAILABLE"
        assert (await _call(free, "steady__add", a=1, b=1)).text_content == "2"
        doomed, steady = servers.statuses()
        assert (doomed.state, steady.state) == ("crashed", "running")
        assert doomed.error is not None and "about to crash" in doomed.error
    assert not process_alive(pid)


async def test_a_server_that_cannot_start_is_reported_and_the_others_start(free: ToolRegistry, workspace: Path) -> None:
    broken = McpServer(name="broken", command=[sys.executable, "-c", "import sys; sys.exit('no config file found')"])
    async with McpTools(free, [broken, _stdio("fine")], scope=SCOPE, cwd=workspace) as servers:
        failed, fine = servers.statuses()
        assert (failed.state, failed.tools) == ("failed", ())
        assert failed.error is not None and "no config file found" in failed.error
        assert fine.state == "running"
        assert not any(s.name.startswith("broken__") for s in free.schemas(SCOPE))
        assert (await _call(free, "fine__add", a=20, b=22)).text_content == "42"


async def test_a_bare_python_command_runs_the_kernels_interpreter_not_the_one_on_path(
    free: ToolRegistry, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An unactivated virtualenv: the first `python` on PATH is another interpreter, without the mcp SDK.
    decoy = tmp_path / "elsewhere"
    decoy.mkdir()
    for name in ("python", "python3"):
        (decoy / name).write_text("#!/bin/sh\necho 'the wrong python' >&2\nexit 3\n")
        (decoy / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{decoy}:/usr/bin:/bin")
    servers = [McpServer(name=n, command=[n, str(SERVER), "stdio"]) for n in ("python", "python3")]
    async with McpTools(free, servers, scope=SCOPE, cwd=workspace) as running:
        assert [(s.state, s.error) for s in running.statuses()] == [("running", None)] * 2
        assert (await _call(free, "python3__add", a=2, b=3)).text_content == "5"


def test_a_bare_command_is_looked_up_on_path_then_beside_the_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_path, env_bin = tmp_path / "path", tmp_path / "env" / "bin"
    for folder, name in ((on_path, "served"), (env_bin, "served"), (env_bin, "console-script")):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("#!/bin/sh\n")
        (folder / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(on_path))
    monkeypatch.setattr(sys, "executable", str(env_bin / "python"))
    assert kernel_command("python") == str(env_bin / "python")
    assert kernel_command("served") == "served"  # PATH wins: what the user's shell would run
    assert kernel_command("console-script") == str(env_bin / "console-script")
    assert kernel_command("missing") == "missing"  # left for the spawn to report as not found
    assert kernel_command("./python") == "./python"


@pytest.fixture(params=["events"])
async def http_server(
    tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    answers = ["json"] if request.param == "json" else []
    with (tmp_path / "http-server.log").open("w") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable, str(SERVER), "http", *answers, stdout=asyncio.subprocess.PIPE, stderr=log
        )
    assert process.stdout is not None
    port = int(await process.stdout.readline())  # printed once the socket listens
    yield f"http://127.0.0.1:{port}/mcp", process
    if process.returncode is None:
        process.kill()
    await process.wait()


async def test_a_streamable_http_server_is_listed_called_and_crashes_cleanly(
    free: ToolRegistry, http_server: tuple[str, asyncio.subprocess.Process]
) -> None:
    url, process = http_server
    server = McpServer(name="web", type="http", url=url)
    async with McpTools(free, [server], scope=SCOPE) as servers:
        assert "web__add" in servers.statuses()[0].tools
        assert (await _call(free, "web__add", a=40, b=2)).text_content == "42"
        assert int((await _call(free, "web__pid")).text_content) == process.pid
        crashed = await _call(free, "web__crash")
        assert crashed.error_code == "MCP_UNAVAILABLE"
        assert (await _call(free, "web__add", a=1, b=1)).error_code == "MCP_UNAVAILABLE"
        assert servers.statuses()[0].state == "crashed"
    assert await process.wait() == 3
    assert free.schemas(SCOPE) == []


@pytest.mark.parametrize("http_server", ["events", "json"], indirect=True)
async def test_a_long_http_answer_is_cut_to_the_cap_with_a_note_and_kept_whole(
    free: ToolRegistry,
    http_server: tuple[str, asyncio.subprocess.Process],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As a stdio server's through the relay: 3 MB of text, in an event stream or a JSON body, reaches
    the tool result as the cap's worth with a note; the file it names holds the answer whole; a short
    answer of the same server is untouched."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    url, _ = http_server
    try:
        async with McpTools(free, [McpServer(name="web", type="http", url=url)], scope=SCOPE, max_result_bytes=100_000):
            result = await _call(free, "web__huge", kilobytes=3072)
            assert (await _call(free, "web__add", a=40, b=2)).text_content == "42"
    finally:
        tempfile.tempdir = None
    assert not result.is_error, result.text_content[:500]
    shown = result.text_content
    assert shown.startswith("0123456789abcdef" * 64) and len(shown) < 110_000
    # The SDK's server sends the text twice (as content and as structured content): over 6 MB in all.
    assert re.search(r"answered with 6,\d{3},\d{3} bytes, over the cap of 100,000 bytes per message", shown)
    (kept,) = (tmp_path / "agentcell-mcp-results").iterdir()
    assert f"kept in {kept}" in shown
    whole = json.loads(kept.read_bytes())
    assert len(whole["result"]["content"][0]["text"]) == 3072 * 1024 // 1025 * 1025


# ---------------------------------------------------------------------------------------------- without a server


def _listing(tools: dict[str, list[Tool]]) -> Callable[[McpConnection], Awaitable[list[Tool]]]:
    """A stand-in for ``McpConnection.start`` that lists ``tools[server name]`` and connects nothing."""

    async def start(self: McpConnection) -> list[Tool]:
        self.state = "running"
        return tools[self.server.name]

    return start


@pytest.mark.parametrize("trusted", [False, True])
async def test_read_only_hints_make_tools_parallel_only_when_trusted(
    free: ToolRegistry, monkeypatch: pytest.MonkeyPatch, trusted: bool
) -> None:
    reader = Tool(name="look", input_schema={"type": "object"}, annotations=ToolAnnotations(read_only_hint=True))
    monkeypatch.setattr(McpConnection, "start", _listing({"srv": [reader]}))
    async with McpTools(free, [_stdio("srv")], scope=SCOPE, trust_annotations=trusted):
        mode = free.execution_mode(make_call("srv__look", scope=SCOPE))
    assert mode == ("parallel" if trusted else "exclusive")


async def test_a_name_clash_across_servers_skips_the_tool_and_starts_the_rest(
    free: ToolRegistry, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Server "a" tool "b__c" and server "a__b" tool "c" are both "a__b__c".
    schema = {"type": "object"}
    listed = {
        "a": [Tool(name="b__c", input_schema=schema)],
        "a__b": [Tool(name="c", input_schema=schema), Tool(name="d", input_schema=schema)],
    }
    monkeypatch.setattr(McpConnection, "start", _listing(listed))
    servers = McpTools(free, [_stdio("a"), _stdio("a__b")], scope=SCOPE)
    statuses = await servers.start()
    assert [(s.name, s.state, s.tools) for s in statuses] == [
        ("a", "running", ("a__b__c",)),
        ("a__b", "running", ("a__b__d",)),
    ]
    assert "'c' of 'a__b' cannot be registered" in caplog.text
    assert sorted(s.name for s in free.schemas(SCOPE)) == ["a__b__c", "a__b__d"]
    await servers.stop()
    assert free.schemas(SCOPE) == []


def test_mcp_secrets_stay_out_of_snapshots_and_reprs_but_not_out_of_the_agent(engine: Engine, db_path: Path) -> None:
    servers = [
        McpServer(
            name="remote", type="http", url="https://mcp.example/", headers={"Authorization": "Bearer hdr-SECRET"}
        ),
        McpServer(name="local", command=["server"], env={"API_TOKEN": "env-SECRET"}),
    ]
    agent = engine.agents.create(name="a", model="scripted", mcp_servers=servers)
    assert "SECRET" not in repr(agent) and "SECRET" not in repr(agent.mcp_servers) and "SECRET" not in str(agent)
    snapshot = agent.snapshot()
    assert "SECRET" not in json.dumps(snapshot)
    assert [s["name"] for s in snapshot["mcp_servers"]] == ["remote", "local"]
    assert snapshot["mcp_servers"][0]["url"] == "https://mcp.example/"

    plain = engine.agents.create(name="b", model="scripted")
    updated = engine.agents.update(plain.id, mcp_servers=servers)
    session = engine.sessions.create(agent=plain.id, version=1)
    session.update(agent_version=updated.version)
    (event,) = session.events(types=["session.updated"])
    assert "SECRET" not in event.model_dump_json()

    # The stored version keeps them: a reopened engine can still start the servers.
    stored = Engine(db_path).agents.get(agent.id)
    assert stored.mcp_servers[0].headers == {"Authorization": "Bearer hdr-SECRET"}
    assert stored.mcp_servers[1].env == {"API_TOKEN": "env-SECRET"}


async def test_a_server_babbling_on_stdout_fails_fast_in_one_line(
    free: ToolRegistry, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    babble = "import time\nfor i in range(200): print('starting up, please wait', i, flush=True)\ntime.sleep(60)"
    noisy = McpServer(name="noisy", command=[sys.executable, "-c", babble])
    started = asyncio.get_running_loop().time()
    async with McpTools(free, [noisy, _stdio("fine")], scope=SCOPE, cwd=workspace) as servers:
        failed, fine = servers.statuses()
        assert failed.state == "failed" and fine.state == "running"
        assert failed.error is not None and "wrote something that is not JSON-RPC on its stdout" in failed.error
    assert asyncio.get_running_loop().time() - started < 15  # not the 30 s start timeout
    assert not [r for r in caplog.records if r.exc_info]  # no traceback per line
