"""A workflow run's progress view in a real JupyterLab (issue 20): a ``%%workflow`` cell on the scripted
provider shows its steps as rows by dependency depth that move from waiting to running to completed while
it runs, each opening to its items' threads; saved and reopened, the notebook shows the same rows."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from .conftest import script
from .lab import Lab, open_notebook, run_cell, save, screenshot, turn, wait_cell_done, write_notebook

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(120)]

PLAN = """%%workflow max_concurrency=3
name: live
steps:
  - {id: notes, agent: {inline: {name: writer}}, for_each: [moon, sun, coast], prompt: "Write about the {{item}}."}
  - {id: merge, agent: {inline: {name: editor}}, depends_on: [notes], prompt: "Join {{steps.notes.outputs}}."}
"""


def _answer(text: str, seconds: float) -> dict[str, object]:
    return {"steps": [{"kind": "delay", "seconds": seconds}, {"kind": "text", "text": text, "chunk_size": 4}]}


def test_a_workflow_run_shows_live_rows_and_reopens_with_them(page: Page, lab: Lab) -> None:
    answers = [_answer(f"A line about part {n}.", 3) for n in range(3)] + [_answer("All joined.", 2)]
    model = script(lab, "workflow-view", answers, pricing={"input_mtok": 3, "output_mtok": 15})
    write_notebook(lab, "workflow-view.ipynb", [model, "%workflows on", PLAN])
    open_notebook(page, lab, "workflow-view.ipynb")
    for index in (0, 1):
        run_cell(page, index)
        wait_cell_done(page, index)
    run_cell(page, 2)

    view = turn(page, 2).locator(".ac-workflow")
    notes, merge = view.locator('[data-step="notes"]'), view.locator('[data-step="merge"]')
    # While the three items run side by side, the step after them waits.
    expect(notes.locator(".ac-wf-items")).to_have_text(re.compile(r"^0/3 items · 3 running$"), timeout=15_000)
    expect(notes).to_have_attribute("data-status", "running")
    expect(merge).to_have_attribute("data-status", "waiting")
    expect(view.locator(".ac-workflow-head")).to_contain_text("Workflow live")
    screenshot(page, "workflow-view-running")
    expect(notes).to_have_attribute("data-status", "completed", timeout=15_000)
    expect(merge).to_have_attribute("data-status", "running")
    wait_cell_done(page, 2)

    def check(where: str) -> None:
        done = turn(page, 2).locator(".ac-workflow")
        expect(done.locator(".ac-workflow-status")).to_have_text("completed", timeout=30_000)
        heads = done.locator(".ac-workflow-level-head")
        expect(heads).to_have_text(["Depth 0 · no dependencies", "Depth 1 · after notes"])
        rows = done.locator(".ac-workflow-row")
        expect(rows.locator(".ac-wf-status")).to_have_text(["✓completed", "✓completed"])
        expect(rows.nth(0).locator(".ac-wf-items")).to_have_text("3/3 items")
        for n in range(2):
            expect(rows.nth(n).locator(".ac-wf-time")).to_have_text(re.compile(r"^\d+(\.\d)? s$"))
            expect(rows.nth(n).locator(".ac-wf-tokens")).to_have_text(re.compile(r"^in [\d,]+ · out [1-9][\d,]*$"))
            expect(rows.nth(n).locator(".ac-wf-cost")).to_have_text(re.compile(r"^\$0\.\d+$"))
        expect(done.locator(".ac-workflow-head")).to_contain_text("4 of 4 items")
        # A row opens to its items' threads.
        rows.nth(0).click()
        threads = done.locator('[data-step="notes"] .ac-thread')
        expect(threads).to_have_count(3)
        threads.nth(1).locator("summary").click()
        expect(threads.nth(1).locator(".ac-message")).to_have_text(re.compile(r"^A line about part \d\.\s*$"))
        assert turn(page, 2).locator(".ac-threads > .ac-thread").count() == 0, where
        screenshot(page, f"workflow-view-{where}")

    check("done")
    save(page)
    open_notebook(page, lab, "workflow-view.ipynb")
    # Reopened: the turn is the saved bundle, drawn by the extension with the same view.
    saved = page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".agentcell-mime .agentcell-turn .ac-workflow")
    expect(saved).to_have_count(1, timeout=30_000)
    check("reopened")
