"""A ``$`` agentcell shows is money, not math, in JupyterLab and Notebook 7 with default settings (issue 38):
``%usage``'s budget row and the budget gallery notebook's own Markdown cells. Both front ends typeset the
rendered text with MathJax, so an escaped ``\\$`` does not help there; a control cell with real math proves
MathJax ran in the page."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import Page, expect

from .lab import APPS, Lab, open_notebook, run_cell, screenshot, wait_cell_done

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(240)]

GALLERY = Path(__file__).resolve().parents[2] / "notebooks" / "budget_and_cost.ipynb"
CONTROL = "Real math: $x^2 + y^2$."


@pytest.mark.parametrize("app", APPS)
def test_usage_and_the_budget_notebook_show_money_not_math(page: Page, lab: Lab, app: str) -> None:
    gallery = nbformat.read(GALLERY, as_version=4)
    prose = [cell.source for cell in gallery.cells if cell.cell_type == "markdown"]
    assert any("per million" in text for text in prose)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "agentcell", "display_name": "agentcell", "language": "markdown"}
    nb.cells = [
        nbformat.v4.new_markdown_cell(CONTROL),
        *(nbformat.v4.new_markdown_cell(text) for text in prose),
        nbformat.v4.new_code_cell("%budget 0.035"),
        nbformat.v4.new_code_cell("%usage"),
    ]
    nbformat.write(nb, lab.root / f"money-{app}.ipynb")
    usage = len(nb.cells) - 1
    open_notebook(page, lab, f"money-{app}.ipynb", app=app)
    run_cell(page, usage - 1)
    wait_cell_done(page, usage - 1)
    run_cell(page, usage)
    wait_cell_done(page, usage)

    cells = page.locator(".jp-Notebook .jp-Cell")
    table = cells.nth(usage).locator(".jp-RenderedMarkdown table")
    expect(table.locator("tr", has_text="budget")).to_have_text(re.compile(r"budget\s*\$0\.035 \(\$0\.035 left\)"))
    # MathJax runs in this page (the control cell is typeset), and nothing else became math.
    expect(cells.nth(0).locator("mjx-container")).to_have_count(1, timeout=20_000)
    expect(page.locator(".jp-Notebook mjx-container")).to_have_count(1)
    budget = cells.filter(has_text="per million input tokens")
    expect(budget).to_contain_text("3 USD per million input tokens and 15 USD per million output tokens")
    screenshot(page, f"money-not-math-{app}")
