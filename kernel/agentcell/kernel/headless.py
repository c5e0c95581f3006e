"""The notebook client behind ``agentcell run``: nbclient, sending each cell's id as JupyterLab does.

A turn belongs to the cell that ran it (re-running a cell replaces its turn on the active path). JupyterLab
and Notebook 7 put ``cellId`` in each execute request's metadata; nbclient sends none, so this client adds
it. A notebook saved before nbformat 4.5 has no cell ids: each cell gets a stable one from its position, so
``agentcell run --continue`` of the same notebook redoes its turns instead of appending them.
"""

from __future__ import annotations

from typing import Any

from nbclient import NotebookClient

__all__ = ["CellIdNotebookClient", "ensure_cell_ids"]


def ensure_cell_ids(nb: Any) -> None:
    """Give every cell of ``nb`` an id (nbformat 4.5), keeping the ids it has."""
    if (nb.nbformat, nb.get("nbformat_minor", 0)) < (4, 5):
        nb.nbformat_minor = 5
    for index, cell in enumerate(nb.cells):
        if not cell.get("id"):
            cell["id"] = f"cell-{index}"


class CellIdNotebookClient(NotebookClient):
    """Executes like :class:`nbclient.NotebookClient`, with ``metadata.cellId`` on each execute request."""

    def __init__(self, nb: Any, **kwargs: Any) -> None:
        ensure_cell_ids(nb)
        super().__init__(nb, **kwargs)
        self._running_cell_id: str | None = None

    async def async_execute_cell(self, cell: Any, cell_index: int, *args: Any, **kwargs: Any) -> Any:
        self._running_cell_id = cell.get("id")
        try:
            return await super().async_execute_cell(cell, cell_index, *args, **kwargs)
        finally:
            self._running_cell_id = None

    async def async_start_new_kernel_client(self) -> Any:
        kc: Any = await super().async_start_new_kernel_client()
        kc.execute = self._execute_with_cell_id
        return kc

    def _execute_with_cell_id(
        self,
        code: str,
        *,
        silent: bool = False,
        store_history: bool = True,
        user_expressions: dict[str, Any] | None = None,
        allow_stdin: bool | None = None,
        stop_on_error: bool = True,
    ) -> str:
        # jupyter_client's execute() builds the same request but takes no metadata. nbclient passes every
        # argument but the code by keyword.
        kc: Any = self.kc
        content = {
            "code": code,
            "silent": silent,
            "store_history": store_history,
            "user_expressions": user_expressions or {},
            "allow_stdin": kc.allow_stdin if allow_stdin is None else allow_stdin,
            "stop_on_error": stop_on_error,
        }
        metadata = {"cellId": self._running_cell_id} if self._running_cell_id else {}
        msg = kc.session.msg("execute_request", content, metadata=metadata)
        kc.shell_channel.send(msg)
        msg_id: str = msg["header"]["msg_id"]
        return msg_id
