"""``agentcell run --accept-cells``: the agent's proposed cells applied to the notebook as it runs.

The client reads each ``agent.cell_proposed`` from the turn's item batches (the same IOPub messages the
terminal printer reads). Without ``--accept-cells`` they are only listed. With it, after the cell whose turn
proposed them: a new cell goes next to the cell it names (a ``%%python`` cell, or a Markdown one) and runs
in its turn, an edit replaces the cell's source (unless it no longer reads as the agent saw it: then the
answer is ``failed``), a deletion removes the cell. Each answer goes to the kernel, which appends it to the
session (``NotebookAgent.answer_proposal``), so the next request tells the model. nbclient walks the cells
by index, so nothing is inserted or deleted at or before the running cell: a new cell that belongs there
goes right after it, and a deletion there waits for the end of the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Answer", "ProposalApplier", "proposal_items"]

PYTHON_MAGIC = "%%python\n"


def proposal_items(msg: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``agent.cell_proposed`` items of one IOPub message (a turn widget's item batch)."""
    if msg.get("msg_type") != "comm_msg":
        return []
    data = msg.get("content", {}).get("data", {})
    batch = data.get("content") if isinstance(data, dict) and data.get("method") == "custom" else None
    if not isinstance(batch, dict) or batch.get("type") != "items":
        return []
    items = batch.get("items", [])
    return [i for i in items if isinstance(i, dict) and i.get("type") == "agent.cell_proposed"]


@dataclass(frozen=True, slots=True)
class Answer:
    number: int
    outcome: str
    cell_id: str | None = None
    message: str = ""


def _code(source: str) -> str:
    return source[len(PYTHON_MAGIC) :] if source.startswith(PYTHON_MAGIC) else source


@dataclass
class ProposalApplier:
    """Collects the proposals a run sees; applies them to ``nb`` when told to."""

    accept: bool
    seen: list[dict[str, Any]] = field(default_factory=list)
    waiting: list[dict[str, Any]] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    """Cells to delete at the end of the run (at or before the running cell)."""

    def on_message(self, msg: dict[str, Any]) -> None:
        for item in proposal_items(msg):
            if all(s.get("id") != item.get("id") for s in self.seen):
                self.seen.append(item)
                self.waiting.append(item)

    def apply(self, nb: Any, running: int) -> list[Answer]:
        """Apply what arrived while cell ``running`` ran (only with ``accept``)."""
        if not self.accept:
            return []
        answers = [self._apply_one(nb, running, p) for p in self.waiting]
        self.waiting.clear()
        return answers

    def finish(self, nb: Any) -> None:
        """Delete the cells whose deletion waited for the end of the run."""
        nb.cells = [c for c in nb.cells if c.get("id") not in self.deferred]
        self.deferred.clear()

    def _apply_one(self, nb: Any, running: int, proposal: dict[str, Any]) -> Answer:
        import nbformat

        number = int(proposal.get("number", 0))
        ids = [c.get("id") for c in nb.cells]
        target = proposal.get("cell_id")
        action = proposal.get("action")
        if action == "insert":
            anchor = target or proposal.get("turn_cell_id")
            at = ids.index(anchor) + (proposal.get("position") != "before") if anchor in ids else running + 1
            source = str(proposal.get("source", ""))
            if proposal.get("cell_type") == "markdown":
                cell = nbformat.v4.new_markdown_cell(source)
            else:
                cell = nbformat.v4.new_code_cell(PYTHON_MAGIC + source)
            nb.cells.insert(max(at, running + 1), cell)
            return Answer(number, "accepted", cell_id=cell.id)
        if target not in ids:
            return Answer(number, "failed", message=f"cell {target} is not in the notebook")
        index = ids.index(target)
        cell = nb.cells[index]
        if _code(cell.source) != proposal.get("old_source"):
            return Answer(number, "failed", message=f"cell {target} no longer reads as the agent saw it")
        if action == "edit":
            cell.source = PYTHON_MAGIC + str(proposal.get("source", ""))
            return Answer(number, "accepted", cell_id=target)
        if index > running:
            del nb.cells[index]
        else:
            self.deferred.append(str(target))
        return Answer(number, "accepted")
