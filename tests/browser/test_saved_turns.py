"""The notebook at rest, in JupyterLab and Notebook 7 with their default settings (widget state not saved):
a finished turn's output is its MIME bundle, rendered by agentcell's prebuilt extension with the widget's
own view, so a saved notebook reopens with every turn and no "Error displaying widget"."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import Page, expect

from agentcell.render.displays import STALE_NOTE
from agentcell.render.markdown import thread_state

from .conftest import lab_env, script
from .lab import Lab, open_notebook, run_cell, run_lab, save, screenshot, wait_cell_done, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(240)]

TURN_MIMETYPE = "application/vnd.agentcell.turn+json"
EVENT_LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "event_logs"
PRICE = "It costs between $5 and $6 a day, so $35 a week."


@pytest.fixture(scope="module")
def default_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("default-lab")
    with run_lab(base, env=lab_env(base), defaults=True) as server:
        yield server


def saved_turn(page: Page, index: int) -> object:
    """The index-th cell's turn as the MIME renderer drew it."""
    return page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".agentcell-mime .agentcell-turn")


def no_widget_errors(page: Page) -> None:
    assert page.get_by_text("Error displaying widget").count() == 0
    assert page.locator(".jp-OutputArea-output mjx-container, .jp-OutputArea-output .MathJax").count() == 0


def test_a_saved_notebook_reopens_with_every_turn_in_lab_and_notebook_7(page: Page, default_lab: Lab) -> None:
    lab = default_lab
    model = script(
        lab,
        "saved",
        [
            {"steps": [{"kind": "tool_call", "name": "python", "input": {"code": "print(6 * 7)"}}]},
            {"steps": [{"kind": "text", "text": "The answer is **42**."}]},
            {"steps": [{"kind": "text", "text": PRICE}]},
        ],
    )
    cells = [model, "Compute six times seven.", "What does it cost?", "%%python\nxs = [1, 2, 3]\nprint(xs)"]
    path = write_notebook(lab, "saved.ipynb", cells)
    open_notebook(page, lab, "saved.ipynb")
    for index in range(len(cells)):
        run_cell(page, index)
        wait_cell_done(page, index)

    # The live view became the bundle in place: one output per turn, drawn by the extension.
    for index in (1, 2):
        expect(saved_turn(page, index).locator(".ac-turn-status")).to_have_text("done", timeout=30_000)
        assert page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-OutputArea-output").count() == 1
    card = saved_turn(page, 1).locator(".ac-tool")
    expect(card.locator(".ac-tool-name")).to_have_text("python")
    expect(card.locator(".ac-tool-output pre")).to_have_text("42\n")
    expect(saved_turn(page, 2).locator(".ac-message")).to_have_text(PRICE)  # no dollar typeset as math
    live = {index: saved_turn(page, index).inner_text() for index in (1, 2)}
    no_widget_errors(page)

    # %%python is Python in the editor; a prose cell stays Markdown.
    editors = page.locator(".jp-Notebook .jp-Cell .cm-content")
    expect(editors.nth(3)).to_have_attribute("data-language", "python")
    expect(editors.nth(1)).to_have_attribute("data-language", "markdown")
    screenshot(page, "saved-turns-live")

    save(page)
    for kernel in lab.api("GET", "/api/kernels"):
        lab.api("DELETE", f"/api/kernels/{kernel['id']}")
    saved = json.loads(path.read_text())
    outputs = [output for cell in saved["cells"] for output in cell.get("outputs", [])]
    assert not [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert "widgets" not in saved["metadata"]
    assert len([o for o in outputs if TURN_MIMETYPE in o.get("data", {})]) == 2

    for url in (lab.notebook_url("saved.ipynb"), lab.notebook7_url("saved.ipynb")):
        page.goto(url)
        expect(saved_turn(page, 1)).to_be_visible(timeout=30_000)
        for index, text in live.items():
            # The reopened turn reads as the live one did. Each turn renders on its own, and an off-screen
            # cell may not be laid out yet, so bring it into view and wait for its text.
            turn = saved_turn(page, index)
            turn.scroll_into_view_if_needed(timeout=30_000)
            expect(turn).to_have_text(text, use_inner_text=True, timeout=30_000)
        expect(saved_turn(page, 2).locator(".ac-message")).to_have_text(PRICE)
        expect(page.locator(".jp-Notebook .jp-Cell .cm-content").nth(3)).to_have_attribute("data-language", "python")
        no_widget_errors(page)
        screenshot(page, "saved-turns-reopened-" + ("lab" if "/lab/" in url else "notebook7"))


def test_the_extension_renders_threads_outcomes_and_refusals_from_recorded_turns(page: Page, default_lab: Lab) -> None:
    """Turns recorded from engine runs (tests/fixtures/event_logs), saved as the kernel saves them: each
    renders from its bundle alone, with the statuses the Python fold gave them."""
    expected: list[dict[str, object]] = []
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "agentcell", "display_name": "agentcell", "language": "markdown"}
    for name in ("threads", "outcome", "refusals"):
        log = json.loads((EVENT_LOGS / f"{name}.json").read_text())
        for items, statuses in zip(log["turns"], log["statuses"], strict=True):
            events = [item for item in items if not item["type"].startswith("event_")]  # durable only
            bundle = {TURN_MIMETYPE: {"events": events}, "text/plain": f"{name} turn"}
            cell = nbformat.v4.new_code_cell(f"{name} turn")
            cell.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
            nb.cells.append(cell)
            expected.append(statuses[-1][1])
    nbformat.write(nb, default_lab.root / "recorded.ipynb")

    page.goto(default_lab.notebook_url("recorded.ipynb"))
    for index, final in enumerate(expected):
        view = saved_turn(page, index)
        shown = "done" if final["turn"] == "end_turn" else f"done: {final['turn']}"
        expect(view.locator(".ac-turn-status")).to_have_text(shown, timeout=30_000)
        tools = sorted(view.locator(".ac-tool .ac-status").all_text_contents())  # threads fold shut
        assert tools == sorted(final["tools"].values())  # type: ignore[attr-defined]
        for status in final["threads"].values():  # type: ignore[attr-defined]
            # The header says it for people ("finished"), as the Markdown fallback does.
            expect(view.locator(".ac-thread-head")).to_contain_text(thread_state(str(status)))
        for outcome in final["outcomes"].values():  # type: ignore[attr-defined]
            expect(view.locator(".ac-outcome")).to_contain_text(outcome["status"])
    no_widget_errors(page)
    screenshot(page, "recorded-turns-rendered")


