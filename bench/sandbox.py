"""What the command sandbox adds to a ``bash`` call (issue 31).

The real ``bash`` tool through the registry, ``bash -c true`` under ``danger-full-access`` (no sandbox) and
under ``workspace-write`` (approved, then run in bubblewrap), alternating in one run so both see the same
machine; and the same two as bare processes (``subprocess.run``), to tell bubblewrap's own start from the
tool's. Target: the sandbox adds at most 30 ms to a call at p50.

Run: ``.venv/bin/python bench/sandbox.py [ROUNDS]``
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agentcell.tools import ApprovalDecision, ApprovalRequest, PermissionPolicy, ToolCall, ToolRegistry
from agentcell.tools.builtin import bash_tool
from agentcell.tools.sandbox import sandbox_problem, sandboxed_command, sandboxed_environment

ROUNDS = 200


async def _approve(request: ApprovalRequest) -> ApprovalDecision:
    return ApprovalDecision(allow=True)


def _call(n: int) -> ToolCall:
    return ToolCall(tool_use_id=f"sevt_{n}", call_id=f"toolu_{n}", name="bash", input={"command": "true"})


async def _tool_times(workspace: Path, rounds: int) -> dict[str, list[float]]:
    registries = {
        preset: ToolRegistry(PermissionPolicy(preset, workspace))
        for preset in ("danger-full-access", "workspace-write")
    }
    for registry in registries.values():
        registry.register(bash_tool())
    times: dict[str, list[float]] = {preset: [] for preset in registries}
    for n in range(rounds + 10):
        for preset, registry in registries.items():
            started = time.perf_counter()
            result = await registry.execute(_call(n), approver=_approve)
            elapsed = (time.perf_counter() - started) * 1000
            assert not result.is_error, result.text_content
            if n >= 10:  # warm-up
                times[preset].append(elapsed)
    return times


def _process_times(workspace: Path, rounds: int) -> dict[str, list[float]]:
    policy = PermissionPolicy("workspace-write", workspace)
    plain = ["bash", "-c", "true"]
    commands = {"bare bash": plain, "bare bwrap + bash": sandboxed_command(plain, policy, workspace)}
    env = sandboxed_environment(policy)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for n in range(rounds + 10):
        for name, argv in commands.items():
            started = time.perf_counter()
            subprocess.run(argv, cwd=workspace, env=env, check=True)
            if n >= 10:
                times[name].append((time.perf_counter() - started) * 1000)
    return times


def _row(name: str, values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    return f"| {name} | {statistics.median(values):.1f} | {p90:.1f} |"


def main() -> None:
    problem = sandbox_problem()
    if problem is not None:
        raise SystemExit(f"no sandbox here: {problem}")
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS
    with tempfile.TemporaryDirectory() as scratch:
        workspace = Path(scratch)
        tool = asyncio.run(_tool_times(workspace, rounds))
        bare = _process_times(workspace, rounds)
    print(f"{rounds} rounds, alternating\n\n| path | p50 (ms) | p90 (ms) |\n| --- | ---: | ---: |")
    print(_row("`bash` tool, danger-full-access (no sandbox)", tool["danger-full-access"]))
    print(_row("`bash` tool, workspace-write (bubblewrap)", tool["workspace-write"]))
    print(_row("bare `bash -c true`", bare["bare bash"]))
    print(_row("bare bwrap + `bash -c true`", bare["bare bwrap + bash"]))
    added = statistics.median(tool["workspace-write"]) - statistics.median(tool["danger-full-access"])
    print(f"\nthe sandbox adds {added:.1f} ms to a call at p50 (target <= 30)")


if __name__ == "__main__":
    main()
