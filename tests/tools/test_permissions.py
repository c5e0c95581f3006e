"""Presets decide allow / ask / deny from what a tool declares it touches; asking goes through the
approver; without one the answer is no."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from agentcell.errors import InvalidInputError
from agentcell.tools import (
    ApprovalDecision,
    PermissionPolicy,
    PermissionPreset,
    ToolContext,
    ToolDefinition,
    ToolRegistry,
    permissions,
)
from agentcell.tools.builtin import file_tools
from agentcell.tools.permissions import PathUse

from ._support import Approvals, make_call


def _path(arguments: Mapping[str, Any]) -> Sequence[PathUse]:
    return [(arguments["path"], "read")]


def _edit_path(arguments: Mapping[str, Any]) -> Sequence[PathUse]:
    return [(arguments["path"], "edit")]


def _register_kinds(registry: ToolRegistry, ran: list[str]) -> None:
    def run(arguments: dict[str, Any], ctx: ToolContext) -> str:
        ran.append(ctx.call.name)
        return "ran"

    registry.register(ToolDefinition(name="reader", run=run, access=frozenset({"read"}), paths=_path))
    registry.register(ToolDefinition(name="writer", run=run, access=frozenset({"edit"}), paths=_edit_path))
    registry.register(ToolDefinition(name="blind_writer", run=run, access=frozenset({"edit"})))
    registry.register(ToolDefinition(name="runner", run=run, access=frozenset({"execute"})))
    registry.register(ToolDefinition(name="fetcher", run=run, access=frozenset({"fetch"})))
    registry.register(ToolDefinition(name="plain", run=run))


INSIDE, OUTSIDE = "notes.txt", "../outside/secret.txt"

MATRIX: dict[PermissionPreset, dict[tuple[str, str | None], str]] = {
    "read-only": {
        ("reader", INSIDE): "allow",
        ("reader", OUTSIDE): "ask",
        ("writer", INSIDE): "deny",
        ("writer", OUTSIDE): "deny",
        ("blind_writer", None): "deny",
        ("runner", None): "deny",
        ("fetcher", None): "ask",
        ("plain", None): "allow",
    },
    "workspace-write": {
        ("reader", INSIDE): "allow",
        ("reader", OUTSIDE): "ask",
        ("writer", INSIDE): "allow",
        ("writer", OUTSIDE): "ask",
        ("blind_writer", None): "ask",
        ("runner", None): "ask",
        ("fetcher", None): "ask",
        ("plain", None): "allow",
    },
    "danger-full-access": {
        ("reader", INSIDE): "allow",
        ("reader", OUTSIDE): "allow",
        ("writer", INSIDE): "allow",
        ("writer", OUTSIDE): "allow",
        ("blind_writer", None): "allow",
        ("runner", None): "allow",
        ("fetcher", None): "allow",
        ("plain", None): "allow",
    },
}


@pytest.mark.parametrize("preset", list(MATRIX))
def test_each_preset_maps_each_access_to_its_answer(
    registry_for: Callable[[PermissionPreset], ToolRegistry], outside: Path, preset: PermissionPreset
) -> None:
    registry = registry_for(preset)
    _register_kinds(registry, [])
    seen = {}
    for tool, path in MATRIX[preset]:
        call = make_call(tool, **({"path": path} if path is not None else {}))
        seen[tool, path] = registry.evaluate_permission(call)
    assert seen == MATRIX[preset]


@pytest.mark.parametrize("preset", list(MATRIX))
async def test_without_an_approver_asking_means_no_and_deny_never_asks(
    registry_for: Callable[[PermissionPreset], ToolRegistry], outside: Path, preset: PermissionPreset
) -> None:
    registry = registry_for(preset)
    ran: list[str] = []
    _register_kinds(registry, ran)
    for (tool, path), answer in MATRIX[preset].items():
        ran.clear()
        declining = Approvals(False)
        call = make_call(tool, **({"path": path} if path is not None else {}))
        unattended = await registry.run(call)
        attended = await registry.run(call, approver=declining)
        if answer == "allow":
            assert ran == [tool, tool] and not unattended.result.is_error and not attended.result.is_error
            assert declining.asked == []
        else:
            assert ran == [], (tool, path)
            assert unattended.result.error_code == "DENIED"
            assert unattended.denied_by == ("no-approver" if answer == "ask" else "preset")
            assert attended.result.error_code == ("DECLINED" if answer == "ask" else "DENIED")
            assert len(declining.asked) == (1 if answer == "ask" else 0)


async def test_the_user_is_asked_and_their_answer_decides(registry: ToolRegistry, outside: Path) -> None:
    ran: list[str] = []
    _register_kinds(registry, ran)
    approvals = Approvals(True, False, ApprovalDecision(allow=False, message="not that file"))
    allowed = await registry.run(make_call("writer", path=OUTSIDE), approver=approvals)
    assert (allowed.result.is_error, allowed.approved, allowed.permission) == (False, True, "ask")
    declined = await registry.run(make_call("writer", path=OUTSIDE), approver=approvals)
    assert declined.result.error_code == "DECLINED"
    assert declined.result.text_content == "The user declined this tool call."
    assert (declined.denied_by, declined.approved) == ("user", False)
    said = await registry.execute(make_call("writer", path=OUTSIDE), approver=approvals)
    assert said.text_content == "The user declined this tool call. They said: not that file"
    assert ran == ["writer"]
    request = approvals.asked[0]
    assert request.preset == "workspace-write"
    assert str(outside / "secret.txt") in request.reason and "outside the workspace" in request.reason
    assert request.keys == (f"writer:edit:{outside}",)


async def test_an_approver_that_fails_refuses_the_call(registry: ToolRegistry) -> None:
    ran: list[str] = []
    _register_kinds(registry, ran)

    async def broken(request: Any) -> bool:
        raise ConnectionError("ui gone")

    outcome = await registry.run(make_call("runner"), approver=broken)
    assert outcome.result.error_code == "APPROVAL_FAILED"
    assert "ConnectionError: ui gone" in outcome.result.text_content
    assert ran == []


async def test_a_call_whose_paths_cannot_be_told_is_denied(registry: ToolRegistry) -> None:
    ran: list[str] = []
    _register_kinds(registry, ran)
    result = await registry.execute(make_call("writer"), approver=Approvals(True))
    assert result.error_code == "DENIED" and "cannot tell which files" in result.text_content
    assert ran == []


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("read_file", {"path": "a\x00b"}),
        ("write_file", {"path": "x\x00", "content": "x"}),
        ("list_files", {"path": "dir\x00"}),
    ],
)
@pytest.mark.parametrize("preset", list(MATRIX))
async def test_a_path_that_cannot_be_resolved_is_denied_not_raised(
    registry_for: Callable[[PermissionPreset], ToolRegistry],
    preset: PermissionPreset,
    tool: str,
    arguments: dict[str, Any],
) -> None:
    registry = registry_for(preset)
    for definition in file_tools():
        registry.register(definition)
    call = make_call(tool, **arguments)
    assert registry.evaluate_permission(call) == "deny"
    outcome = await registry.run(call, approver=Approvals(True))
    assert (outcome.result.error_code, outcome.denied_by) == ("DENIED", "preset")
    assert "cannot check the files" in outcome.result.text_content
    assert "null byte" in outcome.result.text_content


async def test_a_path_the_os_refuses_to_resolve_is_denied_not_raised(
    registry: ToolRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As for a path under /proc/1/root: resolving it raises PermissionError.
    def refuse(self: PermissionPolicy, path: object) -> Path:
        raise PermissionError(13, "Permission denied", "/proc/1/root")

    monkeypatch.setattr(PermissionPolicy, "resolve", refuse)
    for definition in file_tools():
        registry.register(definition)
    call = make_call("read_file", path="/proc/1/root/etc/passwd")
    assert registry.evaluate_permission(call) == "deny"
    result = await registry.execute(call)
    assert result.error_code == "DENIED" and "PermissionError" in result.text_content


def test_a_reason_about_reading_says_read(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No preset asks about reads inside the workspace today; one that did must not call them writes.
    asking = {**permissions._TABLE["read-only"], "read": ("ask", "ask")}
    monkeypatch.setitem(permissions._TABLE, "read-only", asking)
    policy = PermissionPolicy("read-only", workspace, temp_dirs=())
    verdict = policy.evaluate("reader", frozenset({"read"}), [("notes.txt", "read")])
    assert verdict.permission == "ask"
    assert verdict.reason == f"reader would read {workspace / 'notes.txt'}"


async def test_a_session_may_have_its_own_policy(registry: ToolRegistry, workspace: Path) -> None:
    ran: list[str] = []
    _register_kinds(registry, ran)
    dispose = registry.set_policy(
        PermissionPolicy("danger-full-access", workspace, temp_dirs=()), session_id="sesn_free"
    )
    assert registry.evaluate_permission(make_call("runner", session_id="sesn_free")) == "allow"
    assert registry.evaluate_permission(make_call("runner", session_id="sesn_other")) == "ask"
    dispose()
    assert registry.evaluate_permission(make_call("runner", session_id="sesn_free")) == "ask"


def test_permitted_temp_dirs_count_as_inside(workspace: Path, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    policy = PermissionPolicy("workspace-write", workspace, temp_dirs=(scratch,))
    assert policy.evaluate("w", frozenset({"edit"}), [(str(scratch / "x"), "edit")]).permission == "allow"
    assert policy.evaluate("w", frozenset({"edit"}), [(str(tmp_path / "x"), "edit")]).permission == "ask"
    assert PermissionPolicy().temp_dirs == (Path(tempfile.gettempdir()).resolve(),)


def test_an_unknown_preset_is_refused(workspace: Path) -> None:
    with pytest.raises(InvalidInputError, match="unknown permission preset 'yolo'"):
        PermissionPolicy("yolo", workspace)  # type: ignore[arg-type]


async def test_a_call_carrying_its_sessions_preset_runs_under_it(registry: ToolRegistry, workspace: Path) -> None:
    ran: list[str] = []
    _register_kinds(registry, ran)
    free = make_call("runner").model_copy(update={"preset": "danger-full-access"})
    locked = make_call("writer", path=INSIDE).model_copy(update={"preset": "read-only"})
    assert not (await registry.execute(free)).is_error
    assert (await registry.execute(locked)).error_code == "DENIED"
    assert registry.evaluate_permission(make_call("writer", path=INSIDE)) == "allow"
    assert registry.policy_for(locked).workspace == workspace == registry.policy.workspace
    assert ran == ["runner"]
