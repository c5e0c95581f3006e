"""The notebook client behind ``agentcell run``: nbclient, sending each cell's id as JupyterLab does.

A turn belongs to the cell that ran it (re-running a cell replaces its turn on the active path). JupyterLab
and Notebook 7 put ``cellId`` in each execute request's metadata; nbclient sends none, so this client adds
it. A notebook saved before nbformat 4.5 has no cell ids: each cell gets a stable one from its position, so
``agentcell run --continue`` of the same notebook redoes its turns instead of appending them.

Before the first cell it asks the kernel which id the notebook carries, as agentcell's JupyterLab extension
does (``kernel/notebook_id.py``): a copy of another notebook forks that one's session rather than joining it,
gets an id of its own in the written notebook, and the user is told on stderr.
"""

from __future__ import annotations

import json
import sys
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
        await self._identify(kc)
        kc.execute = self._execute_with_cell_id
        return kc

    async def evaluate(self, kc: Any, expression: str) -> dict[str, Any] | None:
        """The MIME bundle of a user expression the kernel evaluates silently (None when it failed)."""
        content = {"code": "", "silent": True, "store_history": False, "user_expressions": {"value": expression}}
        request = kc.session.msg("execute_request", content)
        kc.shell_channel.send(request)
        while True:
            reply = await kc.get_shell_msg(timeout=self.startup_timeout)
            if reply["parent_header"].get("msg_id") == request["header"]["msg_id"]:
                break
        answer = reply["content"].get("user_expressions", {}).get("value", {})
        data = answer.get("data", {}) if answer.get("status") == "ok" else None
        return data if isinstance(data, dict) else None

    async def _identify(self, kc: Any) -> None:
        section = self.nb.metadata.get("agentcell", {})
        said = section.get("notebook_id") if isinstance(section, dict) else None
        shown = await self.evaluate(
            kc, f"__agentcell__.identify_notebook({json.dumps(said if isinstance(said, str) else None)})"
        )
        found = (shown or {}).get("application/json")
        if not isinstance(found, dict):
            return  # a kernel that cannot say (not agentcell's): the cells run as they are
        if isinstance(notebook_id := found.get("notebook_id"), str) and notebook_id != said:
            self.nb.metadata.setdefault("agentcell", {})["notebook_id"] = notebook_id
        for notice in found.get("notices", []):
            print(f"agentcell run: {notice}", file=sys.stderr)

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
