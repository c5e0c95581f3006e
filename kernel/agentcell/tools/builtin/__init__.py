"""The built-in tools: ``python`` (over a namespace the host gives), file tools, and ``bash``."""

from __future__ import annotations

from typing import Any

from ..definition import ToolDefinition
from ..registry import Disposer, ToolRegistry
from .files import file_tools
from .python import PythonInterrupted, python_tool
from .shell import bash_tool

__all__ = [
    "PythonInterrupted",
    "bash_tool",
    "builtin_tools",
    "file_tools",
    "python_tool",
    "register_builtin_tools",
]


def builtin_tools(*, namespace: dict[str, Any] | None = None) -> list[ToolDefinition]:
    """The file tools and ``bash``, plus ``python`` when a namespace to run code in is given."""
    tools = [*file_tools(), bash_tool()]
    if namespace is not None:
        tools.insert(0, python_tool(namespace))
    return tools


def register_builtin_tools(
    registry: ToolRegistry, *, namespace: dict[str, Any] | None = None, scope: str | None = None
) -> Disposer:
    """Register :func:`builtin_tools` (globally unless ``scope``); returns one disposer for them all."""
    return registry.register_all(builtin_tools(namespace=namespace), scope=scope)
