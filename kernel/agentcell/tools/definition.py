"""What a tool is to the registry, what it gets when it runs, and the records the pipeline produces."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias

from ..events import DeniedBy
from .base import Permission, ToolCall, ToolResult
from .permissions import Access, PathUse, PermissionPolicy

__all__ = [
    "ALLOW",
    "Allow",
    "ApprovalScope",
    "AroundHook",
    "Deny",
    "Guard",
    "GuardDecision",
    "Observer",
    "PostHook",
    "PreHook",
    "ScopeOf",
    "ToolContext",
    "ToolDefinition",
    "ToolFunction",
    "ToolOutcome",
]


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a running tool knows about its call and where it may reach."""

    call: ToolCall
    token: str
    """The registry's correlation token for this execution."""
    policy: PermissionPolicy
    outside_approved: bool = False
    """The user approved touching the paths outside the workspace that this call named."""

    @property
    def workspace(self) -> Path:
        return self.policy.workspace

    def path(self, path: str | os.PathLike[str], kind: Literal["read", "edit"]) -> Path:
        """Resolve a path the tool is about to touch; raises ``OutsideWorkspaceError`` when not permitted."""
        return self.policy.check(path, kind, approved=self.outside_approved)


ToolFunction: TypeAlias = Callable[[dict[str, Any], ToolContext], Any]
"""Runs a call: gets the input and the context, returns (or resolves to) a ToolResult, a string, content
blocks, or any value (shown with ``str``); raising makes an error result."""

ParallelClassifier: TypeAlias = Callable[[ToolCall], object]


@dataclass(frozen=True, slots=True)
class ApprovalScope:
    """What a user who answers "always" about an ``execute`` call agrees to, as the tool sees it."""

    keys: tuple[str, ...]
    """The rules an "always" answer makes (``bash:$ ls``); none: nothing is remembered, every call asks."""
    note: str = ""
    """Added to the reason the user reads when asked."""


ScopeOf: TypeAlias = Callable[[Mapping[str, Any], PermissionPolicy], ApprovalScope]


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolDefinition:
    """A tool as registered. Only ``name``, ``description`` and ``input_schema`` reach the model."""

    name: str
    run: ToolFunction
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    parallel_safe: bool | ParallelClassifier = False
    """True (or a classifier answering exactly True for a call) lets the call run beside others."""
    access: frozenset[Access] = frozenset()
    """What the tool touches; the permission preset decides from it (see ``permissions``)."""
    paths: Callable[[Mapping[str, Any]], Sequence[PathUse]] | None = None
    """The files a call would touch, from its raw input, for tools with ``read``/``edit`` access."""
    scope: ScopeOf | None = None
    """For an ``execute`` tool: what "always" covers for a call (by default the tool's ``name:execute``)."""
    timeout: float | None = None
    """Seconds after which the call is cancelled and answered with a ``TIMEOUT`` error."""
    title: str | None = None
    """A human title for presenters; never sent to the model."""
    origin: str = "local"
    """Where the tool comes from: ``local``, ``builtin``, ``function``, ``mcp``, or ``engine`` (the engine's
    own tools: threads, the advisor). Names containing ``__``
    are reserved for ``mcp`` tools (``<server>__<tool>``)."""


# ---------------------------------------------------------------------------------------------- guards


@dataclass(frozen=True, slots=True)
class Allow:
    """A guard's "no objection". It cannot overrule another guard's denial."""


@dataclass(frozen=True, slots=True)
class Deny:
    reason: str


ALLOW = Allow()
GuardDecision: TypeAlias = Allow | Deny
Guard: TypeAlias = Callable[[ToolCall], "str | GuardDecision | None"]
"""A synchronous, deny-only check: a returned string denies and is the reason the model and the user see;
``None`` (or ``ALLOW``) is no objection; ``Deny(reason)`` denies too. Anything else, or an exception, denies."""


# ---------------------------------------------------------------------------------------------- hooks

_PreAnswer: TypeAlias = ToolCall | ToolResult | None
PreHook: TypeAlias = Callable[[ToolCall], _PreAnswer | Awaitable[_PreAnswer]]
"""Runs before the guards, each on the previous one's call: return a changed call (same name), a result
that answers the call without running the tool, or None to leave it."""

AroundHook: TypeAlias = Callable[[ToolCall, Callable[[], Awaitable[ToolResult]]], Awaitable[ToolResult]]
"""Wraps the dispatch of an allowed call: ``await proceed()`` runs the rest (inner hooks, then the tool)."""

PostHook: TypeAlias = Callable[[ToolCall, ToolResult], ToolResult | Awaitable[ToolResult | None] | None]
"""Runs on the result, each on the previous one's: return a replacement or None to keep it."""


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """The final, frozen record of one execution: what ``execute`` returns and every observer receives."""

    token: str
    call: ToolCall
    """The call as executed (after the pre-execute hooks)."""
    definition: ToolDefinition | None
    """The definition that was visible and ran; None for an unknown tool. Presenters render from it."""
    result: ToolResult
    stage: Literal["visibility", "pre", "guard", "approval", "dispatch", "post", "interrupted"]
    """Where the pipeline decided the result: a failure names its stage, a success is ``post``."""
    permission: Permission | None = None
    """The preset's verdict before asking (None when the pipeline stopped before the permission check)."""
    approved: bool | None = None
    """The user's answer when they were asked; None when nobody was asked."""
    denied_by: DeniedBy | None = None
    """Who refused the call: ``guard``, ``preset``, ``user``, ``no-approver`` or ``approver`` (it failed)."""
    seconds: float = 0.0


Observer: TypeAlias = Callable[[ToolOutcome], None]
