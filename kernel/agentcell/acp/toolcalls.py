"""How an agentcell tool call looks in an editor: its title, its ACP kind, the files it touches, its result."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    ImageContentBlock,
    TextContentBlock,
    ToolCallLocation,
    ToolKind,
)

from ..events import AgentToolResult, ImageBlock, TextBlock

__all__ = ["FILE_TOOLS", "WRITE_TOOLS", "kind_of", "locations_of", "result_content", "title_of"]

FILE_TOOLS = frozenset({"read_file", "write_file", "edit_file", "list_files", "grep"})
WRITE_TOOLS = frozenset({"write_file", "edit_file"})

_KINDS: dict[str, ToolKind] = {
    "read_file": "read",
    "list_files": "read",
    "grep": "search",
    "write_file": "edit",
    "edit_file": "edit",
    "bash": "execute",
    "python": "execute",
    "consult_advisor": "think",
    "activate_skill": "read",
    "memory_list": "read",
    "memory_read": "read",
    "memory_search": "search",
    "memory_write": "edit",
    "memory_delete": "delete",
}


def kind_of(name: str) -> ToolKind:
    if name in _KINDS:
        return _KINDS[name]
    tail = name.rsplit("__", 1)[-1].lower()  # an MCP tool: judge by its own name
    if "fetch" in tail or "http" in tail or "browse" in tail or "search_web" in tail or "web" in tail:
        return "fetch"
    return "other"


def _clip(text: str, limit: int = 80) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def title_of(name: str, arguments: Mapping[str, Any]) -> str:
    """A short human title: ``Read src/app.py``, ``Run `pytest -q```…"""
    path = str(arguments.get("path", "."))
    match name:
        case "read_file":
            return f"Read {path}"
        case "write_file":
            return f"Write {path}"
        case "edit_file":
            return f"Edit {path}"
        case "list_files":
            return f"List {path} ({arguments.get('pattern', '*')})"
        case "grep":
            return f"Search {_clip(str(arguments.get('pattern', '')), 40)!r} in {path}"
        case "bash":
            return f"Run `{_clip(str(arguments.get('command', '')))}`"
        case "python":
            return f"Run Python: {_clip(str(arguments.get('code', '')), 60)}"
        case "spawn_thread":
            return "Start a thread"
        case "wait_thread":
            return "Wait for a thread"
        case "consult_advisor":
            return "Consult the advisor"
        case "activate_skill":
            return f"Load the skill {arguments.get('name', '')}"
    if "__" in name:
        server, _, tool = name.partition("__")
        return f"{server}: {tool}"
    return name


def locations_of(name: str, arguments: Mapping[str, Any], workspace: Path) -> list[ToolCallLocation] | None:
    """The absolute path a file tool names (and the line read_file starts at), so the editor can follow."""
    if name not in FILE_TOOLS:
        return None
    raw = arguments.get("path", ".")
    if not isinstance(raw, str):
        return None
    path = os.path.normpath(workspace / Path(raw).expanduser())
    offset = arguments.get("offset")
    line = offset if name == "read_file" and isinstance(offset, int) and offset >= 1 else None
    return [ToolCallLocation(path=path, line=line)]


ToolContent = ContentToolCallContent | FileEditToolCallContent


def result_content(result: AgentToolResult) -> list[ToolContent]:
    """The result's text and images as tool call content."""
    content: list[ToolContent] = []
    for block in result.content:
        if isinstance(block, TextBlock) and block.text:
            content.append(
                ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=block.text))
            )
        elif isinstance(block, ImageBlock):
            image = ImageContentBlock(type="image", data=block.source.data, mime_type=block.source.media_type)
            content.append(ContentToolCallContent(type="content", content=image))
    return content
