"""The tools a notebook's agent gets: the built-ins, bound to the notebook's namespace and directory, plus
every function decorated with ``@agentcell.tool`` (they live in the same process-wide registry)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..tools.registry import ToolRegistry

__all__ = ["notebook_tools"]


def notebook_tools(shell: InteractiveShell) -> ToolRegistry:
    from ..tools.builtin import builtin_tools
    from ..tools.registry import default_registry

    _route_displays(shell)
    registry = default_registry()
    for definition in builtin_tools(namespace=shell.user_ns):
        if registry.get(definition.name) is None:  # a user's own tool of that name wins
            registry.register(definition)
    return registry


def _route_displays(shell: InteractiveShell) -> None:
    """What the python tool's code displays goes into its tool result (and so into its card), not into the
    cell's output below the turn; every other display is published as before. Installed once per shell."""
    from ..tools.builtin.python import capture_display

    publisher = shell.display_pub
    if getattr(publisher, "_agentcell_routed", False):
        return
    publish = publisher.publish

    def routed(data: dict[str, Any], metadata: dict[str, Any] | None = None, *args: Any, **kwargs: Any) -> None:
        if not capture_display(data):
            publish(data, metadata, *args, **kwargs)

    publisher.publish = routed  # type: ignore[method-assign]
    publisher._agentcell_routed = True  # type: ignore[attr-defined]
