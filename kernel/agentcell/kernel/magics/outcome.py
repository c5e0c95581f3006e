"""``%%outcome``: define an outcome and work toward it in one turn.

``%%outcome [max_iterations=N] [grader=MODEL] [rubric=PATH]`` — the cell's body is the description of what
to produce, then a line ``---`` (or a line starting ``Rubric:``), then the rubric. ``rubric=PATH`` names a
rubric file in the workspace instead. The cell runs one turn that works, is graded and revises until the
outcome is satisfied, failed, or out of revision cycles; its view's outcome panel shows where it ended::

    %%outcome max_iterations=3
    A one-page summary of sales.csv for the board.
    ---
    - states the year's total and the best month
    - fits on one page

The router sends such a cell to :meth:`NotebookAgent.outcome`, which calls :func:`run_outcome_cell`; the cell
magic itself only says so when something calls it directly.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, ClassVar

from IPython.core.error import UsageError
from IPython.core.magic import cell_magic, magics_class

from ._base import MagicGroup

if TYPE_CHECKING:
    from ... import OutcomeSpec
    from ...events import Outcome
    from ..host import NotebookAgent

__all__ = ["OUTCOME_HELP", "OutcomeMagics", "outcome_summary", "parse_outcome_cell", "run_outcome_cell"]

OUTCOME_HELP = (
    "%%outcome [max_iterations=N] [grader=MODEL] [rubric=PATH]  work until a grader finds the cell's "
    "description meets its rubric (after a line ---, or in the file PATH)"
)


@magics_class
class OutcomeMagics(MagicGroup):
    TITLE: ClassVar[str] = "Within a turn"
    HELP: ClassVar[dict[str, str]] = {"outcome": OUTCOME_HELP}

    @cell_magic("outcome")  # type: ignore[arg-type]
    def outcome_cell(self, line: str, cell: str) -> None:
        """Define an outcome and work toward it (routed before execution, like %%agent)."""
        del line, cell
        raise UsageError("%%outcome must start a cell of its own (it is routed before execution)")


_SEPARATORS = ("---",)


def parse_outcome_cell(line: str, body: str) -> OutcomeSpec:
    """The outcome a ``%%outcome`` cell asks for; UsageError says what is wrong with it."""
    from ... import OutcomeSpec  # the engine loads with the first turn, not with the kernel
    from ...events import FileRubric

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
    """Run a ``%%outcome`` cell as one turn, rendered like any agent cell. Where it ended is in the turn's
    view (its outcome panel), so nothing is printed after it: a stdout line would only repeat the verdict."""
    spec = parse_outcome_cell(line, body)
    await host.ask(spec)


def outcome_summary(outcome: Outcome) -> str:
    cycles = outcome.iteration + 1
    said = f": {outcome.explanation}" if outcome.explanation else ""
    return f"outcome {outcome.status} after {cycles} revision cycle{'s' if cycles != 1 else ''}{said}"
