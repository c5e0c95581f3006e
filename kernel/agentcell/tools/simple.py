"""A registry with a shortcut for plain callables, for the engine's own tests and small scripts.

``add(fn)`` offers ``fn`` with the input schema you give (no validation, no thread: ``fn`` is called with
the model's arguments as keyword arguments, right on the event loop). For typed, validated tools use
``@tool`` (:mod:`agentcell.tools.functions`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .definition import ToolContext, ToolDefinition
from .registry import Disposer, ToolRegistry

__all__ = ["SimpleTools"]


class SimpleTools(ToolRegistry):
    def add(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        input_schema: dict[str, Any] | None = None,
        parallel_safe: bool = False,
    ) -> Disposer:
        def run(arguments: dict[str, Any], context: ToolContext) -> Any:
            del context
            return fn(**arguments)

        return self.register(
            ToolDefinition(
                name=name or fn.__name__,
                run=run,
                description=description or inspect.getdoc(fn) or "",
                input_schema=input_schema or {"type": "object", "properties": {}},
                parallel_safe=parallel_safe,
            )
        )
