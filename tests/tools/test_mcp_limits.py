"""What an MCP server cannot hold: a call that never answers times out with a typed error (a setting says how
long), and Stop while a server starts ends its processes, so the next turn starts it afresh."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agentcell import Engine
from agentcell.records.agent import McpServer
from agentcell.tools import PermissionPreset, ToolRegistry
from agentcell.tools.mcp import McpTools

from ._support import NEVER_STARTING_SERVER, make_call, process_alive

SCOPE = "agent_limits"

HANGING_SERVER = """
import time
from mcp.server.mcpserver import MCPServer

server = MCPServer("slow")


@server.tool()
def hang() -> str:
    "Never answers."
    time.sleep(3600)
    return "never"


@server.tool()
def add(a: int, b: int) -> int:
    "Add two integers."
    return a + b


server.run("stdio")
"""


async def _server_pid(fifo: Path) -> int:
    """The pid the server writes once its process is up (a FIFO: the read waits for it)."""
    return int(await asyncio.to_thread(fifo.read_text))


@pytest.fixture
def free(registry_for: Callable[[PermissionPreset], ToolRegistry]) -> ToolRegistry:
    return registry_for("danger-full-access")


async def test_a_call_that_never_answers_times_out_as_the_setting_says(
    free: ToolRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "slow_server.py"
    script.write_text(HANGING_SERVER)
    monkeypatch.setenv("AGENTCELL_MCP_CALL_TIMEOUT", "1.5")
    server = McpServer(name="slow", command=[sys.executable, str(script)])
    async with McpTools(free, [server], scope=SCOPE, cwd=tmp_path) as servers:
        assert servers.call_timeout == 1.5
        started = asyncio.get_running_loop().time()
        result = await free.execute(make_call("slow__hang", scope=SCOPE))
        waited = asyncio.get_running_loop().time() - started
        assert result.is_error and result.error_code == "TIMEOUT", result.text_content
        assert "did not answer hang within 1.5 s" in result.text_content
        assert "AGENTCELL_MCP_CALL_TIMEOUT" in result.text_content
        assert waited < 5
        added = await free.execute(make_call("slow__add", scope=SCOPE, a=40, b=2))
        assert added.text_content == "42", "the server still answers the next call"


def test_a_call_timeout_that_is_no_number_of_seconds_stays_the_default(
    free: ToolRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    for bad in ("soon", "-1", "inf", "nan", "0"):
        monkeypatch.setenv("AGENTCELL_MCP_CALL_TIMEOUT", bad)
        assert McpTools(free, [], scope=SCOPE).call_timeout == 300.0


@pytest.mark.timeout(120)  # a FIFO read waits for its writer: a start that never spawns must not hang the run
async def test_stop_while_a_server_starts_ends_its_processes(db_path: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    os.mkfifo(pid_file)
    script = tmp_path / "never_starts.py"
    script.write_text(NEVER_STARTING_SERVER)
    with Engine(db_path) as engine:
        agent = engine.agents.create(
            name="a",
            model="scripted",
            mcp_servers=[McpServer(name="stuck", command=[sys.executable, str(script), str(pid_file)])],
        )
        starting = asyncio.ensure_future(engine.ensure_mcp(agent))
        pid = await _server_pid(pid_file)  # the server process is up (the relay's child)
        starting.cancel()  # what Stop does to the turn that was starting it
        with pytest.raises(asyncio.CancelledError):
            await starting
        try:
            assert not process_alive(pid), "the server's process outlived Stop"
        finally:
            if process_alive(pid):
                os.kill(pid, signal.SIGKILL)
        again = asyncio.ensure_future(engine.ensure_mcp(agent))
        second = await _server_pid(pid_file)  # the next turn starts it again: nothing took it as started
        again.cancel()
        with pytest.raises(asyncio.CancelledError):
            await again
        assert second != pid and not process_alive(second)
