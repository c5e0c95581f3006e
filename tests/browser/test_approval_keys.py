"""A pending approval takes y / a / n from command mode while its cell is selected, and says so (issue 38):
after Shift+Enter the user is on the next cell; selecting the turn's cell and pressing a key answers, without
reaching into the output, and the notebook's own y / a / n shortcuts do not fire."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from .conftest import script
from .lab import Lab, open_notebook, run_cell, screenshot, turn, wait_cell_done, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.mark.parametrize(("app", "key", "status"), [("lab", "y", "completed"), ("notebook7", "n", "denied")])
def test_a_key_in_command_mode_answers_the_selected_cells_approval(
    page: Page, lab: Lab, app: str, key: str, status: str
) -> None:
    marker = lab.root / f"cell-key-{app}.marker"
    call = {"kind": "tool_call", "name": "bash", "input": {"command": f"touch {marker}"}}
    model = script(lab, f"cell-keys-{app}", [{"steps": [call]}, {"steps": [{"kind": "text", "text": "Done."}]}])
    write_notebook(lab, f"cell-keys-{app}.ipynb", [model, "Touch the marker."])
    open_notebook(page, lab, f"cell-keys-{app}.ipynb", app=app)
    run_cell(page, 0)
    wait_cell_done(page, 0)
    run_cell(page, 1)  # Shift+Enter: the next cell is selected now
    view = turn(page, 1)
    panel = view.locator(".ac-approval")
    expect(panel.locator(".ac-approval-keys")).to_have_text(
        "y, a or n answer here, or from this cell selected in command mode."
    )
    cells = page.locator(".jp-Notebook .jp-Cell")
    count = cells.count()
    cells.nth(1).locator(".jp-InputArea-prompt").click()  # select the turn's cell: command mode
    expect(page.locator(".jp-Notebook.jp-mod-commandMode")).to_have_count(1)
    expect(cells.nth(1)).to_have_class(re.compile(r"\bjp-mod-active\b"))
    assert not panel.evaluate("p => p.contains(document.activeElement)")  # the panel does not have the focus
    screenshot(page, f"approval-cell-keys-{app}")
    page.keyboard.press(key)
    expect(view.locator(".ac-tool .ac-status")).to_have_text(status, timeout=30_000)
    wait_cell_done(page, 1)
    assert marker.exists() == (key == "y")
    assert cells.count() == count  # `a`/`y` did not insert a cell or change one: the approval took the key
