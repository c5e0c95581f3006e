"""The running turn's footer in a real JupyterLab (issue 14, 4): what it waits for before the first token,
then output counting up as it streams, and the elapsed time ticking; and how much of the model's context
window the conversation uses, while the turn runs (issue 36)."""

from __future__ import annotations

import json
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


def test_the_footer_shows_the_context_window_gauge_while_the_turn_runs(page: Page, lab: Lab) -> None:
    # The scripted provider reports a 100,000-token window, as a real provider's metadata does; its usage
    # figures stand for what the provider reported.
    slow_tool = {"kind": "tool_call", "name": "python", "input": {"code": "import time\ntime.sleep(6)"}}
    responses = [
        {"steps": [{"kind": "text", "text": "Read."}], "usage": {"input_tokens": 52_000, "output_tokens": 500}},
        {
            "steps": [{"kind": "delay", "seconds": 4}, slow_tool],
            "usage": {"input_tokens": 70_000, "cache_read_input_tokens": 5_000, "output_tokens": 600},
        },
        {"steps": [{"kind": "text", "text": "Slept."}], "usage": {"input_tokens": 76_000, "output_tokens": 50}},
    ]
    path = lab.root / "gauge.script.json"
    path.write_text(json.dumps({"responses": responses, "context_window": 100_000}))
    write_notebook(lab, "gauge.ipynb", [f"%model scripted:{path}", "Read this.", "Now sleep."])
    open_notebook(page, lab, "gauge.ipynb")
    for index in (0, 1):
        run_cell(page, index)
        wait_cell_done(page, index)
    expect(turn(page, 1).locator(".ac-cost .ac-window")).to_have_text("window 53% of 100k · ")
    run_cell(page, 2)
    view = turn(page, 2)
    status = view.locator(".ac-turn-status")
    gauge = view.locator(".ac-cost .ac-window")
    # While the first request waits: the conversation as the previous turn left it.
    expect(view.locator(".ac-progress")).to_contain_text("waiting for scripted", timeout=15_000)
    expect(gauge).to_have_text("window 53% of 100k · ")
    # While the tool runs, its request answered: that request's input and output.
    expect(view.locator(".ac-tool")).to_be_visible(timeout=15_000)
    expect(gauge).to_have_text("window 76% of 100k · ", timeout=5_000)
    assert status.inner_text() != "done"
    screenshot(page, "live-footer-window-gauge")
    wait_cell_done(page, 2)
    expect(status).to_have_text("done", timeout=30_000)
    expect(gauge).to_have_text("window 76% of 100k · ")  # 76,000 + 50 of the last request
