"""The agent proposes cells: the ``notebook_edit`` tool, what it may address, and what the model learns back.

A turn opened in a notebook that takes proposals (its ``user.message`` context is ``editable``: the kernel's
``AgentCell.propose_cells``) offers the primary thread ``notebook_edit``, unless the session is read-only;
a turn from anywhere else (ACP, the API) never does. A call appends ``agent.cell_proposed`` and answers
that the proposal waits for the user: nothing in the notebook changes here. The cells the model may name
are the code cells it was shown (each with its id, in an editable context) on the active path, as the
answers to earlier proposals changed them, and the cell of the current turn (a new cell may go next to
it). The user's answer (``user.cell_proposal_resolved``, appended by a front end) reaches the next request
as a note (``cell_notes.py``, folded by ``engine/history.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..events import Event, UserMessage
from ..providers.base import ToolSchema
from ..records.agent import Agent
from ..records.cell_events import AgentCellProposed, UserCellProposalResolved
from ..tools.base import ToolCall, ToolResult
from .cell_notes import describe_proposal
from .deps import TurnDeps
from .log import SessionLog
from .path import is_opening, on_path
from .request import SessionTool

__all__ = [
    "NOTEBOOK_EDIT_TOOL",
    "PROPOSAL_EVENT_TYPES",
    "NotebookCells",
    "cell_tools",
    "notebook_cells",
]

NOTEBOOK_EDIT_TOOL = "notebook_edit"
PROPOSAL_EVENT_TYPES = ("user.message", "agent.cell_proposed", "user.cell_proposal_resolved", "session.status_idle")
"""The events :func:`notebook_cells` folds (with the idle statuses that end turns)."""

_DESCRIPTION = (
    "Propose a change to the user's notebook: a new cell (Python code, or Markdown for notes), an edit of one "
    "of the code cells you were shown, or deleting one. Name cells by the cell id shown with them. Nothing "
    "changes until the user reviews the proposal: they may accept it (and run it), edit it first, or reject "
    "it, and the next message tells you what happened. Use it for code the user should keep in the notebook; "
    "use the python tool to compute something yourself."
)
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["insert", "edit", "delete"]},
        "source": {
            "type": "string",
            "description": "insert: the new cell's source; edit: the cell's whole new source; delete: omit.",
        },
        "cell_id": {
            "type": "string",
            "description": "edit/delete: the cell to change. insert: the cell to place the new one next to "
            "(omit: below your answer).",
        },
        "position": {"type": "string", "enum": ["after", "before"], "description": "insert: where, next to cell_id."},
        "cell_type": {"type": "string", "enum": ["code", "markdown"], "description": "insert: code by default."},
        "note": {"type": "string", "description": "One line for the user: why."},
    },
    "required": ["action"],
}


@dataclass
class NotebookCells:
    """The notebook as the model knows it: code cells by id (their latest source), the latest turn's cell,
    and the proposals so far."""

    sources: dict[str, str]
    turn_cell_id: str | None
    editable: bool
    proposals: dict[int, AgentCellProposed]
    resolved: dict[int, UserCellProposalResolved]

    def pending(self) -> list[AgentCellProposed]:
        return [p for n, p in sorted(self.proposals.items()) if n not in self.resolved]


def notebook_cells(events: Iterable[Event], superseded: set[str]) -> NotebookCells:
    """Fold the primary thread's openings, proposals and answers on the active path."""
    cells = NotebookCells({}, None, False, {}, {})
    for event in on_path(events, superseded):
        if event.thread_id is not None:
            continue
        if isinstance(event, UserMessage) and is_opening(event):
            cells.turn_cell_id = event.cell_id
            cells.editable = event.context is not None and event.context.editable
            for cell in event.context.cells if event.context is not None else []:
                if cell.cell_id is not None:
                    cells.sources[cell.cell_id] = cell.source
        elif isinstance(event, AgentCellProposed):
            cells.proposals[event.number] = event
        elif isinstance(event, UserCellProposalResolved):
            cells.resolved[event.number] = event
            _apply(cells, event)
    return cells


