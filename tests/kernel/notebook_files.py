"""Notebook files as a front end saves them, and the front end's side of a notebook's identity: a test writes
the turns a kernel showed into a ``.ipynb`` (each output as the cell keeps it), and asks the kernel which id
the notebook must carry, as agentcell's JupyterLab extension does before a notebook's first cell."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
from jupyter_client.blocking.client import BlockingKernelClient

from .conftest import Execution

__all__ = ["identify", "save_notebook", "saved_id"]


def save_notebook(path: Path, notebook_id: str | None, cells: list[tuple[str, Execution | None]]) -> None:
    """Write ``cells`` (source, and the execution whose last display the cell shows) as a saved notebook."""
    nb = nbformat.v4.new_notebook()
    if notebook_id is not None:
        nb.metadata["agentcell"] = {"notebook_id": notebook_id}
    for index, (source, run) in enumerate(cells):
        cell = nbformat.v4.new_code_cell(source, id=f"cell-{index}")
        if run is not None and run.displays:
            cell.outputs = [nbformat.v4.new_output("display_data", data=run.displays[-1])]
        nb.cells.append(cell)
    nbformat.write(nb, path)


def saved_id(path: Path) -> str | None:
    value = json.loads(path.read_text()).get("metadata", {}).get("agentcell", {}).get("notebook_id")
    return value if isinstance(value, str) else None


def identify(kc: BlockingKernelClient, notebook_id: str | None) -> dict[str, Any]:
    """What the extension sends before the first cell: a silent request whose user expression asks the
    kernel for the id the notebook must carry (and what to tell the user)."""
    expression = f"__agentcell__.identify_notebook({json.dumps(notebook_id)})"
    msg_id = kc.execute("", silent=True, store_history=False, user_expressions={"identity": expression})
    reply = kc.get_shell_msg(timeout=60)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=60)
    answer = reply["content"]["user_expressions"]["identity"]
    assert answer["status"] == "ok", answer
    data: dict[str, Any] = answer["data"]["application/json"]
    return data
