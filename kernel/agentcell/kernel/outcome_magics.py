"""The bodies of ``%%outcome`` and ``%steer``, for the magics and the cell router to call.

``%%outcome [max_iterations=N] [grader=MODEL] [rubric=PATH]`` — the cell's body is the description of what
to produce, then a line ``---`` (or a line starting ``Rubric:``), then the rubric. ``rubric=PATH`` names a
rubric file in the workspace instead. The cell runs one turn that works, is graded and revises until the
outcome is satisfied, failed, or out of revision cycles, and ends by printing the outcome's state::

    %%outcome max_iterations=3
    A one-page summary of sales.csv for the board.
    ---
    - states the year's total and the best month
    - fits on one page

``%steer TEXT`` adds guidance to the turn that is running; the model gets it with its next request, and the
request under way is not cancelled. Where it can work:

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

import shlex
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from ..engine.outcomes import OutcomeSpec
from ..errors import AgentCellError
from ..events import FileRubric, Outcome
from .magics import OUTCOME_HELP, STEER_HELP

if TYPE_CHECKING:
    from .host import NotebookAgent

__all__ = ["OUTCOME_HELP", "STEER_HELP", "outcome_summary", "parse_outcome_cell", "run_outcome_cell", "steer_line"]

_SEPARATORS = ("---",)


def parse_outcome_cell(line: str, body: str) -> OutcomeSpec:
    """The outcome a ``%%outcome`` cell asks for; UsageError says what is wrong with it."""
    try:
        options = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"%%outcome: {exc}") from None
    max_iterations = 3
    grader: str | None = None
    rubric_file: str | None = None
    for option in options:
        key, sep, value = option.partition("=")
        if not sep or not value or key not in ("max_iterations", "grader", "rubric"):
            raise UsageError(f"%%outcome: unknown option {option!r}; {OUTCOME_HELP}")
        if key == "max_iterations":
            try:
                max_iterations = int(value)
            except ValueError:
                raise UsageError(f"%%outcome: max_iterations is a number from 1 to 20, not {value!r}") from None
        elif key == "grader":
            grader = value
        else:
            rubric_file = value
    description, rubric_text = _split(body)
    if not description:
        raise UsageError(f"%%outcome: write what the agent is to produce in the cell; {OUTCOME_HELP}")
    if rubric_file is not None and rubric_text:
        raise UsageError("%%outcome: give the rubric in the cell or as rubric=PATH, not both")
    if rubric_file is None and not rubric_text:
        raise UsageError("%%outcome: the cell has no rubric; add a line --- and the criteria after it")
    rubric: str | FileRubric = FileRubric(path=rubric_file) if rubric_file is not None else rubric_text
    return OutcomeSpec(description, rubric, max_iterations=max_iterations, grader_model=grader)


def _split(body: str) -> tuple[str, str]:
    lines = body.strip().splitlines()
    for index, line in enumerate(lines):
        stripped = line.strip()
        if stripped in _SEPARATORS:
            return "\n".join(lines[:index]).strip(), "\n".join(lines[index + 1 :]).strip()
        if stripped.lower().startswith("rubric:"):
            first = stripped[len("rubric:") :].strip()
            rest = "\n".join([first, *lines[index + 1 :]]).strip()
            return "\n".join(lines[:index]).strip(), rest
    return "\n".join(lines).strip(), ""


async def run_outcome_cell(host: NotebookAgent, line: str, body: str) -> None:
    """Run a ``%%outcome`` cell as one turn, rendered like any agent cell, then print where it ended."""
    spec = parse_outcome_cell(line, body)
    await host.ask(spec)  # type: ignore[arg-type]  # NotebookAgent.ask passes any turn input on to the session
    last = host.last
    if last is not None and last.outcome is not None:
        print(outcome_summary(last.outcome))


def outcome_summary(outcome: Outcome) -> str:
    cycles = outcome.iteration + 1
    said = f": {outcome.explanation}" if outcome.explanation else ""
    return f"outcome {outcome.status} after {cycles} revision cycle{'s' if cycles != 1 else ''}{said}"


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