def test_re_running_an_earlier_cell_marks_later_turns_stale_and_they_stay_so(page: Page, default_lab: Lab) -> None:
    lab = default_lab
    model = script(
        lab,
        "stale",
        [
            {"steps": [{"kind": "text", "text": "One."}]},
            {"steps": [{"kind": "text", "text": "Two."}]},
            {"steps": [{"kind": "text", "text": "One again."}]},
        ],
    )
    path = write_notebook(lab, "stale.ipynb", [model, "Say one.", "Say two."])
    open_notebook(page, lab, "stale.ipynb")
    for index in (0, 1, 2):
        run_cell(page, index)
        wait_cell_done(page, index)
    expect(saved_turn(page, 2).locator(".ac-message")).to_have_text("Two.", timeout=30_000)
    assert page.locator(".ac-stale").count() == 0

    run_cell(page, 1)  # the first turn's cell again: the turn after it leaves the conversation
    expect(saved_turn(page, 1).locator(".ac-message")).to_have_text("One again.", timeout=30_000)
    stale = page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".agentcell-mime .ac-stale")
    expect(stale).to_have_text(f"Stale: {STALE_NOTE}", timeout=10_000)
    expect(saved_turn(page, 2).locator(".ac-message")).to_have_text("Two.")  # still readable, marked
    assert page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".ac-stale").count() == 0
    screenshot(page, "stale-turn")

    save(page)
    saved = nbformat.read(path, as_version=4)
    (output,) = saved.cells[2].outputs
    assert output["data"][TURN_MIMETYPE]["stale"] is True and STALE_NOTE in output["data"]["text/markdown"]
    page.goto(lab.notebook_url("stale.ipynb"))
    expect(saved_turn(page, 1)).to_be_visible(timeout=30_000)
    screenshot(page, "stale-turn-reopened")
    expect(page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".ac-stale")).to_have_text(f"Stale: {STALE_NOTE}")


