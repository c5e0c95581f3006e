"""The tools a notebook's agent gets: the built-ins, bound to the notebook's namespace and directory, plus
every function decorated with ``@agentcell.tool`` (they live in the same process-wide registry)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..tools.registry import ToolRegistry

__all__ = ["notebook_tools"]


def notebook_tools(shell: InteractiveShell) -> ToolRegistry:
    from ..tools.builtin import builtin_tools
    from ..tools.registry import default_registry

    registry = default_registry()
    for definition in builtin_tools(namespace=shell.user_ns):
        if registry.get(definition.name) is None:  # a user's own tool of that name wins
            registry.register(definition)
    return registry
