"""agentcell: a Jupyter kernel in which every notebook cell is a turn of an AI agent.

The public API. The engine (agents, sessions, the event log, providers, tools) imports nothing from
Jupyter; the kernel and the widgets build on it. Names load on first use, so that starting the kernel (which
imports this package) does not pay for the engine until a cell needs it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .agents import UNSET, Agent, AgentRef, CustomTool, McpServer, MultiAgent, ToolFilter
    from .engine.core import Engine
    from .engine.outcomes import OutcomeSpec
    from .engine.threads import ThreadInfo
    from .errors import (
        AgentCellError,
        AgentNotFoundError,
        AgentVersionNotFoundError,
        ConfigurationError,
        InvalidInputError,
        NotFoundError,
        ProviderAuthError,
        ProviderConnectionError,
        ProviderError,
        ProviderProtocolError,
        ProviderStatusError,
        ResourceMountError,
        SessionBusyError,
        SessionNotFoundError,
        SessionTerminatedError,
        StoreError,
        StoreVersionError,
        ToolRegistrationError,
        UserError,
    )
    from .events import Event, FileRubric, Outcome, StreamItem, TextBlock, TextRubric
    from .files import UploadedFile
    from .memory import MemoryNote, MemoryStore
    from .providers._http import RetryPolicy
    from .providers.anthropic import AnthropicProvider
    from .providers.base import ModelConfig, ModelRequest, Provider
    from .providers.defaults import default_model
    from .providers.local import LocalProvider
    from .providers.openai import OpenAIProvider
    from .providers.scripted import (
        ScriptedDelay,
        ScriptedError,
        ScriptedProvider,
        ScriptedResponse,
        ScriptedText,
        ScriptedThinking,
        ScriptedToolCall,
    )
    from .resources import FileResource, GitRepository, MemoryStoreResource
    from .sessions import CustomToolResult, Session, SessionStats, ToolChoice, TurnResult
    from .store import SQLiteStore, Store
    from .tools.approvals import ApprovalBroker
    from .tools.base import ToolCall, ToolResult
    from .tools.definition import ALLOW, Deny, ToolContext, ToolDefinition
    from .tools.functions import tool, untool
    from .tools.permissions import PermissionPolicy
    from .tools.registry import ToolRegistry, default_registry
    from .usage import Budget, Usage


_LAZY: dict[str, str] = {
    "ALLOW": ".tools.definition",
    "ApprovalBroker": ".tools.approvals",
    "Deny": ".tools.definition",
    "PermissionPolicy": ".tools.permissions",
    "ToolContext": ".tools.definition",
    "ToolDefinition": ".tools.definition",
    "ToolRegistrationError": ".errors",
    "ToolRegistry": ".tools.registry",
    "default_registry": ".tools.registry",
    "tool": ".tools.functions",
    "untool": ".tools.functions",
    "AnthropicProvider": ".providers.anthropic",
    "LocalProvider": ".providers.local",
    "OpenAIProvider": ".providers.openai",
    "RetryPolicy": ".providers._http",
    "default_model": ".providers.defaults",
    "Agent": ".agents",
    "AgentCellError": ".errors",
    "AgentNotFoundError": ".errors",
    "AgentVersionNotFoundError": ".errors",
    "Budget": ".usage",
    "ConfigurationError": ".errors",
    "CustomTool": ".agents",
    "CustomToolResult": ".sessions",
    "Engine": ".engine.core",
    "Event": ".events",
    "FileResource": ".resources",
    "GitRepository": ".resources",
    "InvalidInputError": ".errors",
    "McpServer": ".agents",
    "MemoryStoreResource": ".resources",
    "ModelConfig": ".providers.base",
    "ModelRequest": ".providers.base",
    "NotFoundError": ".errors",
    "Provider": ".providers.base",
    "ProviderAuthError": ".errors",
    "ProviderConnectionError": ".errors",
    "ProviderError": ".errors",
    "ProviderProtocolError": ".errors",
    "ProviderStatusError": ".errors",
    "SQLiteStore": ".store",
    "ScriptedDelay": ".providers.scripted",
    "ScriptedError": ".providers.scripted",
    "ScriptedProvider": ".providers.scripted",
    "ScriptedResponse": ".providers.scripted",
    "ScriptedText": ".providers.scripted",
    "ScriptedThinking": ".providers.scripted",
    "ScriptedToolCall": ".providers.scripted",
    "Session": ".sessions",
    "SessionBusyError": ".errors",
    "SessionNotFoundError": ".errors",
    "SessionStats": ".sessions",
    "SessionTerminatedError": ".errors",
    "Store": ".store",
    "StoreError": ".errors",
    "StoreVersionError": ".errors",
    "StreamItem": ".events",
    "TextBlock": ".events",
    "ToolCall": ".tools.base",
    "ToolFilter": ".agents",
    "ToolResult": ".tools.base",
    "ToolChoice": ".sessions",
    "TurnResult": ".sessions",
    "UNSET": ".agents",
    "Usage": ".usage",
    "UserError": ".errors",
    "AgentRef": ".agents",
    "MultiAgent": ".agents",
    "OutcomeSpec": ".engine.outcomes",
    "ThreadInfo": ".engine.threads",
    "FileRubric": ".events",
    "Outcome": ".events",
    "TextRubric": ".events",
    "UploadedFile": ".files",
    "MemoryNote": ".memory",
    "MemoryStore": ".memory",
    "ResourceMountError": ".errors",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentcell' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext agentcell``: the magics and ``%%agent`` in any IPython kernel."""
    from .kernel.extension import load

    load(ipython)  # type: ignore[arg-type]


