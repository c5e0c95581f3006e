"""``%accept N``, ``%reject N``, ``%proposals`` and ``%fix``: the cells the agent proposes, answered from a cell.

The agent's ``notebook_edit`` proposals (``engine/cell_proposals.py``, offered when
``AgentCell.propose_cells`` is on) wait for the user. agentcell's JupyterLab extension answers them in
place; these magics answer them from any front end. A kernel cannot edit a notebook: ``%accept`` puts the
accepted source in a new cell below its own (IPython's ``set_next_input`` payload, which JupyterLab,
Notebook 7 and VS Code honour) and says what is left to the user (replacing the edited cell, deleting
one). Either way the answer is appended as ``user.cell_proposal_resolved``, which the next request tells
the model. An edit of a cell the user ran with other code since is not applied: the answer is ``failed``,
and both the user and the model are told why.

A cell of only ``%fix [words]`` (routed like ``%compact``) starts a turn about the last code cell that
failed since the previous turn: its traceback goes with the turn's context, and the agent is asked to
propose the fix as an edit of that cell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class

from ...errors import UserError
from ._base import MagicGroup

if TYPE_CHECKING:
    from ...engine.cell_proposals import NotebookCells
    from ...records.cell_events import AgentCellProposed
    from ..host import NotebookAgent

__all__ = ["ProposalMagics", "WaitingProposals", "answer_proposal", "find_proposal", "fix_prompt", "run_fix"]

_HELP = {
    "accept": "%accept N  accept the agent's proposed cell N: its source goes in a new cell below this one",
    "reject": "%reject N [WORDS]  reject the agent's proposed cell N (WORDS: why, for the agent)",
    "proposals": "%proposals  list the agent's proposed cells still waiting for an answer",
    "fix": "%fix [WORDS]  ask the agent to fix the last cell that failed (in a cell of its own): a proposed edit",
}


@magics_class
class ProposalMagics(MagicGroup):
    TITLE: ClassVar[str] = "Proposed cells"
    HELP: ClassVar[dict[str, str]] = _HELP

    def _cells(self) -> NotebookCells:
        return session_cells(self.host)

    def _proposal(self, name: str, line: str) -> tuple[AgentCellProposed, list[str]] | None:
        args = self._guard(name, line)
        if args is None:
            return None
        if not args or not args[0].isdigit():
            raise UsageError(f"%{name}: say which proposal: {_HELP[name].split('  ')[0]}")
        try:
            return find_proposal(self.host, int(args[0])), args[1:]
        except UserError as exc:
            raise UsageError(f"%{name}: {exc}") from None

    @line_magic
    def accept(self, line: str) -> None:
        found = self._proposal("accept", line)
        if found is None:
            return
        proposal, _ = found
        if (changed := self._changed_since(proposal)) is not None:
            resolve(self.host, proposal, "failed", message=changed)
            raise UsageError(f"%accept: {changed}; nothing was applied (the agent is told)")
        resolve(self.host, proposal, "accepted")
        print(apply_in_front_end(self.host, proposal))

    @line_magic
    def reject(self, line: str) -> None:
        found = self._proposal("reject", line)
        if found is None:
            return
        proposal, words = found
        resolve(self.host, proposal, "rejected", message=" ".join(words))
        print(f"Rejected proposal {proposal.number}; the agent is told with your next message.")

    @line_magic
    def proposals(self, line: str) -> None:
        if self._guard("proposals", line) is None:
            return
        from ...render.proposal_card import proposal_text

        pending = self._cells().pending()
        print("\n\n".join(proposal_text(p) for p in pending) if pending else "No proposed cell is waiting.")

    @line_magic
    def fix(self, line: str) -> None:
        """Reached only when the cell holds more than ``%fix`` (a lone one is awaited by the router)."""
        if self._guard("fix", line) is None:
            return
        raise UsageError("%fix: put it in a cell of its own (it starts a turn)")

    def _changed_since(self, proposal: AgentCellProposed) -> str | None:
        """Why an edit or deletion no longer fits the cell: the user ran it with other code since."""
        if proposal.action == "insert" or proposal.cell_id is None or self.host.context_source is None:
            return None
        ran = [c for c in self.host.context_source.recorder.pending if c.cell_id == proposal.cell_id]
        if ran and ran[-1].source != proposal.old_source:
            return (
                f"cell {proposal.cell_id} changed since the agent proposed {_what(proposal)} (it ran with other code)"
            )
        return None


def session_cells(host: NotebookAgent) -> NotebookCells:
    from ...engine.cell_proposals import PROPOSAL_EVENT_TYPES, notebook_cells

    return notebook_cells(host.session.events(types=PROPOSAL_EVENT_TYPES, active_path=True), set())


class WaitingProposals:
    """The proposals still waiting, as a user expression answers them: JSON, in the shape of the turn view's
    proposal blocks (``widgets/js/src/state.ts``), and their numbers as text."""

    def __init__(self, proposals: list[AgentCellProposed]) -> None:
        self.proposals = proposals

    def __repr__(self) -> str:
        return repr([p.number for p in self.proposals])

    def _repr_json_(self) -> list[dict[str, object]]:
        return [
            {
                "kind": "proposal",
                "id": p.id,
                "number": p.number,
                "action": p.action,
                "cellType": p.cell_type,
                "source": p.source,
                "cellId": p.cell_id,
                "position": p.position,
                "oldSource": p.old_source,
                "turnCellId": p.turn_cell_id,
                "note": p.note,
                "resolution": None,
            }
            for p in self.proposals
        ]


def find_proposal(host: NotebookAgent, number: int) -> AgentCellProposed:
    """The proposal ``number``, still waiting; raises UserError saying which ones wait."""
    cells = session_cells(host)
    proposal = cells.proposals.get(number)
    pending = ", ".join(str(p.number) for p in cells.pending()) or "none"
    if proposal is None:
        raise UserError(f"the agent made no proposal {number} (waiting: {pending})")
    if (answer := cells.resolved.get(number)) is not None:
        raise UserError(f"proposal {number} was {answer.outcome} already (waiting: {pending})")
    return proposal


def answer_proposal(
    host: NotebookAgent,
    number: int,
    outcome: str,
    *,
    cell_id: str | None = None,
    source: str | None = None,
    run: bool = False,
    message: str = "",
) -> str:
    """A front end applied (or declined) proposal ``number`` itself: record its answer; what to tell the user."""
    if outcome not in ("accepted", "rejected", "failed"):
        raise UserError(f"an answer is accepted, rejected or failed, not {outcome!r}")
    proposal = find_proposal(host, number)
    resolve(host, proposal, outcome, cell_id=cell_id, source=source, run=run, message=message)
    said = f"{_what(proposal).capitalize()}: {outcome}"
    return f"{said}: {message}" if message else said


def _what(proposal: AgentCellProposed) -> str:
    from ...engine.cell_notes import describe_proposal

    return f"proposal {proposal.number} ({describe_proposal(proposal)})"


def resolve(
    host: NotebookAgent,
    proposal: AgentCellProposed,
    outcome: str,
    *,
    source: str | None = None,
    cell_id: str | None = None,
    run: bool = False,
    message: str = "",
) -> None:
    """Append the user's answer to ``proposal`` (the next request tells the model)."""
    from ...records.cell_events import UserCellProposalResolved

    session = host.session
    answer = session.make(
        UserCellProposalResolved,
        proposal_id=proposal.id,
        number=proposal.number,
        outcome=outcome,
        source=source if source is not None and source != proposal.source else None,
        cell_id=cell_id,
        run=run,
        message=message,
    )
    session.emit(answer)


