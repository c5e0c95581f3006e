"""The interface between the turn loop and tools.

The runner hands each model tool call to a :class:`ToolHost` as a :class:`ToolCall` and records the
:class:`ToolResult` it returns. A host never raises for a failing tool: failures are results with
``is_error`` set.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from ..events import ContentBlock, DeniedBy, TextBlock, ToolDisplay
from ..providers.base import ToolSchema

if TYPE_CHECKING:
    from .definition import ToolDefinition
from ..records.common import PermissionPreset

__all__ = [
    "ApprovalDecision",
    "ApprovalRequest",
    "Approver",
    "ExecutionMode",
    "Permission",
    "ToolCall",
    "ToolHost",
    "ToolResult",
]

ExecutionMode = Literal["parallel", "exclusive"]
Permission = Literal["allow", "ask", "deny"]


class ToolCall(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    tool_use_id: str
    """The id of the ``agent.tool_use`` event."""
    call_id: str
    """The provider's id of the call."""
    name: str
    input: dict[str, Any]
    scope: str | None = None
    """The agent scope the call is made in (the agent id); None is the global view."""
    session_id: str = ""
    thread_id: str | None = None
    preset: PermissionPreset | None = None
    """The session's permission preset; None uses the registry's policy for the session."""
    token: str | None = None
    """The registry's correlation token for this execution, assigned before any hook or guard sees the call
    (the same one the tool's context and the outcome carry)."""


class ToolResult(BaseModel):
    # The content is a tuple so that a result handed to several observers cannot be changed by one of them.
    model_config = ConfigDict(frozen=True, extra="forbid")

    content: tuple[ContentBlock, ...] = ()
    is_error: bool = False
    error_code: str | None = None
    """A stable code for failures the pipeline produced (``UNKNOWN_TOOL``, ``DENIED``, ``TOOL_FAILED``...)."""
    full_text: str | None = None
    """The untruncated text output when ``content`` was shortened for the model (itself capped)."""
    denied_by: DeniedBy | None = None
    """Who refused the call, when the pipeline refused it rather than run it (set by the registry)."""
    displays: tuple[ToolDisplay, ...] = ()
    """Richer forms of some ``content`` blocks, for people (see ``events.ToolDisplay``)."""

    @classmethod
    def text(cls, text: str) -> ToolResult:
        return cls(content=(TextBlock(text=text),))

    @classmethod
    def error(cls, message: str, code: str = "TOOL_FAILED") -> ToolResult:
        return cls(content=(TextBlock(text=message),), is_error=True, error_code=code)

    @property
    def text_content(self) -> str:
        """The text blocks joined together (images left out)."""
        return "".join(block.text for block in self.content if isinstance(block, TextBlock))


class ApprovalRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    call: ToolCall
    reason: str
    """What the call would do that the permission preset does not allow by itself, in words for the user."""
    keys: tuple[str, ...] = ()
    """What an "always" answer is remembered under (e.g. ``bash:$ git status``); a later request whose keys were
    all answered "always" the same way is answered without asking."""
    preset: str = ""


class ApprovalDecision(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    allow: bool
    remember: Literal["once", "always"] = "once"
    message: str | None = None
    """The user's words to the model when they deny."""


Approver = Callable[[ApprovalRequest], Awaitable["bool | ApprovalDecision"]]
"""Asks the user; resolves to True (or an allowing decision) to let the call run."""


@runtime_checkable
class ToolHost(Protocol):
    def schemas(self, scope: str | None = None) -> list[ToolSchema]:
        """The tools the model sees in ``scope``."""

    def execution_mode(self, call: ToolCall) -> ExecutionMode:
        """``parallel`` only when the tool is declared safe to run beside others."""

    async def execute(
        self, call: ToolCall, *, approver: Approver | None = None, definition: ToolDefinition | None = None
    ) -> ToolResult:
        """Run the call through the pipeline; never raises for tool failures. ``definition``: run this tool,
        which the host does not hold (the engine's own tools), through the same pipeline."""
