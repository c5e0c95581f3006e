"""An external ACP agent's turn in a real JupyterLab and Chromium: ``agentcell acp`` on its scripted model,
started by ``%agent acp --``, shows the same tool card and approval panel as a turn of the kernel's own."""

from __future__ import annotations

import sys

import pytest
from playwright.sync_api import Page, expect

from .conftest import script
from .lab import Lab, open_notebook, run_cell, screenshot, turn, wait_cell_done, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(180)]


def test_an_external_agents_tool_call_is_a_card_with_the_approval_panel(page: Page, lab: Lab) -> None:
    marker = lab.root / "external.marker"
    model = script(
        lab,
        "external",
        [
            {"steps": [{"kind": "tool_call", "name": "bash", "input": {"command": f"touch {marker}; echo made it"}}]},
            {"steps": [{"kind": "text", "text": "The external agent made it."}]},
        ],
    ).removeprefix("%model ")
    choose = f"%agent acp -- {sys.executable} -m agentcell.cli acp --model {model}"
    write_notebook(lab, "external.ipynb", [choose, "Make the marker."])
    open_notebook(page, lab, "external.ipynb")
    run_cell(page, 0)
    wait_cell_done(page, 0)

    run_cell(page, 1)
    card = turn(page, 1).locator(".ac-tool")
    panel = card.locator(".ac-approval")
    expect(panel).to_contain_text("agentcell (an external agent) asks before this call", timeout=60_000)
    expect(card.locator(".ac-status")).to_have_text("awaiting approval")
    screenshot(page, "external-approval-asking")
    panel.get_by_role("button", name="Allow once").click()
    expect(card.locator(".ac-status")).to_have_text("completed", timeout=30_000)
    expect(card.locator(".ac-tool-output")).to_contain_text("made it")
    expect(card.locator(".ac-note-allow")).to_have_text("Allowed once")
    expect(turn(page, 1).locator(".ac-message")).to_have_text("The external agent made it.", timeout=30_000)
    wait_cell_done(page, 1)
    assert marker.exists()
    screenshot(page, "external-tool-card")
