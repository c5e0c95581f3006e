"""Notebook files as a front end saves them, and the front end's side of a notebook's identity: a test writes
the turns a kernel showed into a ``.ipynb`` (each output as the cell keeps it), and asks the kernel which id
the notebook must carry, as agentcell's JupyterLab extension does before a notebook's first cell."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
from jupyter_client.blocking.client import BlockingKernelClient

from .conftest import Execution, execute, running_kernel
from .echo_server import EchoServer

__all__ = ["DAILY_ID", "add_turn", "daily_notebook", "identify", "save_notebook", "saved_id", "users_of"]

DAILY_ID = "6f0a3b5c-1d2e-4f60-8a9b-0c1d2e3f4a5b"


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


def add_turn(path: Path, source: str, run: Execution, cell_id: str) -> None:
    """Append a cell showing ``run``'s turn to the saved notebook at ``path`` (the front end saved again)."""
    nb = nbformat.read(path, as_version=4)
    cell = nbformat.v4.new_code_cell(source, id=cell_id)
    cell.outputs = [nbformat.v4.new_output("display_data", data=run.displays[-1])]
    nb.cells.append(cell)
    nbformat.write(nb, path)


def daily_notebook(kernel_env: dict[str, str], folder: Path) -> Path:
    """Lab's daily sequence: a new notebook, Untitled.ipynb, two turns, saved as daily.ipynb (a rename)."""
    untitled = folder / "Untitled.ipynb"
    save_notebook(untitled, None, [])  # Lab creates the file when the notebook is made
    with running_kernel({**kernel_env, "JPY_SESSION_NAME": str(untitled)}, cwd=folder) as (_, kc):
        assert identify(kc, DAILY_ID)["notebook_id"] == DAILY_ID  # the extension minted it at the first run
        one, two = execute(kc, "daily one", cell_id="cell-0"), execute(kc, "daily two", cell_id="cell-1")
        save_notebook(untitled, DAILY_ID, [("daily one", one), ("daily two", two)])
    daily = folder / "daily.ipynb"
    untitled.rename(daily)
    return daily


def users_of(server: EchoServer, request: int = -1) -> list[str]:
    """The user messages of a request (the latest by default): the history the model got, and the question."""
    return [text for role, text in server.conversations()[request] if role == "user"]


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
