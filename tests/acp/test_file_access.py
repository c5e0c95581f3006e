"""The file tools' seam for hosts that hold files themselves (an editor's unsaved buffers): with a
FileAccess installed for a session, read_file, write_file and edit_file go through it, and only for that
session; permission checks still come first."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcell.tools import PermissionPolicy, ToolCall, ToolRegistry, ToolResult
from agentcell.tools.builtin import file_tools
from agentcell.tools.file_access import FileAccess, file_access, install_file_access


class Buffers:
    """An editor's view of files: what it serves for reads and what it was asked to write."""

    def __init__(self, files: dict[Path, str]) -> None:
        self.files = files
        self.reads: list[tuple[Path, str]] = []
        self.writes: list[tuple[Path, str, str]] = []

    def read(self, path: Path, call: ToolCall) -> str:
        self.reads.append((path, call.tool_use_id))
        if path not in self.files:
            raise FileNotFoundError(path)
        return self.files[path]

    def write(self, path: Path, content: str, call: ToolCall) -> None:
        self.writes.append((path, content, call.tool_use_id))
        self.files[path] = content


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "notes.txt").write_text("on disk\n")
    return root


@pytest.fixture
def registry(workspace: Path) -> ToolRegistry:
    registry = ToolRegistry(PermissionPolicy("workspace-write", workspace, temp_dirs=()))
    for definition in file_tools():
        registry.register(definition)
    return registry


@pytest.fixture
def buffers(workspace: Path) -> Iterator[Buffers]:
    editor = Buffers({workspace / "notes.txt": "unsaved one\nunsaved two\n"})
    dispose = install_file_access("sesn_editor", FileAccess(read_text=editor.read, write_text=editor.write))
    yield editor
    dispose()


async def _run(registry: ToolRegistry, tool: str, session_id: str = "sesn_editor", **arguments: Any) -> ToolResult:
    call = ToolCall(tool_use_id=f"sevt_{tool}", call_id="toolu_1", name=tool, input=arguments, session_id=session_id)
    return await registry.execute(call)


async def test_reads_come_from_the_editor_for_its_session_only(
    registry: ToolRegistry, buffers: Buffers, workspace: Path
) -> None:
    read = await _run(registry, "read_file", path="notes.txt")
    assert read.text_content == "     1\tunsaved one\n     2\tunsaved two"
    assert buffers.reads == [(workspace / "notes.txt", "sevt_read_file")]
    other = await _run(registry, "read_file", session_id="sesn_notebook", path="notes.txt")
    assert other.text_content == "     1\ton disk"
    missing = await _run(registry, "read_file", path="gone.txt")
    assert (missing.is_error, missing.text_content) == (True, "gone.txt does not exist")


async def test_writes_and_edits_go_to_the_editor_not_the_disk(
    registry: ToolRegistry, buffers: Buffers, workspace: Path
) -> None:
    written = await _run(registry, "write_file", path="new.txt", content="fresh\n")
    assert not written.is_error and not (workspace / "new.txt").exists()
    edited = await _run(registry, "edit_file", path="notes.txt", old_string="unsaved two", new_string="edited")
    assert "+edited" in edited.text_content
    assert buffers.files[workspace / "notes.txt"] == "unsaved one\nedited\n"
    assert (workspace / "notes.txt").read_text() == "on disk\n"
    assert [(p.name, tool) for p, _, tool in buffers.writes] == [
        ("new.txt", "sevt_write_file"),
        ("notes.txt", "sevt_edit_file"),
    ]


async def test_permission_checks_come_before_the_editor(registry: ToolRegistry, buffers: Buffers) -> None:
    outside = await _run(registry, "write_file", path="../escape.txt", content="x")
    assert outside.is_error and outside.error_code == "DENIED"
    assert buffers.writes == []


def test_disposing_restores_the_disk(buffers: Buffers) -> None:
    assert file_access("sesn_editor") is not None
    install_file_access("sesn_other", FileAccess())()
    assert file_access("sesn_other") is None
