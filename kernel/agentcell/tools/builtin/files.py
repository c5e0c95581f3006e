"""File tools: read_file, write_file, edit_file, list_files and grep.

Every path goes through :meth:`ToolContext.path` right before it is opened, so under ``workspace-write``
nothing outside the workspace is read or written unless the user approved that call, and under
``read-only`` nothing is written at all, whatever the path spells (``..``, absolute, ``~``, symlinks).
Walks never follow symlinked directories, and skip symlinked files that lead out.
"""

from __future__ import annotations

import base64
import difflib
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from ...errors import OutsideWorkspaceError
from ...events import ImageBlock, ImageSource, TextBlock
from ..base import ToolResult
from ..definition import ToolContext, ToolDefinition
from ..file_access import file_access
from ..functions import function_tool
from ..permissions import PathUse

__all__ = ["file_tools"]

MAX_LINE_CHARS = 2000
MAX_FILE_BYTES = 10_000_000
MAX_IMAGE_BYTES = 5_000_000
_IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif"}
_IMAGE_TYPES[".webp"] = "image/webp"
_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})


def read_file(path: str, offset: int = 1, limit: int = 2000, *, ctx: ToolContext) -> ToolResult | str:
    """Read a text file (or an image) from the workspace, with line numbers.

    Args:
        path: The file, relative to the workspace.
        offset: The first line to show (1-based).
        limit: How many lines to show at most.
    """
    real = ctx.path(path, "read")
    if real.is_dir():
        return ToolResult.error(f"{path} is a directory; use list_files to see what it holds")
    media_type = _IMAGE_TYPES.get(real.suffix.lower())
    access = file_access(ctx.call.session_id)
    if media_type is None and access is not None and access.read_text is not None:
        try:
            text = access.read_text(real, ctx.call)
        except FileNotFoundError:
            return ToolResult.error(f"{path} does not exist")
        return _numbered(path, text.splitlines(), offset, limit)
    if not real.exists():
        return ToolResult.error(f"{path} does not exist")
    size = real.stat().st_size
    if media_type is not None and size <= MAX_IMAGE_BYTES:
        data = base64.b64encode(real.read_bytes()).decode("ascii")
        source = ImageSource(media_type=media_type, data=data)
        return ToolResult(content=(TextBlock(text=f"{path} ({size:,} bytes)"), ImageBlock(source=source)))
    if size > MAX_FILE_BYTES:
        return ToolResult.error(f"{path} has {size:,} bytes, more than read_file shows; use grep or bash")
    raw = real.read_bytes()
    if b"\0" in raw[:8192]:
        return f"{path} is a binary file of {size:,} bytes; it is not shown"
    return _numbered(path, raw.decode("utf-8", errors="replace").splitlines(), offset, limit)


def _numbered(path: str, lines: list[str], offset: int, limit: int) -> ToolResult | str:
    if not lines:
        return f"{path} is empty"
    first = max(offset, 1)
    chosen = lines[first - 1 : first - 1 + max(limit, 1)]
    if not chosen:
        return ToolResult.error(f"{path} has {len(lines)} lines; offset {offset} is past the end")
    shown = "\n".join(f"{number:>6}\t{_clip(line)}" for number, line in enumerate(chosen, start=first))
    last = first + len(chosen) - 1
    if last < len(lines):
        shown += f"\n(lines {first}-{last} of {len(lines)}; read on with offset={last + 1})"
    return shown


def write_file(path: str, content: str, *, ctx: ToolContext) -> str:
    """Write a text file in the workspace, replacing it if it exists and creating missing directories.

    Args:
        path: The file, relative to the workspace.
        content: The whole new content.
    """
    real = ctx.path(path, "edit")
    existed = real.exists()
    _write(real, content, ctx)
    verb = "overwrote" if existed else "created"
    return f"{verb} {path} ({len(content):,} characters)"


def edit_file(
    path: str, old_string: str, new_string: str, replace_all: bool = False, *, ctx: ToolContext
) -> ToolResult | str:
    """Replace an exact piece of text in a file and show the change as a unified diff.

    Args:
        path: The file, relative to the workspace.
        old_string: The exact text to replace; it must occur once unless replace_all is set.
        new_string: The text to put in its place.
        replace_all: Replace every occurrence instead of requiring exactly one.
    """
    real = ctx.path(path, "edit")
    access = file_access(ctx.call.session_id)
    reader = access.read_text if access is not None else None
    if reader is None and not real.is_file():
        return ToolResult.error(f"{path} does not exist; create it with write_file")
    if not old_string:
        return ToolResult.error("old_string is empty; use write_file to write a whole file")
    if old_string == new_string:
        return ToolResult.error("old_string and new_string are the same; nothing would change")
    try:
        before = reader(real, ctx.call) if reader is not None else real.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ToolResult.error(f"{path} does not exist; create it with write_file")
    count = before.count(old_string)
    if count == 0:
        return ToolResult.error(f"old_string was not found in {path}; read the file and copy the text exactly")
    if count > 1 and not replace_all:
        return ToolResult.error(
            f"old_string occurs {count} times in {path}; include more surrounding text to make it unique, "
            "or set replace_all"
        )
    after = before.replace(old_string, new_string)
    _write(real, after, ctx)
    diff = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in diff)


