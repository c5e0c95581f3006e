"""``agentcell run --accept-cells`` applies proposals to the notebook nbclient walks by index: nothing lands
at or before the running cell (a new cell for an earlier place goes right after it; a deletion there waits
for the end of the run), and an edit of a cell that no longer reads as the agent saw it fails."""

from __future__ import annotations

from typing import Any

import nbformat

from agentcell.kernel.headless_proposals import Answer, ProposalApplier


def _notebook() -> Any:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(s, id=i)
        for i, s in (("a", "%%python\nx = 1"), ("ask", "Go."), ("z", "%%python\nz = 0"))
    ]
    return nb


def _batch(*proposals: dict[str, Any]) -> dict[str, Any]:
    items = [{"type": "agent.cell_proposed", "id": f"p{p['number']}", **p} for p in proposals]
    return {
        "msg_type": "comm_msg",
        "content": {"data": {"method": "custom", "content": {"type": "items", "items": items}}},
    }


def test_nothing_lands_at_or_before_the_running_cell() -> None:
    nb = _notebook()
    applier = ProposalApplier(accept=True)
    applier.on_message(_batch(
        {"number": 1, "action": "insert", "cell_id": "a", "position": "before", "source": "early = 1"},
        {"number": 2, "action": "delete", "cell_id": "a", "old_source": "x = 1"},
        {"number": 3, "action": "edit", "cell_id": "z", "old_source": "z = 5", "source": "z = 9"},
        {"number": 4, "action": "delete", "cell_id": "z", "old_source": "z = 0"},
    ))  # fmt: skip
    answers = applier.apply(nb, running=1)
    inserted = nb.cells[2]
    assert [c.id for c in nb.cells] == ["a", "ask", inserted.id]  # after the running cell; z deleted at once
    assert inserted.source == "%%python\nearly = 1"
    assert answers == [
        Answer(1, "accepted", cell_id=inserted.id),
        Answer(2, "accepted"),
        Answer(3, "failed", message="cell z no longer reads as the agent saw it"),
        Answer(4, "accepted"),
    ]
    applier.finish(nb)
    assert [c.id for c in nb.cells] == ["ask", inserted.id]  # a's deletion waited for the end of the run


def test_without_accept_cells_proposals_are_only_seen() -> None:
    nb = _notebook()
    applier = ProposalApplier(accept=False)
    applier.on_message(_batch({"number": 1, "action": "insert", "source": "y = 2"}))
    applier.on_message(_batch({"number": 1, "action": "insert", "source": "y = 2"}))  # a batch sent again
    assert applier.apply(nb, running=1) == [] and len(nb.cells) == 3
    assert [p["number"] for p in applier.seen] == [1]
