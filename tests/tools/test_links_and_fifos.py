"""Issue 21, 2: hard links and FIFOs cannot get round workspace confinement or hang the file tools."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from agentcell.tools import PermissionPreset, ToolRegistry
from agentcell.tools.builtin import file_tools

from ._support import make_call


@pytest.fixture
def files(registry_for: Callable[[PermissionPreset], ToolRegistry]) -> ToolRegistry:
    registry = registry_for("workspace-write")
    registry.register_all(file_tools())
    return registry


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("read_file", {"path": "alias.txt"}),
        ("write_file", {"path": "alias.txt", "content": "rewritten"}),
        ("edit_file", {"path": "alias.txt", "old_string": "the secret", "new_string": "gone"}),
    ],
)
async def test_a_hard_link_to_a_file_outside_is_not_touched_unasked(
    files: ToolRegistry, workspace: Path, outside: Path, tool: str, arguments: dict[str, str]
) -> None:
    os.link(outside / "secret.txt", workspace / "alias.txt")
    result = await files.execute(make_call(tool, **arguments))
    assert result.is_error and result.denied_by in ("no-approver", None)
    assert "hard link" in result.text_content
    assert "the secret" not in result.text_content  # nothing of it was read either
    assert (outside / "secret.txt").read_text() == "the secret\n"


async def test_a_fifo_does_not_hang_read_file_or_grep(files: ToolRegistry, workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    (workspace / "notes.md").write_text("needle\n")
    read = await files.execute(make_call("read_file", path="pipe"))
    assert read.is_error and "not a regular file" in read.text_content
    found = await files.execute(make_call("grep", pattern="needle"))
    assert found.text_content == "notes.md:1:needle"
    wrote = await files.execute(make_call("write_file", path="pipe", content="x"))
    assert wrote.is_error and "not a regular file" in wrote.text_content


async def test_an_ordinary_file_inside_is_still_read_and_written(files: ToolRegistry, workspace: Path) -> None:
    assert not (await files.execute(make_call("write_file", path="mine.txt", content="hello"))).is_error
    assert "hello" in (await files.execute(make_call("read_file", path="mine.txt"))).text_content
