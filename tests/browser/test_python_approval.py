"""The python tool asks in a real JupyterLab under workspace-write (its default), and "Allow always" is the
session's python rule: the next call runs unasked, and ``%permissions`` lists it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from .conftest import lab_env, script
from .lab import Lab, open_notebook, run_cell, run_lab, screenshot, turn, wait_cell_done, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def asking_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("lab-python-asks")
    # The kernel as a user gets it: the test suite's own allowing setting is not in its environment.
    with run_lab(base, env={**lab_env(base), "AGENTCELL_PYTHON_TOOL": "ask"}) as server:
        yield server


def test_the_python_tool_asks_and_allow_always_lets_the_next_call_run(page: Page, asking_lab: Lab) -> None:
    lab = asking_lab
    first, second = lab.root / "first.marker", lab.root / "second.marker"
    model = script(
        lab,
        "python-asks",
        [
            {"steps": [{"kind": "tool_call", "name": "python", "input": {"code": f"open({str(first)!r}, 'w')"}}]},
            {"steps": [{"kind": "text", "text": "Made the first."}]},
            {"steps": [{"kind": "tool_call", "name": "python", "input": {"code": f"open({str(second)!r}, 'w')"}}]},
            {"steps": [{"kind": "text", "text": "Made the second."}]},
        ],
    )
    write_notebook(lab, "asks.ipynb", [model, "Make the first marker.", "Make the second marker.", "%permissions"])
    open_notebook(page, lab, "asks.ipynb")
    run_cell(page, 0)
    wait_cell_done(page, 0)

    run_cell(page, 1)
    card = turn(page, 1).locator(".ac-tool")
    panel = card.locator(".ac-approval")
    expect(panel).to_contain_text("python wants to run", timeout=30_000)
    expect(panel.locator(".ac-approval-reason")).to_contain_text("not sandboxed")
    expect(card.locator(".ac-status")).to_have_text("awaiting approval")
    assert not first.exists(), "the code ran before the user answered"
    screenshot(page, "python-approval-asking")
    panel.get_by_role("button", name="Allow always").click()
    expect(card.locator(".ac-status")).to_have_text("completed", timeout=30_000)
    wait_cell_done(page, 1)
    assert first.exists()

    run_cell(page, 2)
    card = turn(page, 2).locator(".ac-tool")
    expect(card.locator(".ac-status")).to_have_text("completed", timeout=30_000)
    expect(card.locator(".ac-approval")).to_have_count(0)  # the rule answered: nobody was asked
    wait_cell_done(page, 2)
    assert second.exists()

    run_cell(page, 3)
    wait_cell_done(page, 3)
    output = page.locator(".jp-Notebook .jp-Cell").nth(3).locator(".jp-OutputArea")
    expect(output).to_contain_text("python tool: asked before each run")
    expect(output).to_contain_text("python:kernel: allow  (every run of the python tool, this session)")
