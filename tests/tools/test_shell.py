"""The bash tool: a real subprocess in the workspace, with exit status, timeout, output cap and interrupt."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentcell.tools import PermissionPreset, ToolRegistry, ToolResult
from agentcell.tools.builtin import bash_tool

from ._support import Approvals, make_call, process_alive


@pytest.fixture
def shell(registry_for: Callable[[PermissionPreset], ToolRegistry]) -> ToolRegistry:
    registry = registry_for("danger-full-access")
    registry.register(bash_tool(max_output=2000))
    return registry


async def _bash(registry: ToolRegistry, command: str, **extra: Any) -> ToolResult:
    return await registry.execute(make_call("bash", command=command, **extra))


async def test_a_command_runs_in_the_workspace(shell: ToolRegistry, workspace: Path) -> None:
    result = await _bash(shell, "pwd; cat notes.txt; echo oops >&2")
    assert result.text_content == f"{workspace}\none\ntwo\nthree\noops\n"
    assert not result.is_error


async def test_a_failing_command_reports_its_exit_status(shell: ToolRegistry) -> None:
    result = await _bash(shell, "echo partial; exit 7")
    assert (result.is_error, result.error_code) == (True, "NONZERO_EXIT")
    assert result.text_content == "partial\n\n[exit status 7]"


async def test_output_beyond_the_cap_is_counted_not_kept(shell: ToolRegistry) -> None:
    result = await _bash(shell, "head -c 5000 /dev/zero | tr '\\0' x")
    assert result.text_content == "x" * 2000 + "\n[... 3,000 more bytes of output were not kept]"


async def test_a_command_past_its_timeout_is_killed_with_its_children(shell: ToolRegistry, tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    result = await _bash(shell, f"sleep 30 & echo $! > {marker}; echo started; wait", timeout_seconds=0.5)
    assert (result.is_error, result.error_code) == (True, "TIMEOUT")
    assert result.text_content == "started\n\n[killed after 0.5 s]"
    assert not process_alive(int(marker.read_text()))


async def test_an_interrupted_call_kills_the_command(shell: ToolRegistry, tmp_path: Path) -> None:
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    task = asyncio.create_task(_bash(shell, f"echo $$ > {fifo}; exec sleep 30"))
    # Opening the FIFO blocks until the command writes to it: the command is running when this returns.
    pid = int(await asyncio.to_thread(fifo.read_text))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not process_alive(pid)


async def test_background_processes_holding_the_output_do_not_hang_the_call(shell: ToolRegistry) -> None:
    result = await _bash(shell, "sleep 30 & echo done")
    assert result.text_content == "done\n"


async def test_bash_asks_under_workspace_write_and_is_refused_under_read_only(
    registry_for: Callable[[PermissionPreset], ToolRegistry], workspace: Path
) -> None:
    for preset, expected in (("workspace-write", "DECLINED"), ("read-only", "DENIED")):
        registry = registry_for(preset)  # type: ignore[arg-type]
        registry.register(bash_tool())
        approvals = Approvals(False)
        result = await registry.execute(make_call("bash", command="touch made"), approver=approvals)
        assert result.error_code == expected
        assert len(approvals.asked) == (1 if preset == "workspace-write" else 0)
    assert not (workspace / "made").exists()


def _running_with(argument: str) -> list[int]:
    """The processes whose command line holds ``argument``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if argument in entry.joinpath("cmdline").read_bytes().decode(errors="replace") and process_alive(
                    int(entry.name)
                ):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.fixture
def sandboxed(registry_for: Callable[[PermissionPreset], ToolRegistry]) -> ToolRegistry:
    """bash under workspace-write: approved, then run in the bubblewrap sandbox."""
    registry = registry_for("workspace-write")
    registry.register(bash_tool(max_output=2000))
    return registry


async def test_a_sandboxed_command_past_its_timeout_is_killed_with_its_children(sandboxed: ToolRegistry) -> None:
    command = "sleep 31.4159 & echo started; wait"
    result = await sandboxed.execute(make_call("bash", command=command, timeout_seconds=0.5), approver=Approvals(True))
    assert (result.error_code, result.text_content) == ("TIMEOUT", "started\n\n[killed after 0.5 s]")
    assert _running_with("31.4159") == []


async def test_an_interrupted_sandboxed_call_leaves_nothing_running(sandboxed: ToolRegistry, workspace: Path) -> None:
    task = asyncio.create_task(
        sandboxed.execute(make_call("bash", command="touch ready; exec sleep 32.718"), approver=Approvals(True))
    )
    while not (workspace / "ready").exists():  # noqa: ASYNC110 - the sandbox's own file is the only signal
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _running_with("32.718") == []


async def test_a_sandboxed_commands_background_processes_end_with_it(sandboxed: ToolRegistry) -> None:
    result = await sandboxed.execute(
        make_call("bash", command="nohup sleep 33.1 > /dev/null 2>&1 & echo done"), approver=Approvals(True)
    )
    assert result.text_content == "done\n"
    assert _running_with("33.1") == []
