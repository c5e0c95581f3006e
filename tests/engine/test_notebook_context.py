"""A notebook's context in the conversation: code cells go before the message they came with, a cell run
again leaves its earlier place, a re-run prose cell keeps the cells its earlier turn was sent, Run All twice
sends the same requests, and a model without image input gets a placeholder."""

from __future__ import annotations

from pathlib import Path

from agentcell import Engine, ScriptedProvider
from agentcell.providers.base import ImagePart, ModelRequest, TextPart
from agentcell.records.content import ImageSource
from agentcell.records.notebook_context import CellOutput, CodeCell, NotebookContext, Variable

from ..conftest import SONNET_LIKE

PNG = ImageSource(media_type="image/png", data="iVBORw0KGgo=")


def _engine(db: Path) -> tuple[Engine, ScriptedProvider]:
    provider = ScriptedProvider(pricing=SONNET_LIKE)
    return Engine(db, providers={"scripted": provider}), provider


def _cell(cell_id: str, printed: str, *, image: bool = False) -> NotebookContext:
    outputs = [CellOutput(kind="stdout", text=printed)]
    if image:
        outputs.append(CellOutput(kind="display", text="<Figure>", image=PNG))
    return NotebookContext(cells=[CodeCell(cell_id=cell_id, execution_count=1, source="x = 1", outputs=outputs)])


def _text(request: ModelRequest) -> str:
    return "\n".join(p.text for m in request.messages for p in m.content if isinstance(p, TextPart))


def test_cells_go_before_the_message_and_a_cell_run_again_leaves_its_earlier_place(db_path: Path) -> None:
    engine, provider = _engine(db_path)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    variables = [Variable(name="x", type="int", summary="1")]
    context = _cell("c1", "first run", image=True).model_copy(update={"variables": variables})
    session.send_sync("what happened?", cell_id="p1", context=context)
    [user] = provider.requests[-1].messages
    kinds = [type(p).__name__ for p in user.content]
    # The intro, the cell and its image, the variables (and the line that says the message follows), the message.
    assert kinds == ["TextPart", "TextPart", "ImageBlock", "TextPart", "TextPart"]
    assert isinstance(user.content[0], TextPart) and "It is no request" in user.content[0].text
    assert isinstance(user.content[1], TextPart) and "first run" in user.content[1].text
    assert isinstance(user.content[3], TextPart) and "- x: int, 1" in user.content[3].text
    assert isinstance(user.content[4], TextPart) and user.content[4].text == "what happened?"

    session.send_sync("and now?", cell_id="p2", context=_cell("c1", "second run"))
    said = _text(provider.requests[-1])
    assert "second run" in said and "first run" not in said
    assert not [p for m in provider.requests[-1].messages for p in m.content if isinstance(p, ImagePart)]
    first = provider.requests[-1].messages[0]
    assert [p.text for p in first.content if isinstance(p, TextPart)][-1] == "what happened?"  # kept its prompt
    engine.close()


def test_a_prose_cell_run_again_keeps_the_cells_its_turn_was_sent_and_run_all_repeats(db_path: Path) -> None:
    engine, provider = _engine(db_path)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    notebook = [("p1", _cell("a", "cell a")), ("p2", _cell("b", "cell b"))]
    for cell, context in notebook:
        session.send_sync(f"ask {cell}", cell_id=cell, context=context)
    first_run = [r.model_dump() for r in provider.requests]
    for cell, context in notebook:  # Run All: each code cell runs again before the prose cell after it
        session.send_sync(f"ask {cell}", cell_id=cell, context=context)
    assert [r.model_dump() for r in provider.requests[2:]] == first_run

    # Only p1 again (no code cell ran since): it still carries cell a, and nothing of cell b (run after it).
    session.send_sync("ask p1", cell_id="p1", context=NotebookContext())
    said = _text(provider.requests[-1])
    assert "cell a" in said and "cell b" not in said
    engine.close()


def test_a_model_without_image_input_gets_a_placeholder(db_path: Path) -> None:
    engine, provider = _engine(db_path)
    agent = engine.agents.create(name="a", model={"id": "scripted", "images": False})
    session = engine.sessions.create(agent=agent.id)
    session.send_sync("look", context=_cell("c1", "plotted", image=True))
    [user] = provider.requests[-1].messages
    assert not [p for p in user.content if isinstance(p, ImagePart)]
    assert "[an image the notebook showed (image/png); this model takes no image input]" in _text(provider.requests[-1])
    engine.close()


def test_an_empty_context_is_not_stored(db_path: Path) -> None:
    engine, _ = _engine(db_path)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    session.send_sync("hi", context=NotebookContext())
    [message] = session.events(types=["user.message"])
    assert message.model_dump(mode="json").get("context") is None
    engine.close()