def unload_ipython_extension(ipython: object) -> None:
    from .kernel.extension import unload

    unload(ipython)  # type: ignore[arg-type]


__all__ = [
    "ALLOW",
    "UNSET",
    "Agent",
    "AgentCellError",
    "AgentNotFoundError",
    "AgentRef",
    "AgentVersionNotFoundError",
    "AnthropicProvider",
    "ApprovalBroker",
    "Budget",
    "ConfigurationError",
    "CustomTool",
    "CustomToolResult",
    "Deny",
    "Engine",
    "Event",
    "FileResource",
    "FileRubric",
    "GitRepository",
    "InvalidInputError",
    "LocalProvider",
    "McpServer",
    "MemoryNote",
    "MemoryStore",
    "MemoryStoreResource",
    "ModelConfig",
    "ModelRequest",
    "MultiAgent",
    "NotFoundError",
    "OpenAIProvider",
    "Outcome",
    "OutcomeSpec",
    "PermissionPolicy",
    "Provider",
    "ProviderAuthError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderProtocolError",
    "ProviderStatusError",
    "ResourceMountError",
    "RetryPolicy",
    "SQLiteStore",
    "ScriptedDelay",
    "ScriptedError",
    "ScriptedProvider",
    "ScriptedResponse",
    "ScriptedText",
    "ScriptedThinking",
    "ScriptedToolCall",
    "Session",
    "SessionBusyError",
    "SessionNotFoundError",
    "SessionStats",
    "SessionTerminatedError",
    "Store",
    "StoreError",
    "StoreVersionError",
    "StreamItem",
    "TextBlock",
    "TextRubric",
    "ThreadInfo",
    "ToolCall",
    "ToolChoice",
    "ToolContext",
    "ToolDefinition",
    "ToolFilter",
    "ToolRegistrationError",
    "ToolRegistry",
    "ToolResult",
    "TurnResult",
    "UploadedFile",
    "Usage",
    "UserError",
    "__version__",
    "default_model",
    "default_registry",
    "load_ipython_extension",
    "tool",
    "unload_ipython_extension",
    "untool",
]
