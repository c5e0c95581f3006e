"""A notebook's replayer: its recording (``name.agentcell.jsonl`` beside the notebook), the mode the kernel
starts in, and which cell is running (for "not recorded" messages).

The starting mode is ``$AGENTCELL_REPLAY`` when set (``off``, ``record``, ``replay`` or ``auto``). Otherwise
a notebook with a recording and no API key in the environment starts in ``auto``, so a notebook opened on
Binder just runs; with a key, or without a recording, requests go live (``off``) until ``%replay`` or
``%record`` says otherwise.

A notebook replayed from its recording defaults to the model it was recorded with (unless
``$AGENTCELL_MODEL`` names one): a notebook that never says ``%model`` was recorded with whatever model was
the default there, which need not be the default here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..providers.replay import CellRef, Replayer, ReplayMode, parse_mode, recording_path

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..store.base import Store

__all__ = ["ENV_VARIABLE", "current_cell", "notebook_replayer", "starting_mode"]

ENV_VARIABLE = "AGENTCELL_REPLAY"
KEY_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
"""A key means the user can (and presumably wants to) run the notebook live."""


def starting_mode(has_recording: bool, environ: Mapping[str, str] | None = None) -> ReplayMode:
    environ = os.environ if environ is None else environ
    if explicit := environ.get(ENV_VARIABLE, "").strip():
        return parse_mode(explicit)
    if has_recording and not any(environ.get(name) for name in KEY_VARIABLES):
        return "auto"
    return "off"


def current_cell(shell: InteractiveShell) -> CellRef:
    """The running cell: its execution count as the front end shows it (``[3]``), and the notebook's cell id
    when the front end sent one (JupyterLab puts ``cellId`` in the execute request's metadata)."""
    # IPython's own counter has already moved on to the next cell (9.x); the running cell's result has it.
    running = getattr(getattr(shell, "displayhook", None), "exec_result", None)
    number = getattr(running, "execution_count", None)
    kernel: Any = getattr(shell, "kernel", None)
    parent: dict[str, Any] = {}
    if kernel is not None and hasattr(kernel, "get_parent"):
        parent = kernel.get_parent("shell") or {}
    cell_id = (parent.get("metadata") or {}).get("cellId")
    return CellRef(number=number if isinstance(number, int) else None, id=cell_id if isinstance(cell_id, str) else None)


def notebook_replayer(notebook: str | None, shell: InteractiveShell, store: Store | None = None) -> Replayer | None:
    """The replayer of the notebook at ``notebook`` (``JPY_SESSION_NAME``), or None without a notebook.
    With the ``store``, a recording left behind by a rename or move of the notebook comes along first."""
    if not notebook:
        return None
    from .notebook_id import follow_recording, notebook_file

    path = notebook_file(notebook)  # a server's relative path: the kernel runs in the notebook's folder
    recording = recording_path(path)
    if store is not None:
        follow_recording(notebook, recording, store)
    replayer = Replayer(recording, starting_mode(recording.exists()), cell=lambda: current_cell(shell))
    if replayer.from_start and not os.environ.get("AGENTCELL_MODEL") and (model := replayer.recorded_model()):
        os.environ["AGENTCELL_MODEL"] = model  # what the host's default model reads
    return replayer
