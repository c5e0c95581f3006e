"""agentcell: a Jupyter kernel in which every notebook cell is a turn of an AI agent.

The public API. The engine (agents, sessions, the event log, providers, tools) imports nothing from
Jupyter; the kernel and the widgets build on it.
"""

from ._version import __version__
from .agents import UNSET, Agent, CustomTool, McpServer, ToolFilter
from .engine.core import Engine
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
    SessionBusyError,
    SessionNotFoundError,
    SessionTerminatedError,
    StoreError,
    StoreVersionError,
    UserError,
)
from .events import Event, StreamItem, TextBlock
from .providers.base import ModelConfig, ModelRequest, Provider
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
from .sessions import CustomToolResult, Session, SessionStats, TurnResult
from .store import SQLiteStore, Store
from .tools.base import ToolCall, ToolResult
from .usage import Budget, Usage

__all__ = [
    "UNSET",
    "Agent",
    "AgentCellError",
    "AgentNotFoundError",
    "AgentVersionNotFoundError",
    "Budget",
    "ConfigurationError",
    "CustomTool",
    "CustomToolResult",
    "Engine",
    "Event",
    "FileResource",
    "GitRepository",
    "InvalidInputError",
    "McpServer",
    "MemoryStoreResource",
    "ModelConfig",
    "ModelRequest",
    "NotFoundError",
    "Provider",
    "ProviderAuthError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderProtocolError",
    "ProviderStatusError",
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
    "ToolCall",
    "ToolFilter",
    "ToolResult",
    "TurnResult",
    "Usage",
    "UserError",
    "__version__",
]
