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
    from .agents import AgentsAPI
    from .core import Engine
    from .engine.inputs import CustomToolResult, ToolChoice
    from .engine.outcomes import OutcomeSpec
    from .engine.result import TurnResult
    from .engine.stats import SessionStats
    from .engine.threads import ThreadInfo
    from .engine.workflows import WorkflowItem, WorkflowRun, WorkflowStepResult
    from .errors import (
        AgentCellError,
        AgentNotFoundError,
        AgentVersionNotFoundError,
        ApprovalUnavailable,
        BudgetExhaustedError,
        ConfigurationError,
        ContextWindowExceededError,
        ExternalAgentError,
        IncompleteToolCallError,
        InvalidInputError,
        MissingKeyError,
        NotFoundError,
        OutsideWorkspaceError,
        PermissionChangeRefused,
        ProviderAuthError,
        ProviderConnectionError,
        ProviderError,
        ProviderProtocolError,
        ProviderStatusError,
        ReplayMissError,
        ResourceMountError,
        SessionBusyError,
        SessionDrivenElsewhereError,
        SessionNotFoundError,
        SessionTerminatedError,
        SkillFormatError,
        StoreError,
        StoreVersionError,
        ToolRegistrationError,
        TurnError,
        TurnFailedError,
        TurnInterrupted,
        TurnSignal,
        UserError,
        WorkflowPlanError,
    )
    from .events import Event, FileRubric, Outcome, StreamItem, TextBlock, TextRubric
    from .files import FilesAPI
    from .memory import MemoryStoresAPI
    from .providers.anthropic import AnthropicProvider
    from .providers.base import ModelRequest, Provider
    from .providers.defaults import default_model
    from .providers.local import LocalProvider
    from .providers.openai import OpenAIProvider
    from .providers.retry import RetryPolicy
    from .providers.scripted import (
        ScriptedDelay,
        ScriptedError,
        ScriptedProvider,
        ScriptedResponse,
        ScriptedText,
        ScriptedThinking,
        ScriptedToolCall,
    )
    from .records.agent import Agent, AgentRef, CustomTool, McpServer, MultiAgent, ToolFilter
    from .records.common import UNSET, PermissionPreset
    from .records.files import UploadedFile
    from .records.memory import MemoryNote, MemoryStore
    from .records.model import ModelConfig
    from .records.notebook_context import NotebookContext
    from .records.resources import FileResource, GitRepository, MemoryStoreResource
    from .records.session import SessionRecord
    from .records.skill import PinnedSkill, Skill, SkillDiagnostic, SkillRef
    from .records.workflow import WorkflowPlan
    from .sessions import Session
    from .sessions_api import SessionsAPI
    from .skills.api import SkillsAPI
    from .store import SQLiteStore, Store
    from .store.postgres import PostgresStore
    from .tools.approvals import ApprovalBroker
    from .tools.base import ToolCall, ToolResult
    from .tools.definition import ALLOW, Deny, ToolContext, ToolDefinition
    from .tools.functions import tool, untool
    from .tools.permissions import PermissionPolicy
    from .tools.registry import ToolRegistry, default_registry
    from .usage import Budget, Usage