def cell_text(host: NotebookAgent, proposal: AgentCellProposed) -> str:
    """The accepted source as a cell of this kernel: ``%%markdown`` for notes; in the agentcell kernel, where
    prose goes to the agent, ``%%python`` before code."""
    if proposal.cell_type == "markdown":
        return f"%%markdown\n{proposal.source}"
    source = host.context_source
    if source is not None and source.prose_is_agent and not proposal.source.lstrip().startswith("%%"):
        return f"%%python\n{proposal.source}"
    return proposal.source


def apply_in_front_end(host: NotebookAgent, proposal: AgentCellProposed) -> str:
    """Put the accepted source in a new cell below (``set_next_input``); what the user still has to do."""
    if proposal.action == "delete":
        return f"Accepted proposal {proposal.number}: delete cell {proposal.cell_id} (a kernel cannot delete cells)."
    host.shell.set_next_input(cell_text(host, proposal), replace=False)
    if proposal.action == "edit":
        return (
            f"Accepted proposal {proposal.number}: the edited code is in a new cell below; it replaces cell "
            f"{proposal.cell_id}, which a kernel cannot change: delete that one. Run the new cell to use it."
        )
    return f"Accepted proposal {proposal.number}: the new cell is below. Run it when you are ready."


def fix_prompt(host: NotebookAgent, words: str) -> str:
    """The turn ``%fix`` asks for: about the last cell that failed since the previous turn."""
    source = host.context_source
    failed = [
        c for c in (source.recorder.pending if source is not None else []) if any(o.kind == "error" for o in c.outputs)
    ]
    if not failed:
        raise UsageError("%fix: no code cell failed since the last turn (run the failing cell again, then %fix)")
    cell = failed[-1]
    name = f"cell {cell.cell_id}" if cell.cell_id else "the last code cell that failed"
    ask = (
        f"The code in {name} failed; its traceback is in the notebook context above. Find the cause and propose "
        f"the fix as an edit of that cell with notebook_edit (action edit, cell_id {cell.cell_id}); say in one or "
        "two sentences what was wrong."
    )
    return f"{ask}\n\n{words}" if words else ask


async def run_fix(host: NotebookAgent, line: str) -> None:
    """A cell of ``%fix [words]``: a turn about the last failure whose fix comes back as a proposed edit."""
    words = line.strip()
    if words in ("-h", "--help"):
        print(_HELP["fix"])
        return
    await host.ask(fix_prompt(host, words), propose=True)
