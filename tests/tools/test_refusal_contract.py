"""Why a call failed travels in the event: ``agent.tool_result`` carries the pipeline's ``error_code`` and,
for a refusal, who refused it — so no consumer has to guess from the result's words."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from agentcell import Engine, ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedToolCall
from agentcell import events as ev
from agentcell.errors import ApprovalUnavailable
from agentcell.tools import ApprovalDecision, ApprovalRequest, Deny, PermissionPolicy, PermissionPreset, ToolRegistry
from agentcell.tools.builtin import file_tools

Approver = Callable[[ApprovalRequest], Awaitable[bool | ApprovalDecision]]


async def _declines(_request: ApprovalRequest) -> ApprovalDecision:
    return ApprovalDecision(allow=False, message="not now")


async def _no_view(_request: ApprovalRequest) -> bool:
    raise ApprovalUnavailable("no notebook view could answer while this cell ran")


async def _breaks(_request: ApprovalRequest) -> bool:
    raise RuntimeError("the approval dialog crashed")


def _result(
    tmp_path: Path,
    registry: ToolRegistry,
    tool_input: dict[str, str],
    approver: Approver | None,
    preset: PermissionPreset = "workspace-write",
) -> ev.AgentToolResult:
    provider = ScriptedProvider(
        [
            ScriptedResponse(steps=[ScriptedToolCall(name="write_file", input=tool_input)]),
            ScriptedResponse(steps=[ScriptedText(text="done")]),
        ]
    )
    engine = Engine(tmp_path / "engine.db", providers={"scripted": provider}, tools=registry)
    session = engine.sessions.create(agent=engine.agents.create(name="writer", model="scripted").id, permissions=preset)
    session.approver = approver
    session.send_sync("write it")
    results = [e for e in session.events() if isinstance(e, ev.AgentToolResult)]
    engine.close()
    assert len(results) == 1
    return results[0]


@pytest.mark.parametrize(
    ("approver", "error_code", "denied_by"),
    [
        (None, "DENIED", "no-approver"),
        (_declines, "DECLINED", "user"),
        (_no_view, "DENIED", "no-view"),
        (_breaks, "APPROVAL_FAILED", "approver"),
    ],
)
def test_a_call_that_needed_approval_says_who_refused_it(
    tmp_path: Path, workspace: Path, approver: Approver | None, error_code: str, denied_by: str
) -> None:
    registry = ToolRegistry(PermissionPolicy("workspace-write", workspace, temp_dirs=()))
    registry.register_all(file_tools())
    result = _result(tmp_path, registry, {"path": "../outside.txt", "content": "x"}, approver)
    assert result.is_error
    assert (result.error_code, result.denied_by) == (error_code, denied_by)
    assert not (workspace.parent / "outside.txt").exists()


def test_a_guard_and_the_preset_are_told_apart(tmp_path: Path, workspace: Path) -> None:
    guarded = ToolRegistry(PermissionPolicy("workspace-write", workspace, temp_dirs=()))
    guarded.register_all(file_tools())
    guarded.guard(lambda call: Deny("no writes on Fridays") if call.name == "write_file" else None)
    by_guard = _result(tmp_path / "g", guarded, {"path": "a.txt", "content": "x"}, None)
    assert (by_guard.error_code, by_guard.denied_by) == ("DENIED", "guard")

    registry = ToolRegistry(PermissionPolicy("workspace-write", workspace, temp_dirs=()))
    registry.register_all(file_tools())
    by_preset = _result(tmp_path / "p", registry, {"path": "a.txt", "content": "x"}, None, preset="read-only")
    assert (by_preset.error_code, by_preset.denied_by) == ("DENIED", "preset")


def test_a_call_that_ran_carries_no_refusal(tmp_path: Path, workspace: Path) -> None:
    registry = ToolRegistry(PermissionPolicy("workspace-write", workspace, temp_dirs=()))
    registry.register_all(file_tools())
    ok = _result(tmp_path, registry, {"path": "a.txt", "content": "x"}, None)
    assert (ok.is_error, ok.error_code, ok.denied_by) == (False, None, None)
    assert (workspace / "a.txt").read_text() == "x"
