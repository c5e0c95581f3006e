"""Fixtures for the tool tests: a workspace with a directory outside it, and registries under each preset."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agentcell.tools import PermissionPolicy, PermissionPreset, ToolRegistry


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "notes.txt").write_text("one\ntwo\nthree\n")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the workspace holding a secret that no confined tool may read or replace."""
    root = tmp_path / "outside"
    root.mkdir()
    (root / "secret.txt").write_text("the secret\n")
    return root


@pytest.fixture
def registry_for(workspace: Path) -> Callable[[PermissionPreset], ToolRegistry]:
    """A registry under ``preset`` over the workspace, with no permitted temp dirs (tmp_path is in one)."""

    def make(preset: PermissionPreset) -> ToolRegistry:
        return ToolRegistry(PermissionPolicy(preset, workspace, temp_dirs=()))

    return make


@pytest.fixture
def registry(registry_for: Callable[[PermissionPreset], ToolRegistry]) -> ToolRegistry:
    return registry_for("workspace-write")
