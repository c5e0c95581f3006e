"""The turn view in a real JupyterLab and Chromium, on the agentcell kernel with the scripted provider."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from .conftest import script
from .lab import Lab, open_notebook, run_cell, save, screenshot, turn, wait_cell_done, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(180)]

WORDS = " ".join(f"word{i}" for i in range(400))


def test_text_streams_progressively_and_completely(page: Page, lab: Lab) -> None:
    model = script(lab, "stream", [{"steps": [{"kind": "text", "text": WORDS, "chunk_size": 7, "delay": 0.01}]}])
    write_notebook(lab, "stream.ipynb", [model, "Tell me many words."])
    open_notebook(page, lab, "stream.ipynb")
    run_cell(page, 0)
    wait_cell_done(page, 0)
    run_cell(page, 1)
    view = turn(page, 1)
    message = view.locator(".ac-message")
    expect(message).to_contain_text("word10", timeout=30_000)
    expect(view.locator(".ac-turn-status")).to_have_text("running")
    early = len(message.inner_text())
    screenshot(page, "stream-running")
    expect(message).to_contain_text("word200", timeout=30_000)
    assert len(message.inner_text()) > early  # it grew while the cell ran
    expect(view.locator(".ac-turn-status")).to_have_text("done", timeout=30_000)
    assert message.inner_text().strip() == WORDS
    screenshot(page, "stream-done")


def test_a_tool_card_shows_input_and_output(page: Page, lab: Lab) -> None:
    model = script(
        lab,
        "tool",
        [
            {"steps": [{"kind": "tool_call", "name": "python", "input": {"code": "print(6 * 7)"}}]},
            {"steps": [{"kind": "text", "text": "The answer is 42."}]},
        ],
    )
    write_notebook(lab, "tool.ipynb", [model, "Compute six times seven."])
    open_notebook(page, lab, "tool.ipynb")
    run_cell(page, 0)
    wait_cell_done(page, 0)
    run_cell(page, 1)
    card = turn(page, 1).locator(".ac-tool")
    expect(card.locator(".ac-tool-name")).to_have_text("python", timeout=30_000)
    expect(card.locator(".ac-tool-input code.language-python")).to_contain_text("print(6 * 7)")
    expect(card.locator(".ac-status")).to_have_text("completed", timeout=30_000)
    expect(card.locator(".ac-tool-output pre")).to_have_text("42\n")
    expect(turn(page, 1).locator(".ac-message")).to_have_text("The answer is 42.")
    wait_cell_done(page, 1)
    screenshot(page, "tool-card")


def test_allow_runs_the_tool_and_deny_returns_a_refusal(page: Page, lab: Lab) -> None:
    allowed, denied = lab.root / "allowed.marker", lab.root / "denied.marker"
    model = script(
        lab,
        "approve",
        [
            {"steps": [{"kind": "tool_call", "name": "bash", "input": {"command": f"touch {allowed}; echo made it"}}]},
            {"steps": [{"kind": "text", "text": "Done with the first."}]},
            {"steps": [{"kind": "tool_call", "name": "bash", "input": {"command": f"touch {denied}"}}]},
            {"steps": [{"kind": "text", "text": "Understood, not touching it."}]},
        ],
    )
    write_notebook(lab, "approve.ipynb", [model, "Make the first marker.", "Make the second marker."])
    open_notebook(page, lab, "approve.ipynb")
    run_cell(page, 0)
    wait_cell_done(page, 0)

    run_cell(page, 1)
    card = turn(page, 1).locator(".ac-tool")
    panel = card.locator(".ac-approval")
    expect(panel).to_contain_text("bash wants to run", timeout=30_000)
    expect(panel.locator(".ac-command")).to_contain_text(f"$ touch {allowed}")  # the command is the headline
    expect(card.locator(".ac-status")).to_have_text("awaiting approval")
    screenshot(page, "approval-asking")
    panel.get_by_role("button", name="Allow once").click()
    expect(card.locator(".ac-status")).to_have_text("completed", timeout=30_000)
    expect(card.locator(".ac-tool-output")).to_contain_text("made it")
    expect(card.locator(".ac-note-allow")).to_have_text("Allowed once")
    wait_cell_done(page, 1)
    assert allowed.exists()

    run_cell(page, 2)
    card = turn(page, 2).locator(".ac-tool")
    panel = card.locator(".ac-approval")
    expect(panel).to_be_visible(timeout=30_000)
    panel.get_by_role("textbox").fill("not today")
    panel.get_by_role("button", name="Deny").click()
    expect(card.locator(".ac-status")).to_have_text("denied", timeout=30_000)
    # It never ran: the note says the denial once, with the user's words, and the card shows no duration.
    expect(card.locator(".ac-note-deny")).to_have_text("Denied: not today")
    expect(card.locator(".ac-tool-output")).to_have_count(0)
    expect(card.locator(".ac-tool-time")).to_have_count(0)
    expect(turn(page, 2).locator(".ac-message")).to_have_text("Understood, not touching it.")
    wait_cell_done(page, 2)
    assert not denied.exists()
    screenshot(page, "approval-denied")


def test_the_cost_meter_shows_the_turn_and_the_budget(page: Page, lab: Lab) -> None:
    # $3 / $15 per million tokens: 1,000 in and 200 out cost $0.003 + $0.003.
    model = script(
        lab,
        "cost",
        [{"steps": [{"kind": "text", "text": "Cheap."}], "usage": {"input_tokens": 1000, "output_tokens": 200}}],
        pricing={"input_mtok": 3, "output_mtok": 15},
    )
    write_notebook(lab, "cost.ipynb", [model, "%budget 0.5", "How much?"])
    open_notebook(page, lab, "cost.ipynb")
    for index in (0, 1):
        run_cell(page, index)
        wait_cell_done(page, index)
    run_cell(page, 2)
    meter = turn(page, 2).locator(".ac-cost")
    expect(turn(page, 2).locator(".ac-turn-status")).to_have_text("done", timeout=30_000)
    expect(meter.locator(".ac-turn-cost")).to_have_text("turn $0.006", timeout=30_000)
    expect(meter.locator(".ac-session-cost")).to_have_text(" · session $0.006")
    expect(meter.locator(".ac-tokens")).to_have_text("in 1,000 · out 200 · cache read 0 · cache write 0")
    expect(meter.locator(".ac-budget-label")).to_have_text("budget $0.5: $0.494 left")
    expect(meter.locator(".ac-budget-bar")).to_have_attribute("aria-valuenow", "1")
    screenshot(page, "cost-meter")


HOSTILE = (
    "Look: <script>window.__pwned = 'script'</script>\n\n"
    '<img src="x" onerror="window.__pwned = \'onerror\'">\n\n'
    "[click me](javascript:window.__pwned='link') and **bold** text."
)


def test_a_script_in_the_model_text_does_not_run(page: Page, lab: Lab) -> None:
    model = script(lab, "xss", [{"steps": [{"kind": "text", "text": HOSTILE}]}])
    write_notebook(lab, "xss.ipynb", [model, "Say something nasty."])
    open_notebook(page, lab, "xss.ipynb")
    run_cell(page, 0)
    wait_cell_done(page, 0)
    run_cell(page, 1)
    message = turn(page, 1).locator(".ac-message")
    expect(message.locator("strong")).to_have_text("bold", timeout=30_000)
    wait_cell_done(page, 1)
    message.get_by_text("click me").click(force=True)
    assert page.evaluate("() => window.__pwned") is None
    assert message.locator("script, [onerror]").count() == 0
    screenshot(page, "hostile-text")


def test_a_saved_notebook_renders_without_its_kernel_and_converts_to_html(page: Page, lab: Lab) -> None:
    import json
    import subprocess
    import sys

    from bs4 import BeautifulSoup

    model = script(
        lab,
        "saved",
        [
            {"steps": [{"kind": "tool_call", "name": "python", "input": {"code": "print('from the tool')"}}]},
            {"steps": [{"kind": "text", "text": "Saved turns *stay*. " + HOSTILE}]},
        ],
    )
    path = write_notebook(lab, "saved.ipynb", [model, "Make something worth saving."])
    open_notebook(page, lab, "saved.ipynb")
    run_cell(page, 0)
    wait_cell_done(page, 0)
    run_cell(page, 1)
    wait_cell_done(page, 1)
    view = turn(page, 1)
    expect(view.locator(".ac-turn-status")).to_have_text("done")
    # The finished turn is its bundle, drawn by the extension; its HTML fallback is for other viewers.
    cell = page.locator(".jp-Notebook .jp-Cell").nth(1)
    expect(cell.locator(".agentcell-mime .agentcell-turn")).to_be_visible()
    expect(cell.locator(".agentcell-fallback")).to_have_count(0)
    save(page)
    saved = json.loads(path.read_text())
    # Even with saveState on (this lab's setting) nothing of the closed widget is saved.
    states = saved["metadata"].get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    assert not states.get("state")

    for session in lab.api("GET", "/api/sessions"):  # the kernel that made the widget goes away
        lab.api("DELETE", f"/api/sessions/{session['id']}")
    page.reload()
    view = turn(page, 1)
    expect(view.locator(".ac-message em")).to_have_text("stay", timeout=30_000)
    expect(view.locator(".ac-tool .ac-tool-output")).to_contain_text("from the tool")
    expect(view.locator(".ac-turn-status")).to_have_text("done")
    assert page.evaluate("() => window.__pwned") is None
    screenshot(page, "saved-reloaded")

    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(path), "--output-dir", str(lab.root)],
        check=True,
        capture_output=True,
    )
    soup = BeautifulSoup((lab.root / "saved.html").read_text(), "html.parser")
    shown = soup.select_one(".agentcell-fallback")
    assert shown is not None
    assert "Saved turns stay." in shown.get_text(" ", strip=True).replace(" .", ".")
    assert "from the tool" in shown.get_text()
    assert not shown.select("script, [onerror]")
    assert all(not (a.get("href") or "").startswith("javascript:") for a in shown.select("a"))


def test_stop_ends_the_running_turn(page: Page, lab: Lab) -> None:
    model = script(lab, "stop", [{"steps": [{"kind": "text", "text": "slow " * 2000, "chunk_size": 5, "delay": 0.02}]}])
    write_notebook(lab, "stop.ipynb", [model, "Talk slowly forever."])
    open_notebook(page, lab, "stop.ipynb")
    run_cell(page, 0)
    wait_cell_done(page, 0)
    run_cell(page, 1)
    view = turn(page, 1)
    expect(view.locator(".ac-message")).to_contain_text("slow slow", timeout=30_000)
    view.get_by_role("button", name="Stop this turn").click()
    expect(view.locator(".ac-turn-status")).to_have_text("done: interrupted", timeout=10_000)
    expect(view.locator(".ac-interrupted")).to_be_visible()
    wait_cell_done(page, 1)
    screenshot(page, "stopped")
    assert re.search(r"slow", view.locator(".ac-message").inner_text())


def test_the_same_cell_in_a_plain_ipython_kernel(page: Page, lab: Lab) -> None:
    model = script(lab, "ipython", [{"steps": [{"kind": "text", "text": "Hello from **IPython**."}]}])
    write_notebook(lab, "ipython.ipynb", ["%load_ext agentcell", model, "%%agent\nSay hello."], kernel="python3")
    open_notebook(page, lab, "ipython.ipynb")
    for index in (0, 1):
        run_cell(page, index)
        wait_cell_done(page, index)
    run_cell(page, 2)
    view = turn(page, 2)
    expect(view.locator(".ac-message strong")).to_have_text("IPython", timeout=30_000)
    expect(view.locator(".ac-turn-status")).to_have_text("done")
    screenshot(page, "plain-ipython")
