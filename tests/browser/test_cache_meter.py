"""What the prompt cache saved, in the cost meter of a real JupyterLab: per turn and per session."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from .conftest import script
from .lab import Lab, open_notebook, run_cell, save, screenshot, turn, wait_cell_done, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(180)]


def test_the_cost_meter_says_what_the_cache_saved(page: Page, lab: Lab) -> None:
    # $3 / $15 per million tokens, cache reads $0.30 and 5-minute writes $3.75. The first turn writes a
    # 10,000-token prefix ($0.0375 instead of $0.03 uncached); the second reads it back ($0.003).
    write = {"input_tokens": 1000, "output_tokens": 200, "cache_creation": {"ephemeral_5m_input_tokens": 10_000}}
    read = {"input_tokens": 1000, "output_tokens": 200, "cache_read_input_tokens": 10_000}
    model = script(
        lab,
        "cache",
        [
            {"steps": [{"kind": "text", "text": "Written."}], "usage": write},
            {"steps": [{"kind": "text", "text": "Read back."}], "usage": read},
        ],
        pricing={"input_mtok": 3, "output_mtok": 15},
    )
    path = write_notebook(lab, "cache.ipynb", [model, "First question?", "Second question?"])
    open_notebook(page, lab, "cache.ipynb")
    for index in (0, 1, 2):
        run_cell(page, index)
        wait_cell_done(page, index)
    first, second = turn(page, 1).locator(".ac-cost"), turn(page, 2).locator(".ac-cost")
    expect(turn(page, 2).locator(".ac-turn-status")).to_have_text("done", timeout=30_000)
    # Turn 1: $0.003 + $0.0375 + $0.003 = $0.0435 against $0.033 + $0.003 = $0.036 uncached.
    expect(first.locator(".ac-turn-cost")).to_have_text("turn $0.0435")
    expect(first.locator(".ac-turn-saving")).to_have_text(" (uncached $0.036, $0.0075 more for cache writes)")
    # Turn 2: $0.003 + $0.003 + $0.003 = $0.009; the session has saved $0.027 - $0.0075 = $0.0195.
    expect(second.locator(".ac-turn-saving")).to_have_text(" (uncached $0.036, saved $0.027 by cache)")
    expect(second.locator(".ac-session-cost")).to_have_text(" · session $0.0525")
    expect(second.locator(".ac-session-saving")).to_have_text(" (uncached $0.072, saved $0.0195 by cache)")
    screenshot(page, "cost-meter-cache")
    # The saved notebook's static fallback (for a viewer without the widget) carries the same line.
    save(page)
    outputs = json.loads(path.read_text())["cells"][2]["outputs"]
    line = "session $0.0525 (uncached $0.072, saved $0.0195 by cache)"
    html = ["".join(o["data"]["text/html"]) for o in outputs if "text/html" in o["data"]]
    markdown = ["".join(o["data"]["text/markdown"]) for o in outputs if "text/markdown" in o["data"]]
    assert html and markdown
    assert all(line in page_html for page_html in html)
    # Markdown viewers typeset $…$ as math: the fallback escapes each dollar sign.
    assert all(line.replace("$", "\\$") in text for text in markdown)
