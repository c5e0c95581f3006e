"""Executes notebooks as a Jupyter server would, through nbclient on the agentcell kernel, for the Binder test.

Run with the interpreter of the environment under test: ``python _execute_notebooks.py OUT NOTEBOOK...``.
Like the server, it tells each kernel its notebook's path (``JPY_SESSION_NAME``) and starts it in the
notebook's folder; after the last cell it runs ``%replay status``. Each executed notebook is written to OUT.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def main(out: Path, notebooks: list[Path]) -> None:
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell("%replay status"))
        os.environ["JPY_SESSION_NAME"] = str(path)
        NotebookClient(
            nb, kernel_name="agentcell", timeout=120, resources={"metadata": {"path": str(path.parent)}}
        ).execute()
        nbformat.write(nb, out / path.name)


if __name__ == "__main__":
    main(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]])
