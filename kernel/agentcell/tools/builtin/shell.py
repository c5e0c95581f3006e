"""The ``bash`` tool: one command in a subprocess whose working directory is the workspace.

A command can reach anything the user can, so the tool declares ``execute``: the ``workspace-write``
preset asks before running it, ``read-only`` refuses it. What an approved command can then reach is the
sandbox's business (:mod:`..sandbox`, bubblewrap): under ``workspace-write`` it writes only in the workspace
and the temp directories (not ``.git``), sees no credential folder or key and has no network; under
``danger-full-access`` it runs as the user. Where the sandbox cannot start, the approval says so and no
"always" answer is remembered: every command asks. Otherwise "always" covers the command asked about, each
of its parts on its own (:mod:`..command_rules`), never every command.

Output (stdout and stderr interleaved) is kept up to a cap; a command that outlives its timeout, or a turn
that is interrupted, has its whole process group killed, and so do background processes that still hold
the output open once the shell has exited (``nohup server > log 2>&1 &`` keeps one running, outside the
sandbox only: a sandboxed command's processes end with it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..base import ToolResult
from ..command_rules import command_rule_keys
from ..definition import ApprovalScope, ToolContext, ToolDefinition
from ..functions import function_tool
from ..output import MAX_LOG_CHARS
from ..permissions import PermissionPolicy
from ..sandbox import sandbox_problem, sandboxed_command, sandboxed_environment

__all__ = ["bash_tool"]

DRAIN_SECONDS = 0.5
"""After the shell exits, how long its output may stay open (held by processes it started in the
background) before they are killed."""


class _Collector(asyncio.SubprocessProtocol):
    """Keeps the first ``cap`` bytes of the output and counts the rest. It hears of the shell's exit as
    soon as it happens: asyncio's ``Process.wait()`` waits for the pipes too, which a background process
    can hold open forever."""

    def __init__(self, cap: int, loop: asyncio.AbstractEventLoop) -> None:
        self.cap = cap
        self.kept = bytearray()
        self.dropped = 0
        self.exited: asyncio.Future[None] = loop.create_future()
        self.drained: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        chunk = data.encode() if isinstance(data, str) else data
        room = self.cap - len(self.kept)
        self.kept += chunk[:room]
        self.dropped += max(0, len(chunk) - room)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if not self.drained.done():
            self.drained.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def text(self) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        if self.dropped:
            text += f"\n[... {self.dropped:,} more bytes of output were not kept]"
        return text


async def _kill_group(pid: int) -> None:
    """SIGKILL the command's process group, then wait until it is gone."""
    _signal_group(pid)
    await _group_gone(pid)


def _signal_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _group_gone(pid: int) -> None:
    """Wait (a second at most) until no process of the group still runs: a killed process is not gone at
    once, and the call promises to leave nothing running."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 1.0
    # No event tells when a process we did not start ends: look again every 10 ms.
    while _group_runs(pid) and loop.time() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.01)


def _group_runs(pgid: int) -> bool:
    """Whether a process of the group still runs (zombies waiting to be reaped do not count)."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state, _ppid, pgrp = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue  # it ended while we looked
        if int(pgrp) == pgid and state not in ("Z", "X"):
            return True
    return False


def bash_tool(*, timeout: float = 120.0, max_timeout: float = 600.0, max_output: int = MAX_LOG_CHARS) -> ToolDefinition:
    """The ``bash`` tool; commands time out after ``timeout`` seconds unless the call asks for another
    limit (at most ``max_timeout``)."""

    async def bash(command: str, timeout_seconds: float | None = None, *, ctx: ToolContext) -> ToolResult:
        """Run a bash command in the workspace directory and return its output and exit status.

        Args:
            command: The command line, run with `bash -c`.
            timeout_seconds: Kill the command after this many seconds.
        """
        limit = min(timeout_seconds or timeout, max_timeout)
        loop = asyncio.get_running_loop()
        collector = _Collector(max_output, loop)
        argv = ["bash", "-c", command]
        sandboxed = sandbox_problem() is None and ctx.policy.preset != "danger-full-access"
        if sandboxed:
            argv = sandboxed_command(argv, ctx.policy, ctx.workspace)
        transport, _ = await loop.subprocess_exec(
            lambda: collector,
            *argv,
            cwd=ctx.workspace,
            env=sandboxed_environment(ctx.policy),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so a kill reaches what it started too
        )
        pid = transport.get_pid()
        try:
            try:
                async with asyncio.timeout(limit):
                    # Shielded: the timeout must cancel this wait, not the future the protocol resolves.
                    await asyncio.shield(collector.exited)
            except TimeoutError:
                await _kill_group(pid)
                await collector.exited
                await _drain(collector, pid)
                return ToolResult.error(f"{collector.text()}\n[killed after {limit:g} s]".lstrip(), "TIMEOUT")
            await _drain(collector, pid)
            if sandboxed:  # the sandbox's processes end with it, a moment after: the call leaves none behind
                await _group_gone(pid)
        except asyncio.CancelledError:
            _signal_group(pid)
            # Let the shell be reaped before the turn goes on: the interrupt leaves nothing running.
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(collector.exited)
                await asyncio.shield(_group_gone(pid))
            raise
        finally:
            transport.close()
        status = transport.get_returncode()
        text = collector.text() or "(no output)"
        if status != 0:
            return ToolResult.error(f"{text}\n[exit status {status}]", "NONZERO_EXIT")
        return ToolResult.text(text)

    return replace(function_tool(bash, access={"execute"}, origin="builtin"), scope=_approval_scope)


def _approval_scope(arguments: Mapping[str, Any], policy: PermissionPolicy) -> ApprovalScope:
    problem = sandbox_problem()
    if problem is not None and policy.preset != "danger-full-access":
        return ApprovalScope(
            (), f" (it would run unsandboxed, with your full rights: {problem}; so every command asks)"
        )
    # "Always" covers this command, part by part (tools/command_rules.py), never every command.
    return ApprovalScope(command_rule_keys(str(arguments.get("command", ""))))


async def _drain(collector: _Collector, pid: int) -> None:
    """Take the output still in the pipe. Background processes that hold it open past the grace period
    are killed with the group: the call would otherwise never end (redirect their output to keep them)."""
    try:
        async with asyncio.timeout(DRAIN_SECONDS):
            await asyncio.shield(collector.drained)
    except TimeoutError:
        await _kill_group(pid)
