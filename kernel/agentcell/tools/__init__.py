"""Tools: the interface the turn loop uses, the registry and its pipeline, permissions and approvals,
and Python functions as tools. Built-in tools live in ``agentcell.tools.builtin`` and MCP servers in
``agentcell.tools.mcp``.

Names load on first use: the turn loop imports ``agentcell.tools.base`` and should not pay for the rest.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .approvals import ApprovalAnswer, ApprovalBroker
    from .base import ApprovalDecision, ApprovalRequest, Approver, ToolCall, ToolHost, ToolResult
    from .definition import ALLOW, Allow, Deny, ToolContext, ToolDefinition, ToolOutcome
    from .functions import function_tool, tool, untool
    from .permissions import PERMISSION_PRESETS, PermissionPolicy, PermissionPreset
    from .registry import ToolRegistry, default_registry

_LAZY: dict[str, str] = {
    "ALLOW": ".definition",
    "PERMISSION_PRESETS": ".permissions",
    "Allow": ".definition",
    "ApprovalAnswer": ".approvals",
    "ApprovalBroker": ".approvals",
    "ApprovalDecision": ".base",
    "ApprovalRequest": ".base",
    "Approver": ".base",
    "Deny": ".definition",
    "PermissionPolicy": ".permissions",
    "PermissionPreset": ".permissions",
    "ToolCall": ".base",
    "ToolContext": ".definition",
    "ToolDefinition": ".definition",
    "ToolHost": ".base",
    "ToolOutcome": ".definition",
    "ToolRegistry": ".registry",
    "ToolResult": ".base",
    "default_registry": ".registry",
    "function_tool": ".functions",
    "tool": ".functions",
    "untool": ".functions",
}

__all__ = [
    "ALLOW",
    "PERMISSION_PRESETS",
    "Allow",
    "ApprovalAnswer",
    "ApprovalBroker",
    "ApprovalDecision",
    "ApprovalRequest",
    "Approver",
    "Deny",
    "PermissionPolicy",
    "PermissionPreset",
    "ToolCall",
    "ToolContext",
    "ToolDefinition",
    "ToolHost",
    "ToolOutcome",
    "ToolRegistry",
    "ToolResult",
    "default_registry",
    "function_tool",
    "tool",
    "untool",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentcell.tools' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
