"""The IPython extension: ``%load_ext agentcell`` in any IPython kernel (VS Code, Colab, JupyterLab).

It adds the magics, the ``%%agent`` cell routing and the hidden agent host. The agentcell kernel is this
extension preloaded with ``prose_is_agent=True``: one implementation, two entry points.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import TurnError, TurnInterrupted
from .host import AgentCell, NotebookAgent
from .magics import register_magics
from .routing import HOST_NAME, make_router
from .turn_context import NotebookContextSource

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

__all__ = ["load", "unload"]

_ROUTER_ATTR = "_agentcell_router"


def load(shell: InteractiveShell, *, prose_is_agent: bool = False) -> NotebookAgent:
    """Install agentcell into ``shell`` (idempotent) and return its agent host."""
    existing = shell.user_ns.get(HOST_NAME)
    if isinstance(existing, NotebookAgent):
        _install_router(shell, prose_is_agent=prose_is_agent)
        return existing
    config = AgentCell(parent=shell)
    _ = config.python_tool  # AGENTCELL_PYTHON_TOOL is read now, at start: code run later cannot set it
    configurables: list[Any] = shell.configurables
    configurables.append(config)  # makes `%config AgentCell` list and set it
    host = NotebookAgent(shell, config)
    shell.push({HOST_NAME: host}, interactive=False)  # pushed non-interactively: hidden from %who
    host.context_source = NotebookContextSource(shell, config, prose_is_agent=prose_is_agent)
    register_magics(shell, host)
    _install_router(shell, prose_is_agent=prose_is_agent)
    # ipykernel reads the shell's last traceback after a failed cell, but sets it only in run_cell, not in
    # run_cell_async (which awaited cells take): a routed cell's mistake as the kernel's first error would
    # fail the reply with an AttributeError and leave the client waiting.
    if not hasattr(shell, "_last_traceback"):
        shell._last_traceback = None  # type: ignore[attr-defined]
    if not shell.custom_exceptions:  # never in place of a handler the user set
        shell.set_custom_exc((TurnInterrupted, TurnError), _turn_ended_quietly)
    return host


def _turn_ended_quietly(shell: InteractiveShell, *_: object, **__: object) -> None:
    """The user stopped a turn (the toolbar's interrupt) or it failed: the turn's view already says
    "interrupted" or shows the error (with Retry), so nothing red is printed under it again (issue 38). The
    cell still fails (the reply names the error), so Run All and ``agentcell run`` stop there."""
    shell._last_traceback = None  # type: ignore[attr-defined]  # no earlier cell's traceback in this reply


def _install_router(shell: InteractiveShell, *, prose_is_agent: bool) -> None:
    previous = getattr(shell, _ROUTER_ATTR, None)
    if previous is not None and previous in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.remove(previous)
    from .magics import HELP

    ours = ["agent" if name == "agent_cell" else name for name in HELP]
    router = make_router(prose_is_agent=prose_is_agent, magic_names=lambda: shell.magics_manager.magics, preferred=ours)
    # First in line: later cleanup transformers (prompt stripping, dedent) must not touch prose.
    shell.input_transformers_cleanup.insert(0, router)
    setattr(shell, _ROUTER_ATTR, router)


def unload(shell: InteractiveShell) -> None:
    router = getattr(shell, _ROUTER_ATTR, None)
    if router is not None and router in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.remove(router)
    host = shell.user_ns.pop(HOST_NAME, None)
    shell.user_ns_hidden.pop(HOST_NAME, None)
    if isinstance(host, NotebookAgent):
        if host.context_source is not None:
            host.context_source.recorder.uninstall()
        host.close()
