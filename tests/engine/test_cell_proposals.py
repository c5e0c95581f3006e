"""The agent proposes cells: ``notebook_edit`` is offered only to a notebook that takes proposals and a
session that may change files; a call appends ``agent.cell_proposed`` and changes nothing else; a cell the
model was never shown is refused with the cells it may name; the user's answer reaches the next request."""

from __future__ import annotations

from pathlib import Path

from agentcell import Engine, ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedToolCall
from agentcell.providers.base import ModelRequest, TextPart, ToolResultPart
from agentcell.records.cell_events import AgentCellProposed, UserCellProposalResolved
from agentcell.records.notebook_context import CellOutput, CodeCell, NotebookContext

from ..conftest import SONNET_LIKE

EDIT = "notebook_edit"


def _context(*, editable: bool = True) -> NotebookContext:
    cell = CodeCell(cell_id="c1", execution_count=1, source="x = 1", outputs=[CellOutput(kind="stdout", text="ok")])
    return NotebookContext(cells=[cell], editable=editable)


def _call(**arguments: object) -> ScriptedResponse:
    return ScriptedResponse(steps=[ScriptedToolCall(name=EDIT, input=dict(arguments))])


def _say(text: str) -> ScriptedResponse:
    return ScriptedResponse(steps=[ScriptedText(text=text)])


def _engine(db: Path, script: list[ScriptedResponse]) -> tuple[Engine, ScriptedProvider]:
    provider = ScriptedProvider(script, pricing=SONNET_LIKE)
    return Engine(db, providers={"scripted": provider}), provider


def _tools(request: ModelRequest) -> list[str]:
    return [t.name for t in request.tools]


def _results(request: ModelRequest) -> list[ToolResultPart]:
    return [p for m in request.messages for p in m.content if isinstance(p, ToolResultPart)]


def _said(request: ModelRequest) -> str:
    return "\n".join(p.text for m in request.messages for p in m.content if isinstance(p, TextPart))


def test_offered_only_to_a_notebook_that_takes_proposals_and_never_read_only(db_path: Path) -> None:
    engine, provider = _engine(db_path, [_say("a"), _say("b"), _say("c"), _say("d")])
    agent = engine.agents.create(name="a", model="scripted").id
    session = engine.sessions.create(agent=agent)
    session.send_sync("hi", cell_id="p1", context=_context(editable=False))
    assert EDIT not in _tools(provider.requests[-1])
    assert "cell id: c1" not in _said(provider.requests[-1])  # the context reads as it did before
    session.send_sync("hi", cell_id="p2", context=_context())
    assert EDIT in _tools(provider.requests[-1])
    assert "(cell id: c1)" in _said(provider.requests[-1])
    session.send_sync("hi", cell_id="p3")  # no notebook (the API, ACP): no tool
    assert EDIT not in _tools(provider.requests[-1])
    read_only = engine.sessions.create(agent=agent, permissions="read-only")
    read_only.send_sync("hi", cell_id="p1", context=_context())
    assert EDIT not in _tools(provider.requests[-1])
    engine.close()


def test_a_proposal_waits_and_the_answer_reaches_the_next_request(db_path: Path) -> None:
    script = [
        _call(action="insert", source="y = x + 1\nprint(y)", note="the next step"),
        _say("proposed"),
        _call(action="edit", cell_id="c1", source="x = 2"),
        _say("proposed an edit"),
        _say("noted"),
    ]
    engine, provider = _engine(db_path, script)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    session.send_sync("add a cell", cell_id="p1", context=_context())
    [proposal] = session.events(types=["agent.cell_proposed"])
    assert isinstance(proposal, AgentCellProposed)
    assert (proposal.number, proposal.action, proposal.turn_cell_id) == (1, "insert", "p1")
    [result] = _results(provider.requests[-1])
    assert "Proposal 1 (a new code cell below the turn) is waiting for the user's review" in str(result.content)

    session.send_sync("and change c1", cell_id="p2", context=NotebookContext(editable=True))
    [_, edit] = session.events(types=["agent.cell_proposed"])
    assert isinstance(edit, AgentCellProposed)
    assert (edit.number, edit.cell_id, edit.old_source, edit.source) == (2, "c1", "x = 1", "x = 2")

    for answer in (
        session.make(
            UserCellProposalResolved, proposal_id=proposal.id, number=1, outcome="accepted", source="y = x + 10",
            cell_id="c2", run=True,
        ),
        session.make(UserCellProposalResolved, proposal_id=edit.id, number=2, outcome="rejected", message="keep it"),
    ):  # fmt: skip
        session.emit(answer)
    session.send_sync("what now?", cell_id="p3", context=NotebookContext(editable=True))
    said = _said(provider.requests[-1])
    assert "The user accepted proposal 1 (a new code cell below the turn) after editing it" in said
    assert "y = x + 10" in said and "it is cell c2; they ran it" in said
    assert "The user rejected proposal 2 (an edit of cell c1); the notebook is unchanged. They said: keep it" in said
    engine.close()


def test_a_cell_never_shown_is_refused_with_the_cells_it_may_name(db_path: Path) -> None:
    script = [_call(action="edit", cell_id="gone", source="z = 0"), _call(action="delete"), _say("sorry")]
    engine, provider = _engine(db_path, script)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    session.send_sync("fix it", cell_id="p1", context=_context())
    results = _results(provider.requests[-1])
    assert [r.is_error for r in results] == [True, True]
    assert "no code cell with id 'gone'" in str(results[0].content) and "Cells you can name: c1" in str(
        results[0].content
    )
    assert "delete needs the cell_id" in str(results[1].content)
    assert session.events(types=["agent.cell_proposed"]) == []
    engine.close()
