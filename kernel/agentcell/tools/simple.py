"""A minimal tool host of Python callables: enough for the engine core and its tests.

Tools take keyword arguments matching their input schema and return a string (or raise). The full
registry with scopes, guards, policies and approvals lives in :mod:`agentcell.tools.registry`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..providers.base import ToolSchema
from .base import Approver, ExecutionMode, ToolCall, ToolResult

__all__ = ["SimpleTools"]


class SimpleTools:
    def __init__(self) -> None:
        self._tools: dict[str, tuple[ToolSchema, Callable[..., Any], bool]] = {}

    def add(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        input_schema: dict[str, Any] | None = None,
        parallel_safe: bool = False,
    ) -> Callable[[], None]:
        tool_name = name or fn.__name__
        schema = ToolSchema(
            name=tool_name,
            description=description or inspect.getdoc(fn) or "",
            input_schema=input_schema or {"type": "object", "properties": {}},
        )
        self._tools[tool_name] = (schema, fn, parallel_safe)

        def remove() -> None:
            if self._tools.get(tool_name, (None, None))[1] is fn:
                del self._tools[tool_name]

        return remove

    def schemas(self, scope: str | None = None) -> list[ToolSchema]:
        return [schema.model_copy(deep=True) for schema, _, _ in self._tools.values()]

    def execution_mode(self, call: ToolCall) -> ExecutionMode:
        entry = self._tools.get(call.name)
        return "parallel" if entry is not None and entry[2] is True else "exclusive"

    async def execute(self, call: ToolCall, *, approver: Approver | None = None) -> ToolResult:
        entry = self._tools.get(call.name)
        if entry is None:
            return ToolResult.error(f"unknown tool {call.name!r}", "UNKNOWN_TOOL")
        _, fn, _ = entry
        try:
            value = fn(**call.input)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:  # a failing tool becomes an error result, never a failed turn
            return ToolResult.error(f"{type(exc).__name__}: {exc}")
        return value if isinstance(value, ToolResult) else ToolResult.text(str(value))
