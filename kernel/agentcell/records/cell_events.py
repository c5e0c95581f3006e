"""The events of cells the agent proposes: the proposal (a new cell, an edit of a code cell, a deletion) and
the user's answer to it.

The agent's ``notebook_edit`` tool (``engine/cell_proposals.py``) appends ``agent.cell_proposed`` and answers
the model that the proposal waits for the user; nothing changes in the notebook until the user accepts it
(``%accept N``, the lab extension's buttons, ``agentcell run --accept-cells``), which appends
``user.cell_proposal_resolved``. The next request tells the model what became of it. Members of the
:data:`~agentcell.events.Event` union, pinned by the same wire snapshot.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from .envelope import EventEnvelope

__all__ = [
    "AgentCellProposed",
    "CellEvent",
    "CellProposalAction",
    "CellProposalOutcome",
    "UserCellProposalResolved",
]

CellProposalAction = Literal["insert", "edit", "delete"]
CellProposalOutcome = Literal["accepted", "rejected", "failed"]


class _Event(EventEnvelope):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AgentCellProposed(_Event):
    """The agent proposed a change to the notebook (the ``notebook_edit`` call ``tool_use_id``); it waits
    for the user, who refers to it by ``number``."""

    type: Literal["agent.cell_proposed"] = "agent.cell_proposed"
    tool_use_id: str
    number: int = Field(ge=1)
    """The session's proposals counted from 1: what ``%accept N`` names."""
    action: CellProposalAction
    cell_type: Literal["code", "markdown"] = "code"
    source: str = ""
    """The new cell's source, or the edited cell's new source (empty for a deletion)."""
    cell_id: str | None = None
    """For an edit or a deletion, the cell it changes; for a new cell, the cell it goes next to (None: next
    to the cell of the turn that proposed it)."""
    position: Literal["after", "before"] = "after"
    """Where a new cell goes relative to ``cell_id``."""
    old_source: str | None = None
    """For an edit or a deletion, the cell's source as the agent saw it (the diff's left side; an accept
    checks the cell still reads so)."""
    turn_cell_id: str | None = None
    """The notebook cell of the turn that proposed it."""
    note: str = ""
    """The agent's one line about why."""


class UserCellProposalResolved(_Event):
    """The user's answer to proposal ``number``: accepted (as proposed, or with ``source`` after editing it),
    rejected, or failed (it could not be applied: the cell was gone or had changed)."""

    type: Literal["user.cell_proposal_resolved"] = "user.cell_proposal_resolved"
    proposal_id: str
    """The ``agent.cell_proposed`` event it answers."""
    number: int = Field(ge=1)
    outcome: CellProposalOutcome
    source: str | None = None
    """The source the notebook took, when it differs from the proposal's (the user edited it)."""
    cell_id: str | None = None
    """The cell that holds the accepted source, when known (its later run reaches the model as context)."""
    run: bool = False
    """The user asked to run it as it was accepted (its output reaches the model with the next turn)."""
    message: str = ""
    """Why it failed, or the user's words with a rejection."""


CellEvent = AgentCellProposed | UserCellProposalResolved
