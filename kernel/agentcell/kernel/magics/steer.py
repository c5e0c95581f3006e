"""``%steer TEXT``: guidance for the running turn.

The model gets it with its next request, and the request under way is not cancelled. Where it can work:

- The turn widget's steer box works wherever the widget is live (JupyterLab, Notebook 7): its text reaches
  the kernel as a custom comm message while the cell runs (on the main loop with ipykernel 7.4, on a
  subshell thread with 7.3 and JupyterLab >= 4.4), and ``session.steer`` is thread-safe either way.
- ``%steer`` in another cell of the same notebook does *not* reach a running turn: the notebook runs its
  cells one at a time, so that cell waits until the turn is over, and then it says no turn is running.
- ``%steer`` works from a console that executes concurrently: a JupyterLab >= 4.4 subshell console on the
  notebook's kernel (ipykernel >= 7, kernel subshells), or any client that runs code on a subshell.
- VS Code and Colab: not verified; assume the widget's steer box only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class

from ...errors import AgentCellError
from ._base import MagicGroup

if TYPE_CHECKING:
    from ..host import NotebookAgent

__all__ = ["STEER_HELP", "SteerMagics", "steer_line"]

STEER_HELP = "%steer TEXT  guidance for the running turn, given to the model at its next request"


@magics_class
class SteerMagics(MagicGroup):
    TITLE: ClassVar[str] = "Within a turn"
    HELP: ClassVar[dict[str, str]] = {"steer": STEER_HELP}

    @line_magic
    def steer(self, line: str) -> None:
        """Add guidance to the running turn, delivered at its next model request."""
        if self._guard("steer", line) is None:
            return
        print(steer_line(self.host, line))


def steer_line(host: NotebookAgent, line: str) -> str:
    """``%steer TEXT``: hand the guidance to the running turn; returns what to print."""
    text = line.strip()
    if not text or text in ("-h", "--help"):
        raise UsageError(STEER_HELP)
    if not host.has_session or host.session.status != "running":
        raise UsageError(
            "%steer: no turn is running. A notebook runs one cell at a time, so a %steer cell waits for the "
            "turn to end; steer from the turn's steer box, or from a subshell console while the turn runs."
        )
    try:
        host.session.steer(text)
    except AgentCellError as exc:  # the turn ended in between
        raise UsageError(f"%steer: {exc}") from None
    return "steering: the agent gets this with its next request"