def test_after_a_kernel_restart_re_running_an_earlier_cell_still_marks_later_turns_stale(
    page: Page, default_lab: Lab
) -> None:
    lab = default_lab
    replies = [{"steps": [{"kind": "text", "text": text}]} for text in ("One.", "Two.", "Three.")]
    model = script(lab, "stale-restart", replies)
    path = write_notebook(lab, "stale-restart.ipynb", [model, "Say one.", "Say two.", "Say three."])
    open_notebook(page, lab, "stale-restart.ipynb")
    for index in (0, 1, 2, 3):
        run_cell(page, index)
        wait_cell_done(page, index)
    expect(saved_turn(page, 3).locator(".ac-message")).to_have_text("Three.", timeout=30_000)
    (session,) = [s for s in lab.api("GET", "/api/sessions") if s["path"].endswith("stale-restart.ipynb")]
    lab.api("POST", f"/api/kernels/{session['kernel']['id']}/restart")
    expect(page.get_by_text(re.compile(r"\| Idle$"))).to_be_visible(timeout=60_000)

    run_cell(page, 2)  # a kernel that never showed turn 3 takes it off the path
    wait_cell_done(page, 2)
    stale = page.locator(".jp-Notebook .jp-Cell").nth(3).locator(".agentcell-mime .ac-stale")
    expect(stale).to_have_text(f"Stale: {STALE_NOTE}", timeout=20_000)
    expect(saved_turn(page, 3).locator(".ac-message")).to_have_text("Three.")  # still readable, marked
    save(page)
    (output,) = nbformat.read(path, as_version=4).cells[3].outputs
    assert output["data"][TURN_MIMETYPE]["stale"] is True and STALE_NOTE in output["data"]["text/markdown"]


def test_a_renamed_notebook_keeps_its_session_and_model(page: Page, default_lab: Lab) -> None:
    lab = default_lab
    model = script(lab, "rename", [{"steps": [{"kind": "text", "text": "Noted."}]}])
    path = write_notebook(lab, "before.ipynb", [model, "Remember this.", "%session", "%model"])
    open_notebook(page, lab, "before.ipynb")
    for index in range(4):
        run_cell(page, index)
        wait_cell_done(page, index)
    session = page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-OutputArea-output").inner_text()
    assert session.startswith("session sesn_")
    model_line = page.locator(".jp-Notebook .jp-Cell").nth(3).locator(".jp-OutputArea-output").inner_text()
    assert "rename.script.json" in model_line
    save(page)
    notebook_id = json.loads(path.read_text())["metadata"]["agentcell"]["notebook_id"]
    assert re.fullmatch(r"[0-9a-f-]{36}", notebook_id)

    # Rename it with the kernel shut down, then open it under its new name: a new kernel, a new path.
    page.goto("about:blank")
    for kernel in lab.api("GET", "/api/kernels"):
        lab.api("DELETE", f"/api/kernels/{kernel['id']}")
    lab.api("PATCH", "/api/contents/before.ipynb", {"path": "after.ipynb"})
    assert not path.exists()
    open_notebook(page, lab, "after.ipynb")
    for index in (2, 3):
        run_cell(page, index)
        wait_cell_done(page, index)
    cells = page.locator(".jp-Notebook .jp-Cell")
    session_id = session.split()[1]
    expect(cells.nth(2).locator(".jp-OutputArea-output")).to_contain_text(f"session {session_id} ")
    expect(cells.nth(3).locator(".jp-OutputArea-output")).to_have_text(model_line)  # the model set with %model
