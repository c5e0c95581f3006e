"""The context a turn took from the notebook, in JupyterLab and Notebook 7 with their default settings: the
saved turn says "notebook: 2 cells, 1 variable" and opens to the cells as they were sent (text, never HTML)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import Page, expect

from agentcell import Engine, NotebookContext, ScriptedProvider
from agentcell.records.notebook_context import CellOutput, CodeCell, Variable
from agentcell.render.previews import preview_prompt

from .conftest import lab_env
from .lab import Lab, run_lab, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(240)]

TURN_MIMETYPE = "application/vnd.agentcell.turn+json"


@pytest.fixture(scope="module")
def default_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("context-lab")
    with run_lab(base, env=lab_env(base), defaults=True) as server:
        yield server


def _turn_events(tmp_path: Path) -> list[dict[str, object]]:
    """A real turn's durable events, on the scripted model, as the kernel saves them in the bundle."""
    engine = Engine(tmp_path / "turn.db", providers={"scripted": ScriptedProvider()})
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    bold = "'<b>bold</b>'"
    cells = [
        CodeCell(cell_id="c1", source="print(6 * 7)", outputs=[CellOutput(kind="stdout", text="42")]),
        CodeCell(cell_id="c2", source=bold, outputs=[CellOutput(kind="result", text=bold)]),
    ]
    context = NotebookContext(cells=cells, variables=[Variable(name="answer", type="int", summary="42")])
    result = session.send_sync("What happened above?", context=context)
    engine.close()
    return [preview_prompt(json.loads(event.model_dump_json())) for event in result.events]


def test_a_saved_turn_opens_to_the_cells_it_was_sent_in_lab_and_notebook_7(
    page: Page, default_lab: Lab, tmp_path: Path
) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "agentcell", "display_name": "agentcell", "language": "markdown"}
    cell = nbformat.v4.new_code_cell("What happened above?")
    with ThreadPoolExecutor(1) as worker:  # Playwright's sync API keeps an event loop on this thread
        events = worker.submit(_turn_events, tmp_path).result()
    bundle = {TURN_MIMETYPE: {"events": events}, "text/plain": "a turn"}
    cell.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
    nb.cells.append(cell)
    nbformat.write(nb, default_lab.root / "context.ipynb")

    for url in (default_lab.notebook_url("context.ipynb"), default_lab.notebook7_url("context.ipynb")):
        page.goto(url)
        notebook = page.locator(".agentcell-mime .agentcell-turn .ac-notebook-context details").first
        expect(notebook.locator("summary")).to_have_text("notebook: 2 cells, 1 variable", timeout=30_000)
        cells = notebook.locator("pre.ac-notebook-cell")
        expect(cells.first).not_to_be_visible()  # shut until opened
        notebook.locator("summary").click()
        expect(cells.nth(0)).to_have_text("print(6 * 7)\n—\n42")
        expect(cells.nth(1)).to_contain_text("'<b>bold</b>'")  # as text: no element made of it
        assert notebook.locator("b").count() == 0
        expect(cells.nth(2)).to_have_text("answer: int 42")
        screenshot(page, "notebook-context-" + ("lab" if "/lab/" in url else "notebook7"))