def _apply(cells: NotebookCells, answer: UserCellProposalResolved) -> None:
    proposal = cells.proposals.get(answer.number)
    if proposal is None or answer.outcome != "accepted":
        return
    source = answer.source if answer.source is not None else proposal.source
    if proposal.action == "delete" and proposal.cell_id is not None:
        cells.sources.pop(proposal.cell_id, None)
    elif proposal.action == "edit" and proposal.cell_id is not None:
        cells.sources[proposal.cell_id] = source
    elif answer.cell_id is not None and proposal.cell_type == "code":
        cells.sources[answer.cell_id] = source


def _session_cells(log: SessionLog) -> NotebookCells:
    return notebook_cells(log.events(types=PROPOSAL_EVENT_TYPES), log.path().superseded)


def cell_tools(log: SessionLog, deps: TurnDeps, agent: Agent) -> list[SessionTool]:
    """``notebook_edit`` when the turn's notebook takes proposals and the session may change files."""
    del deps, agent
    if log.record.permissions == "read-only":
        return []
    opening = log.last_event("user.message")
    turns = log.path().turns
    if not isinstance(opening, UserMessage) or not turns or turns[-1].id != opening.id:
        return []  # the turn is an outcome or a workflow run, not a notebook's message
    if opening.context is None or not opening.context.editable:
        return []

    async def run(call: ToolCall) -> ToolResult:
        return propose(log, call)

    return [SessionTool(ToolSchema(name=NOTEBOOK_EDIT_TOOL, description=_DESCRIPTION, input_schema=_SCHEMA), run)]


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def propose(log: SessionLog, call: ToolCall) -> ToolResult:
    """Check one ``notebook_edit`` call against the notebook as the model knows it; append the proposal."""
    cells = _session_cells(log)
    args = call.input
    action = args.get("action")
    if action not in ("insert", "edit", "delete"):
        return ToolResult.error("action must be one of insert, edit, delete", "INVALID_INPUT")
    cell_id = _text(args.get("cell_id")) or None
    source = _text(args.get("source")) or ""
    known = ", ".join(cells.sources) or "none: no code cell was shown to you with its id"
    if (
        cell_id is not None
        and cell_id not in cells.sources
        and not (action == "insert" and cell_id == cells.turn_cell_id)
    ):
        return ToolResult.error(
            f"no code cell with id {cell_id!r} in the notebook as you were shown it (it may have been deleted, "
            f"or the id is wrong). Cells you can name: {known}",
            "UNKNOWN_CELL",
        )
    if action in ("edit", "delete") and cell_id is None:
        return ToolResult.error(
            f"{action} needs the cell_id of the cell to change. Cells you can name: {known}", "INVALID_INPUT"
        )
    if action != "delete" and not source.strip():
        return ToolResult.error(f"{action} needs the cell's source", "INVALID_INPUT")
    old = cells.sources.get(cell_id) if cell_id is not None and action != "insert" else None
    if action == "edit" and old == source:
        return ToolResult.error("the proposed source is the cell's source already: nothing to change", "INVALID_INPUT")
    cell_type = "markdown" if action == "insert" and args.get("cell_type") == "markdown" else "code"
    number = max(cells.proposals, default=0) + 1
    proposal = log.make(
        AgentCellProposed,
        tool_use_id=call.tool_use_id,
        number=number,
        action=action,
        cell_type=cell_type,
        source=source if action != "delete" else "",
        cell_id=cell_id,
        position="before" if args.get("position") == "before" else "after",
        old_source=old,
        turn_cell_id=cells.turn_cell_id,
        note=(_text(args.get("note")) or "").strip()[:300],
    )
    log.emit(proposal)
    return ToolResult.text(
        f"Proposal {number} ({describe_proposal(proposal)}) is waiting for the user's review: the notebook has "
        "not changed and nothing ran. The next message will say whether they accepted (and ran) it, edited it "
        "or rejected it; do not assume its result until then."
    )
