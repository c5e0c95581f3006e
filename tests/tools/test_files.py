"""The file tools on real files, and every way out of the workspace tried under each preset."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from agentcell.events import ImageBlock
from agentcell.tools import ToolCall, ToolRegistry, ToolResult
from agentcell.tools.builtin import file_tools
from agentcell.tools.builtin.files import glob_regex

from ._support import Approvals, make_call


@pytest.fixture
def files(registry: ToolRegistry) -> ToolRegistry:
    for definition in file_tools():
        registry.register(definition)
    return registry


async def _run(registry: ToolRegistry, tool: str, approver: Any = None, **arguments: Any) -> ToolResult:
    return await registry.execute(make_call(tool, **arguments), approver=approver)


# ---------------------------------------------------------------------------------------------- reading


async def test_read_file_numbers_lines_and_reads_ranges(files: ToolRegistry, workspace: Path) -> None:
    (workspace / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    whole = await _run(files, "read_file", path="notes.txt")
    assert whole.text_content == "     1\tone\n     2\ttwo\n     3\tthree"
    part = await _run(files, "read_file", path="long.txt", offset=4, limit=2)
    assert part.text_content == "     4\tline 4\n     5\tline 5\n(lines 4-5 of 10; read on with offset=6)"
    past = await _run(files, "read_file", path="long.txt", offset=20)
    assert past.is_error and "offset 20 is past the end" in past.text_content


async def test_read_file_explains_what_it_cannot_show(files: ToolRegistry, workspace: Path) -> None:
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    (workspace / "empty.txt").write_text("")
    (workspace / "dir").mkdir()
    assert "binary file of 30 bytes" in (await _run(files, "read_file", path="blob.bin")).text_content
    assert (await _run(files, "read_file", path="empty.txt")).text_content == "empty.txt is empty"
    assert "is a directory" in (await _run(files, "read_file", path="dir")).text_content
    missing = await _run(files, "read_file", path="nope.txt")
    assert (missing.is_error, missing.text_content) == (True, "nope.txt does not exist")
    invalid = await _run(files, "read_file")
    assert invalid.error_code == "INVALID_INPUT" and "path: Field required" in invalid.text_content


async def test_read_file_returns_images_as_image_blocks(files: ToolRegistry, workspace: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
    (workspace / "plot.png").write_bytes(png)
    result = await _run(files, "read_file", path="plot.png")
    image = result.content[1]
    assert isinstance(image, ImageBlock)
    assert (image.source.media_type, base64.b64decode(image.source.data)) == ("image/png", png)


# ---------------------------------------------------------------------------------------------- writing


async def test_write_file_creates_directories_and_overwrites(files: ToolRegistry, workspace: Path) -> None:
    created = await _run(files, "write_file", path="src/pkg/mod.py", content="x = 1\n")
    assert created.text_content == "created src/pkg/mod.py (6 characters)"
    assert (workspace / "src/pkg/mod.py").read_text() == "x = 1\n"
    again = await _run(files, "write_file", path="src/pkg/mod.py", content="x = 2\n")
    assert again.text_content.startswith("overwrote")
    assert (workspace / "src/pkg/mod.py").read_text() == "x = 2\n"


async def test_edit_file_replaces_a_unique_string_and_shows_the_diff(files: ToolRegistry, workspace: Path) -> None:
    result = await _run(files, "edit_file", path="notes.txt", old_string="two", new_string="2")
    assert result.text_content == ("--- a/notes.txt\n+++ b/notes.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n")
    assert (workspace / "notes.txt").read_text() == "one\n2\nthree\n"


async def test_edit_file_refuses_missing_or_ambiguous_text(files: ToolRegistry, workspace: Path) -> None:
    (workspace / "dup.txt").write_text("a = 1\na = 1\n")
    missing = await _run(files, "edit_file", path="dup.txt", old_string="b = 2", new_string="c")
    assert missing.is_error and "was not found" in missing.text_content
    ambiguous = await _run(files, "edit_file", path="dup.txt", old_string="a = 1", new_string="a = 2")
    assert ambiguous.is_error and "occurs 2 times" in ambiguous.text_content
    assert (workspace / "dup.txt").read_text() == "a = 1\na = 1\n"
    every = await _run(files, "edit_file", path="dup.txt", old_string="a = 1", new_string="a = 2", replace_all=True)
    assert not every.is_error
    assert (workspace / "dup.txt").read_text() == "a = 2\na = 2\n"
    same = await _run(files, "edit_file", path="dup.txt", old_string="a", new_string="a")
    assert same.is_error and "the same" in same.text_content
    nofile = await _run(files, "edit_file", path="new.txt", old_string="a", new_string="b")
    assert nofile.is_error and "create it with write_file" in nofile.text_content


# ---------------------------------------------------------------------------------------------- finding


async def test_list_files_matches_globs(files: ToolRegistry, workspace: Path) -> None:
    for name in ("src/a.py", "src/deep/b.py", "src/c.txt", "README.md", ".git/config"):
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text("x")
    top = await _run(files, "list_files")
    assert top.text_content.splitlines() == ["README.md", "notes.txt", "src/"]
    python = await _run(files, "list_files", pattern="**/*.py")
    assert python.text_content.splitlines() == ["src/a.py", "src/deep/b.py"]
    inside = await _run(files, "list_files", pattern="*.py", path="src")
    assert inside.text_content == "a.py"
    limited = await _run(files, "list_files", pattern="**/*", limit=2)
    assert limited.text_content.endswith("(5 more entries not shown; narrow the pattern)")
    nothing = await _run(files, "list_files", pattern="*.rs")
    assert nothing.text_content == "nothing in . matches '*.rs'"


def test_glob_patterns_follow_path_levels() -> None:
    assert glob_regex("*.py").match("a.py") and not glob_regex("*.py").match("d/a.py")
    assert glob_regex("**/*.py").match("a.py") and glob_regex("**/*.py").match("d/e/a.py")
    assert glob_regex("[ab]?.txt").match("a1.txt") and not glob_regex("[!ab]?.txt").match("a1.txt")
    assert glob_regex("src/**").match("src/x/y") and not glob_regex("src/**").match("lib/x")


async def test_grep_finds_lines_with_filters(files: ToolRegistry, workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src/a.py").write_text("import os\nTODO: fix\n")
    (workspace / "src/b.txt").write_text("todo later\n")
    found = await _run(files, "grep", pattern="todo", ignore_case=True)
    assert found.text_content.splitlines() == ["src/a.py:2:TODO: fix", "src/b.txt:1:todo later"]
    only_py = await _run(files, "grep", pattern="(?i)todo", glob="**/*.py")
    assert only_py.text_content == "src/a.py:2:TODO: fix"
    one_file = await _run(files, "grep", pattern="o", path="notes.txt", limit=1)
    assert one_file.text_content == "notes.txt:1:one\n(1 more matching lines not shown; narrow the search)"
    bad = await _run(files, "grep", pattern="(")
    assert bad.error_code == "INVALID_INPUT"


# ---------------------------------------------------------------------------------------------- escapes


@pytest.fixture
def escapes(workspace: Path, outside: Path) -> dict[str, str]:
    """Paths that lead out of the workspace, each to an existing secret (or where a new file would go)."""
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    (workspace / "dangling.txt").symlink_to(outside / "created.txt")
    return {
        "dotdot": "../outside/secret.txt",
        "deep dotdot": "linkless/../../outside/secret.txt",
        "absolute": str(outside / "secret.txt"),
        "symlink out": "link.txt",
        "symlinked parent": "linkdir/secret.txt",
        "dangling symlink out": "dangling.txt",
    }


def _untouched(outside: Path) -> None:
    assert (outside / "secret.txt").read_text() == "the secret\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


ESCAPE_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {}),
    ("write_file", {"content": "owned\n"}),
    ("edit_file", {"old_string": "the secret", "new_string": "owned"}),
    ("list_files", {}),
    ("grep", {"pattern": "secret"}),
]


ESCAPES = ["dotdot", "deep dotdot", "absolute", "symlink out", "symlinked parent", "dangling symlink out"]


@pytest.mark.parametrize(
    "attempt", [(tool, extra, escape) for tool, extra in ESCAPE_CALLS for escape in ESCAPES], ids=str
)
async def test_no_escape_succeeds_under_workspace_write(
    files: ToolRegistry, escapes: dict[str, str], outside: Path, attempt: tuple[str, dict[str, Any], str]
) -> None:
    tool, extra, escape = attempt
    path = escapes[escape]
    unattended = await _run(files, tool, path=path, **extra)
    declining = Approvals(False)
    declined = await _run(files, tool, declining, path=path, **extra)
    for result in (unattended, declined):
        assert result.is_error, (tool, escape, result)
        assert "the secret" not in result.text_content
    assert unattended.error_code == "DENIED" and "outside the workspace" in unattended.text_content
    assert declined.error_code == "DECLINED" and len(declining.asked) == 1
    _untouched(outside)


async def test_walks_do_not_follow_links_out(files: ToolRegistry, escapes: dict[str, str], outside: Path) -> None:
    listed = await _run(files, "list_files", pattern="**/*")
    assert "linkdir/secret.txt" not in listed.text_content.splitlines()
    assert "linkdir/" in listed.text_content.splitlines()
    found = await _run(files, "grep", pattern="secret")
    assert found.text_content == "no match for 'secret' in ."


async def test_a_symlink_swapped_in_after_the_check_is_still_refused(
    files: ToolRegistry, workspace: Path, outside: Path
) -> None:
    swap = workspace / "swap.txt"
    swap.write_text("harmless\n")

    async def swap_in_a_link(call: ToolCall, proceed: Any) -> ToolResult:
        # Runs after the permission check allowed the in-workspace path.
        swap.unlink()
        swap.symlink_to(outside / "secret.txt")
        result: ToolResult = await proceed()
        return result

    files.around_dispatch(swap_in_a_link)
    result = await _run(files, "read_file", path="swap.txt")
    assert result.is_error and "OutsideWorkspaceError" in result.text_content
    assert "the secret" not in result.text_content


async def test_an_approved_call_may_reach_outside(files: ToolRegistry, outside: Path) -> None:
    approving = Approvals(True, True)
    read = await _run(files, "read_file", approving, path="../outside/secret.txt")
    assert read.text_content == "     1\tthe secret"
    wrote = await _run(files, "write_file", approving, path=str(outside / "approved.txt"), content="ok")
    assert not wrote.is_error and (outside / "approved.txt").read_text() == "ok"
    assert [r.call.name for r in approving.asked] == ["read_file", "write_file"]


async def test_read_only_never_writes_and_never_asks(registry_for: Any, workspace: Path) -> None:
    registry: ToolRegistry = registry_for("read-only")
    for definition in file_tools():
        registry.register(definition)
    approving = Approvals()
    written = await _run(registry, "write_file", approving, path="new.txt", content="x")
    edited = await _run(registry, "edit_file", approving, path="notes.txt", old_string="one", new_string="1")
    assert (written.error_code, edited.error_code) == ("DENIED", "DENIED")
    assert "read-only preset does not allow" in written.text_content
    assert approving.asked == []
    assert not (workspace / "new.txt").exists()
    assert (workspace / "notes.txt").read_text() == "one\ntwo\nthree\n"
    assert not (await _run(registry, "read_file", path="notes.txt")).is_error


async def test_danger_full_access_reaches_outside_without_asking(registry_for: Any, outside: Path) -> None:
    registry: ToolRegistry = registry_for("danger-full-access")
    for definition in file_tools():
        registry.register(definition)
    approving = Approvals()
    result = await _run(
        registry, "edit_file", approving, path=str(outside / "secret.txt"), old_string="the", new_string="a"
    )
    assert not result.is_error and approving.asked == []
    assert (outside / "secret.txt").read_text() == "a secret\n"
