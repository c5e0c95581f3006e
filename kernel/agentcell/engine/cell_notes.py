"""What the model reads of the cells it proposed: a proposal in a few words, and the user's answer to it.

Apart from ``cell_proposals.py`` because the history (``history.py``) folds the answers into the next
request, and the tool's module needs the log, which needs the history.
"""

from __future__ import annotations

from ..records.cell_events import AgentCellProposed, UserCellProposalResolved

__all__ = ["describe_proposal", "resolution_note"]


def describe_proposal(proposal: AgentCellProposed) -> str:
    """ "a new code cell after cell abc", "an edit of cell abc", "deleting cell abc"."""
    if proposal.action == "edit":
        return f"an edit of cell {proposal.cell_id}"
    if proposal.action == "delete":
        return f"deleting cell {proposal.cell_id}"
    where = f"{proposal.position} cell {proposal.cell_id}" if proposal.cell_id else "below the turn"
    return f"a new {proposal.cell_type} cell {where}"


def resolution_note(answer: UserCellProposalResolved, proposal: AgentCellProposed | None) -> str:
    """What the model is told of the user's answer (folded into the next request)."""
    what = f"proposal {answer.number}" + (f" ({describe_proposal(proposal)})" if proposal is not None else "")
    if answer.outcome == "failed":
        return f"[{what.capitalize()} could not be applied: {answer.message}]"
    if answer.outcome == "rejected":
        words = f" They said: {answer.message}" if answer.message else ""
        return f"[The user rejected {what}; the notebook is unchanged.{words}]"
    fence = "markdown" if proposal is not None and proposal.cell_type == "markdown" else "python"
    text = f"[The user accepted {what}"
    if answer.source is not None:
        text += f" after editing it; the cell now reads:\n```{fence}\n{answer.source}\n```\n"
    if answer.cell_id is not None:
        text += f"; it is cell {answer.cell_id}"
    text += "; they ran it: its output follows with the notebook's context]" if answer.run else "; it has not run]"
    return text
