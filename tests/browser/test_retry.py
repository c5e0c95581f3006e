"""A failed turn shows its error once and offers Retry, which runs the turn's cell again (issue 38)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .conftest import script
from .lab import APPS, Lab, open_notebook, run_cell, screenshot, turn, wait_cell_done, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(240)]

FAILURE = {"kind": "error", "message": "the model is overloaded", "error_type": "overloaded_error", "retryable": False}


@pytest.mark.parametrize("app", APPS)
def test_a_failed_turn_says_its_error_once_and_retry_runs_the_cell_again(page: Page, lab: Lab, app: str) -> None:
    model = script(lab, f"retry-{app}", [{"steps": [FAILURE]}, {"steps": [{"kind": "text", "text": "Recovered."}]}])
    write_notebook(lab, f"retry-{app}.ipynb", [model, "Answer me."])
    open_notebook(page, lab, f"retry-{app}.ipynb", app=app)
    run_cell(page, 0)
    wait_cell_done(page, 0)
    run_cell(page, 1)
    wait_cell_done(page, 1)
    cell = page.locator(".jp-Notebook .jp-Cell").nth(1)
    view = turn(page, 1)
    expect(view.locator(".ac-turn-status")).to_have_text("failed", timeout=30_000)
    expect(view.locator(".ac-error-block")).to_have_count(1)
    # One error view: the body's error block; neither the header nor a red error output says it again.
    expect(cell.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")).to_have_count(0)
    assert cell.inner_text().count("the model is overloaded") == 1, cell.inner_text()
    retry = view.locator(".ac-retry")
    expect(retry).to_be_visible()
    screenshot(page, f"failed-turn-{app}")
    count = page.locator(".jp-Notebook .jp-Cell").count()
    retry.click()  # runs the cell again, as Shift+Enter on it would
    expect(turn(page, 1).locator(".ac-message")).to_have_text("Recovered.", timeout=30_000)
    expect(turn(page, 1).locator(".ac-turn-status")).to_have_text("done", timeout=30_000)
    wait_cell_done(page, 1)
    expect(turn(page, 1)).to_have_count(1)  # the re-run replaced the failed turn's output
    assert page.locator(".jp-Notebook .jp-Cell").count() == count  # no cell added
    screenshot(page, f"retried-turn-{app}")
