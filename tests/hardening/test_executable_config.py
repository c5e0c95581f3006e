"""Executable configuration: the agent's tools plant code in .git, .envrc or .vscode for the user to run later.

A real git repository is the workspace. Under ``workspace-write`` each tool (``write_file``, ``edit_file``, the
python tool's own code, an approved ``bash`` command in its sandbox) tries to write a file that runs code at
the user's hand: ``.git/config`` with a ``core.fsmonitor`` command (it runs at the next ``git status``), a
``.git/hooks`` script, direnv's ``.envrc``, an editor's ``.vscode/tasks.json``, also through ``./``, ``..``,
a symlink and a nested repository. With nobody to approve, every write is refused, and the user's next real
``git status`` runs nothing planted. An approved write to ``.git`` through a file tool does happen (the
user said yes); under ``danger-full-access`` the same plants work, which proves each is real.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agentcell.tools import PermissionPolicy, PermissionPreset, ToolRegistry
from agentcell.tools.builtin import bash_tool, file_tools, python_tool

from ..tools._support import Approvals, make_call

PLANTED = "planted-marker"

TARGETS = {
    "git-config": ".git/config",
    "git-config-dot": "./.git/config",
    "git-config-dotdot": "sub/../.git/config",
    "git-hook": ".git/hooks/pre-commit",
    "git-through-symlink": "gitlink/config",
    "nested-repo": "sub/.git/config",
    "envrc": ".envrc",
    "vscode-tasks": ".vscode/tasks.json",
    "gitmodules": ".gitmodules",
}


def _git(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=workspace, capture_output=True, text=True, check=False)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    workspace = tmp_path / "repo"
    workspace.mkdir()
    assert _git(workspace, "init", "-q").returncode == 0
    (workspace / "sub").mkdir()
    assert _git(workspace / "sub", "init", "-q").returncode == 0
    (workspace / "gitlink").symlink_to(workspace / ".git")
    # The project's own: a command's sandbox keeps what exists read-only (a mount point must exist).
    (workspace / ".envrc").write_text("export A=1\n")
    (workspace / ".gitmodules").write_text("")
    (workspace / ".vscode").mkdir()
    return workspace


def _payload(repo: Path, target: str) -> str:
    marker = repo.parent / PLANTED
    if "config" in target:
        return f"[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch {marker}\n"
    return f"#!/bin/sh\ntouch {marker}\n"


def _registry(repo: Path, preset: PermissionPreset) -> ToolRegistry:
    registry = ToolRegistry(PermissionPolicy(preset, repo, temp_dirs=()))
    for definition in file_tools():
        registry.register(definition)
    registry.register(bash_tool())
    registry.register(python_tool({}))
    return registry


def _attempts(target: str, content: str) -> dict[str, tuple[str, dict[str, str]]]:
    escaped = content.replace("\\", "\\\\").replace("\n", "\\n").replace("'", "\\'")
    code = f"import os\nos.makedirs(os.path.dirname('{target}') or '.', exist_ok=True)\n"
    code += f"open('{target}', 'w').write('{escaped}')"
    command = f"mkdir -p \"$(dirname '{target}')\"; printf '%s' '{content}' > '{target}'"
    return {
        "write_file": ("write_file", {"path": target, "content": content}),
        "python": ("python", {"code": code}),
        "bash": ("bash", {"command": command}),
    }


def _planted(repo: Path, target: str, content: str) -> bool:
    path = repo / target
    return path.is_file() and path.read_text() == content


@pytest.mark.parametrize("tool", ["write_file", "python", "bash"])
@pytest.mark.parametrize("target", list(TARGETS))
async def test_nothing_that_runs_later_is_written_unasked(repo: Path, target: str, tool: str) -> None:
    path = TARGETS[target]
    content = _payload(repo, path)
    name, arguments = _attempts(path, content)[tool]
    registry = _registry(repo, "workspace-write")
    # bash asks in any case: the user approves the command, and its sandbox still refuses the write.
    approver = Approvals(True) if tool == "bash" else None
    await registry.execute(make_call(name, **arguments), approver=approver)
    assert not _planted(repo, path, content), f"{tool} wrote {path}"
    _git(repo, "status")
    _git(repo / "sub", "status")
    assert not (repo.parent / PLANTED).exists(), "git ran what the agent planted"


async def test_edit_file_cannot_change_git_config_unasked(repo: Path) -> None:
    registry = _registry(repo, "workspace-write")
    edit = make_call("edit_file", path=".git/config", old_string="[core]", new_string="[core]\n\tfsmonitor = x")
    result = await registry.execute(edit)
    assert result.denied_by == "no-approver" and "configuration that runs code later" in result.text_content
    assert "fsmonitor" not in (repo / ".git" / "config").read_text()


async def test_an_approved_write_to_git_happens(repo: Path) -> None:
    registry = _registry(repo, "workspace-write")
    approvals = Approvals(True)
    result = await registry.execute(
        make_call("write_file", path=".git/info/exclude", content="*.log\n"), approver=approvals
    )
    assert not result.is_error, result.text_content
    (asked,) = approvals.asked
    assert "configuration that runs code later" in asked.reason
    assert (repo / ".git" / "info" / "exclude").read_text() == "*.log\n"


@pytest.mark.parametrize("target", ["git-config", "git-hook", "envrc"])
async def test_full_access_plants_what_the_presets_hold_back(repo: Path, target: str) -> None:
    path = TARGETS[target]
    content = _payload(repo, path)
    await _registry(repo, "danger-full-access").execute(make_call("write_file", path=path, content=content))
    assert _planted(repo, path, content)
    if target == "git-config":
        _git(repo, "status")
        assert (repo.parent / PLANTED).exists()  # the plant is real: git ran it