def list_files(pattern: str = "*", path: str = ".", limit: int = 1000, *, ctx: ToolContext) -> ToolResult | str:
    """List files and directories (directories end with '/') matching a glob pattern, sorted.

    Args:
        pattern: A glob relative to path: '*' is one level, '**/*.py' searches every level.
        path: The directory to list, relative to the workspace.
        limit: How many entries to show at most.
    """
    root = ctx.path(path, "read")
    if not root.is_dir():
        return ToolResult.error(f"{path} is not a directory")
    matcher = glob_regex(pattern)
    found: list[str] = []
    for relative, is_dir in _walk(root, recursive="**" in pattern or "/" in pattern):
        if matcher.match(relative):
            found.append(relative + "/" if is_dir else relative)
    found.sort()
    if not found:
        return f"nothing in {path} matches {pattern!r}"
    shown = "\n".join(found[:limit])
    if len(found) > limit:
        shown += f"\n({len(found) - limit:,} more entries not shown; narrow the pattern)"
    return shown


def grep(
    pattern: str,
    path: str = ".",
    glob: str | None = None,
    ignore_case: bool = False,
    limit: int = 200,
    *,
    ctx: ToolContext,
) -> ToolResult | str:
    """Search file contents with a regular expression; prints path:line:text for each matching line.

    Args:
        pattern: A Python regular expression.
        path: A file or directory to search, relative to the workspace.
        glob: Only search files whose path (relative to path) matches this glob, e.g. '**/*.py'.
        ignore_case: Match regardless of case.
        limit: How many matching lines to show at most.
    """
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        return ToolResult.error(f"invalid regular expression {pattern!r}: {exc}", "INVALID_INPUT")
    root = ctx.path(path, "read")
    if root.is_file():
        candidates: Iterator[tuple[Path, str]] = iter([(root, path)])
    elif root.is_dir():
        matcher = glob_regex(glob) if glob else None
        candidates = (
            (root / relative, relative)
            for relative, is_dir in _walk(root, recursive=True)
            if not is_dir and (matcher is None or matcher.match(relative))
        )
    else:
        return ToolResult.error(f"{path} does not exist")
    matches: list[str] = []
    more = 0
    for file, shown_as in candidates:
        for number, line in _search(file, regex, ctx):
            if len(matches) < limit:
                matches.append(f"{shown_as}:{number}:{_clip(line, 500)}")
            else:
                more += 1
    if not matches:
        return f"no match for {pattern!r} in {path}"
    text = "\n".join(matches)
    if more:
        text += f"\n({more:,} more matching lines not shown; narrow the search)"
    return text


# ---------------------------------------------------------------------------------------------- helpers


def _write(real: Path, content: str, ctx: ToolContext) -> None:
    """Write through the session's file access when it has one (an editor's buffers), else to the disk."""
    access = file_access(ctx.call.session_id)
    if access is not None and access.write_text is not None:
        access.write_text(real, content, ctx.call)
        return
    real.parent.mkdir(parents=True, exist_ok=True)
    real.write_text(content, encoding="utf-8")


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex for a glob over '/'-separated relative paths: ``*`` and ``?`` stay within one level,
    ``**/`` spans any number of levels (including none), ``[...]`` is a character class."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        char = pattern[i]
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            negate = body.startswith("!")
            body = re.escape(body[1:] if negate else body).replace(r"\-", "-")
            out.append(f"[{'^' if negate else ''}{body}]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return re.compile("".join(out) + r"\Z")


def _walk(root: Path, *, recursive: bool) -> Iterator[tuple[str, bool]]:
    """(relative posix path, is a directory) under ``root``, never descending symlinked directories."""
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS)
        base = Path(directory).relative_to(root)
        for name in dirnames:
            yield (base / name).as_posix(), True
        for name in sorted(filenames):
            yield (base / name).as_posix(), False
        if not recursive:
            return


def _search(file: Path, regex: re.Pattern[str], ctx: ToolContext) -> Iterator[tuple[int, str]]:
    try:
        real = ctx.path(file, "read")
        if real.stat().st_size > MAX_FILE_BYTES:
            return
        raw = real.read_bytes()
    except (OutsideWorkspaceError, OSError):
        # A symlink leading out, or a file that vanished or cannot be read: not part of this search.
        return
    if b"\0" in raw[:8192]:
        return
    for number, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), start=1):
        if regex.search(line):
            yield number, line


def _clip(line: str, limit: int = MAX_LINE_CHARS) -> str:
    return line if len(line) <= limit else line[:limit] + f"... ({len(line) - limit:,} more characters)"


def _uses(
    kind: Literal["read", "edit"], default: str | None = None
) -> Callable[[Mapping[str, Any]], Sequence[PathUse]]:
    def paths(arguments: Mapping[str, Any]) -> Sequence[PathUse]:
        value = arguments.get("path", default)
        # A missing or mistyped path fails the tool's own validation; there is nothing to judge here.
        return [(value, kind)] if isinstance(value, str) else []

    return paths


def file_tools() -> list[ToolDefinition]:
    """The file tools, ready to register."""
    return [
        function_tool(read_file, access={"read"}, paths=_uses("read"), parallel_safe=True, origin="builtin"),
        function_tool(write_file, access={"edit"}, paths=_uses("edit"), origin="builtin"),
        function_tool(edit_file, access={"edit"}, paths=_uses("edit"), origin="builtin"),
        function_tool(list_files, access={"read"}, paths=_uses("read", "."), parallel_safe=True, origin="builtin"),
        function_tool(grep, access={"read"}, paths=_uses("read", "."), parallel_safe=True, origin="builtin"),
    ]
