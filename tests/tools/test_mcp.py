"""MCP servers as tools, against a real server subprocess (``mcp_server.py``) over stdio and HTTP."""

from __future__ import annotations

import asyncio
import base64
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agentcell.agents import McpServer
from agentcell.events import ImageBlock
from agentcell.tools import Preset, ToolRegistry, ToolResult
from agentcell.tools.mcp import McpTools

from ._support import Approvals, make_call

SERVER = Path(__file__).with_name("mcp_server.py")
SCOPE = "agent_mcp"


def _stdio(name: str) -> McpServer:
    return McpServer(name=name, command=[sys.executable, str(SERVER), "stdio"])


@pytest.fixture
def free(registry_for: Callable[[Preset], ToolRegistry]) -> ToolRegistry:
    return registry_for("danger-full-access")


async def _call(registry: ToolRegistry, tool: str, **arguments: Any) -> ToolResult:
    return await registry.execute(make_call(tool, scope=SCOPE, **arguments))


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


async def test_a_stdio_servers_tools_are_listed_called_and_removed(free: ToolRegistry, workspace: Path) -> None:
    async with McpTools(free, [_stdio("demo")], scope=SCOPE, cwd=workspace) as servers:
        (status,) = servers.statuses()
        assert (status.name, status.state, status.error) == ("demo", "running", None)
        names = ["demo__add", "demo__pid", "demo__pixel", "demo__fail", "demo__dotted_name", "demo__crash"]
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

        assert free.execution_mode(make_call("demo__pid", scope=SCOPE)) == "parallel"
        assert free.execution_mode(make_call("demo__add", scope=SCOPE)) == "exclusive"
        pid = int((await _call(free, "demo__pid")).text_content)
        assert _running(pid)
    assert free.schemas(SCOPE) == []
    assert not _running(pid)


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
    assert not _running(pid)


async def test_a_server_that_cannot_start_is_reported_and_the_others_start(free: ToolRegistry, workspace: Path) -> None:
    broken = McpServer(name="broken", command=[sys.executable, "-c", "import sys; sys.exit('no config file found')"])
    async with McpTools(free, [broken, _stdio("fine")], scope=SCOPE, cwd=workspace) as servers:
        failed, fine = servers.statuses()
        assert (failed.state, failed.tools) == ("failed", ())
        assert failed.error is not None and "no config file found" in failed.error
        assert fine.state == "running"
        assert not any(s.name.startswith("broken__") for s in free.schemas(SCOPE))
        assert (await _call(free, "fine__add", a=20, b=22)).text_content == "42"


@pytest.fixture
async def http_server(tmp_path: Path) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    with (tmp_path / "http-server.log").open("w") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable, str(SERVER), "http", stdout=asyncio.subprocess.PIPE, stderr=log
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