_LAZY: dict[str, str] = {
    "ALLOW": ".tools.definition",
    "UNSET": ".records.common",
    "Agent": ".records.agent",
    "AgentCellError": ".errors",
    "AgentNotFoundError": ".errors",
    "AgentRef": ".records.agent",
    "AgentVersionNotFoundError": ".errors",
    "AgentsAPI": ".agents",
    "AnthropicProvider": ".providers.anthropic",
    "ApprovalBroker": ".tools.approvals",
    "ApprovalUnavailable": ".errors",
    "Budget": ".usage",
    "BudgetExhaustedError": ".errors",
    "ConfigurationError": ".errors",
    "ContextWindowExceededError": ".errors",
    "CustomTool": ".records.agent",
    "CustomToolResult": ".engine.inputs",
    "Deny": ".tools.definition",
    "Engine": ".core",
    "Event": ".events",
    "ExternalAgentError": ".errors",
    "FileResource": ".records.resources",
    "FileRubric": ".events",
    "FilesAPI": ".files",
    "GitRepository": ".records.resources",
    "IncompleteToolCallError": ".errors",
    "InvalidInputError": ".errors",
    "LocalProvider": ".providers.local",
    "McpServer": ".records.agent",
    "MemoryNote": ".records.memory",
    "MemoryStore": ".records.memory",
    "MemoryStoreResource": ".records.resources",
    "MemoryStoresAPI": ".memory",
    "MissingKeyError": ".errors",
    "ModelConfig": ".records.model",
    "ModelRequest": ".providers.base",
    "MultiAgent": ".records.agent",
    "NotFoundError": ".errors",
    "NotebookContext": ".records.notebook_context",
    "OpenAIProvider": ".providers.openai",
    "Outcome": ".events",
    "OutcomeSpec": ".engine.outcomes",
    "OutsideWorkspaceError": ".errors",
    "PermissionChangeRefused": ".errors",
    "PermissionPolicy": ".tools.permissions",
    "PermissionPreset": ".records.common",
    "PinnedSkill": ".records.skill",
    "PostgresStore": ".store.postgres",
    "Provider": ".providers.base",
    "ProviderAuthError": ".errors",
    "ProviderConnectionError": ".errors",
    "ProviderError": ".errors",
    "ProviderProtocolError": ".errors",
    "ProviderStatusError": ".errors",
    "ReplayMissError": ".errors",
    "ResourceMountError": ".errors",
    "RetryPolicy": ".providers.retry",
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
    "SessionDrivenElsewhereError": ".errors",
    "SessionNotFoundError": ".errors",
    "SessionRecord": ".records.session",
    "SessionStats": ".engine.stats",
    "SessionTerminatedError": ".errors",
    "SessionsAPI": ".sessions_api",
    "Skill": ".records.skill",
    "SkillDiagnostic": ".records.skill",
    "SkillFormatError": ".errors",
    "SkillRef": ".records.skill",
    "SkillsAPI": ".skills.api",
    "Store": ".store",
    "StoreError": ".errors",
    "StoreVersionError": ".errors",
    "StreamItem": ".events",
    "TextBlock": ".events",
    "TextRubric": ".events",
    "ThreadInfo": ".engine.threads",
    "ToolCall": ".tools.base",
    "ToolChoice": ".engine.inputs",
    "ToolContext": ".tools.definition",
    "ToolDefinition": ".tools.definition",
    "ToolFilter": ".records.agent",
    "ToolRegistrationError": ".errors",
    "ToolRegistry": ".tools.registry",
    "ToolResult": ".tools.base",
    "TurnError": ".errors",
    "TurnFailedError": ".errors",
    "TurnInterrupted": ".errors",
    "TurnResult": ".engine.result",
    "TurnSignal": ".errors",
    "UploadedFile": ".records.files",
    "Usage": ".usage",
    "UserError": ".errors",
    "WorkflowItem": ".engine.workflows",
    "WorkflowPlan": ".records.workflow",
    "WorkflowPlanError": ".errors",
    "WorkflowRun": ".engine.workflows",
    "WorkflowStepResult": ".engine.workflows",
    "default_model": ".providers.defaults",
    "default_registry": ".tools.registry",
    "tool": ".tools.functions",
    "untool": ".tools.functions",
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
    "AgentsAPI",
    "AnthropicProvider",
    "ApprovalBroker",
    "ApprovalUnavailable",
    "Budget",
    "BudgetExhaustedError",
    "ConfigurationError",
    "ContextWindowExceededError",
    "CustomTool",
    "CustomToolResult",
    "Deny",
    "Engine",
    "Event",
    "ExternalAgentError",
    "FileResource",
    "FileRubric",
    "FilesAPI",
    "GitRepository",
    "IncompleteToolCallError",
    "InvalidInputError",
    "LocalProvider",
    "McpServer",
    "MemoryNote",
    "MemoryStore",
    "MemoryStoreResource",
    "MemoryStoresAPI",
    "MissingKeyError",
    "ModelConfig",
    "ModelRequest",
    "MultiAgent",
    "NotFoundError",
    "NotebookContext",
    "OpenAIProvider",
    "Outcome",
    "OutcomeSpec",
    "OutsideWorkspaceError",
    "PermissionChangeRefused",
    "PermissionPolicy",
    "PermissionPreset",
    "PinnedSkill",
    "PostgresStore",
    "Provider",
    "ProviderAuthError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderProtocolError",
    "ProviderStatusError",
    "ReplayMissError",
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
    "SessionDrivenElsewhereError",
    "SessionNotFoundError",
    "SessionRecord",
    "SessionStats",
    "SessionTerminatedError",
    "SessionsAPI",
    "Skill",
    "SkillDiagnostic",
    "SkillFormatError",
    "SkillRef",
    "SkillsAPI",
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
    "TurnError",
    "TurnFailedError",
    "TurnInterrupted",
    "TurnResult",
    "TurnSignal",
    "UploadedFile",
    "Usage",
    "UserError",
    "WorkflowItem",
    "WorkflowPlan",
    "WorkflowPlanError",
    "WorkflowRun",
    "WorkflowStepResult",
    "__version__",
    "default_model",
    "default_registry",
    "load_ipython_extension",
    "tool",
    "unload_ipython_extension",
    "untool",
]
