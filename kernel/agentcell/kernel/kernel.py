"""AgentCellKernel: an IPython kernel whose prose cells are agent turns.

Subclassing ``IPythonKernel`` keeps comms, widgets, display, history, completion and magics working; the
agentcell extension is preloaded with prose routing on, so IPython runs each turn as a top-level-await
cell and owns execution counts, tracebacks and interrupts (SIGINT cancels the awaiting turn).
"""

from __future__ import annotations

from typing import Any

from ipykernel.ipkernel import IPythonKernel

from .._version import __version__
from ..render.previews import preview_code
from .extension import load

__all__ = ["AgentCellKernel"]


class AgentCellKernel(IPythonKernel):
    implementation = "agentcell"
    implementation_version = __version__
    language_info = {  # noqa: RUF012 - ipykernel reads this class attribute
        "name": "markdown",
        "version": "1.0",
        "mimetype": "text/markdown",
        "file_extension": ".md",
        "codemirror_mode": "markdown",
        "pygments_lexer": "markdown",
        "nbconvert_exporter": "markdown",
    }
    banner = (
        f"agentcell {__version__}: every cell is a turn of the agent.\n"
        "%help lists the magics; %%python runs a cell as Python."
    )
    help_links = [  # noqa: RUF012 - ipykernel reads this class attribute
        {
            "text": "IPython magics (agentcell's: %help)",
            "url": "https://ipython.readthedocs.io/en/stable/interactive/magics.html",
        },
        {"text": "Jupyter", "url": "https://docs.jupyter.org/"},
        {"text": "Markdown", "url": "https://commonmark.org/help/"},
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        assert self.shell is not None
        self.agent_host = load(self.shell, prose_is_agent=True)

    def _publish_execute_input(self, code: str, parent: Any, execution_count: int) -> None:
        # Every front end gets the cell's code back on IOPub; the one that sent it has it. A huge prose cell
        # (a pasted document) is broadcast as its start and its length.
        super()._publish_execute_input(preview_code(code), parent, execution_count)

    async def do_shutdown(self, restart: bool) -> dict[str, Any]:
        # Runs on the control thread: hand the cleanup to the main loop's owner via close(), which only
        # releases resources (running turns are cancelled by the kernel's own shutdown of the loop).
        self.agent_host.close()
        result: dict[str, Any] = super().do_shutdown(restart)
        return result
