"""The running turn's footer in a real JupyterLab (issue 14, 4): what it waits for before the first token,
then output counting up as it streams, and the elapsed time ticking."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from .conftest import script
from .lab import Lab, open_notebook, run_cell, screenshot, turn, wait_cell_done, write_notebook

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(180)]


def _seconds(text: str) -> float:
    match = re.fullmatch(r"([\d.]+) (ms|s)", text.strip())
    assert match, text
    return float(match[1]) / (1000 if match[2] == "ms" else 1)


def test_the_footer_says_what_it_waits_for_then_counts_up(page: Page, lab: Lab) -> None:
    steps = [
        {"kind": "delay", "seconds": 3},
        {"kind": "text", "text": "word " * 300, "chunk_size": 5, "delay": 0.03},
    ]
    model = script(lab, "live-footer", [{"steps": steps}], pricing={"input_mtok": 3, "output_mtok": 15})
    write_notebook(lab, "live-footer.ipynb", [model, "Talk for a while."])
    open_notebook(page, lab, "live-footer.ipynb")
    run_cell(page, 0)
    wait_cell_done(page, 0)
    run_cell(page, 1)
    meter = turn(page, 1).locator(".ac-cost")
    expect(meter.locator(".ac-progress")).to_contain_text("waiting for scripted", timeout=15_000)
    screenshot(page, "live-footer-waiting")
    expect(meter.locator(".ac-tokens")).to_contain_text("streaming", timeout=15_000)
    first = _seconds(meter.locator(".ac-elapsed").inner_text())
    page.wait_for_timeout(2_000)
    later = _seconds(meter.locator(".ac-elapsed").inner_text())
    assert later >= first + 1, (first, later)  # the clock ticks while it streams
    streamed = [int(n.replace(",", "")) for n in re.findall(r"~([\d,]+) streaming", meter.inner_text())]
    assert streamed and streamed[0] > 0
    screenshot(page, "live-footer-streaming")
    wait_cell_done(page, 1)
    expect(turn(page, 1).locator(".ac-turn-status")).to_have_text("done", timeout=30_000)
    assert turn(page, 1).locator(".ac-progress").count() == 0  # the estimate gave way to the request's usage
