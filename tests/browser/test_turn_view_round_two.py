"""The turn view's second round of fixes (issue 38), in JupyterLab and Notebook 7 with their default settings
(one server serves both): the notebook toolbar's interrupt ends a turn with no red traceback under it; a
thread the coordinator did not wait for finishes on its own, with its tokens; the normal end of a turn says
"done" and an unusual one says what it was; a call the user denied shows no duration and says so once."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from .conftest import lab_env, script
from .lab import APPS, Lab, open_notebook, run_cell, run_lab, screenshot, turn, wait_cell_done, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(240)]

STDERR = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("lab-round-two")
    with run_lab(base, env=lab_env(base), defaults=True) as server:
        yield server


def _start(page: Page, lab: Lab, name: str, cells: list[str], app: str) -> None:
    """Write the notebook, open it in ``app`` and run its first cell (the ``%model`` line)."""
    write_notebook(lab, f"{name}.ipynb", cells)
    open_notebook(page, lab, f"{name}.ipynb", app=app)
    run_cell(page, 0)
    wait_cell_done(page, 0)


@pytest.mark.parametrize("app", APPS)
def test_the_toolbar_interrupt_ends_the_turn_with_no_traceback(page: Page, lab: Lab, app: str) -> None:
    slow = {"kind": "text", "text": "slow " * 2000, "chunk_size": 5, "delay": 0.02}
    model = script(lab, f"toolbar-stop-{app}", [{"steps": [slow]}])
    _start(page, lab, f"toolbar-stop-{app}", [model, "Talk slowly forever."], app)
    run_cell(page, 1)
    view = turn(page, 1)
    expect(view.locator(".ac-message")).to_contain_text("slow slow", timeout=30_000)
    # The notebook's own ■ (Kernel > Interrupt), not the widget's Stop.
    page.locator(".jp-NotebookPanel-toolbar [data-command='notebook:interrupt-kernel']").click()
    expect(view.locator(".ac-turn-status")).to_have_text("done: interrupted", timeout=30_000)
    wait_cell_done(page, 1)
    cell = page.locator(".jp-Notebook .jp-Cell").nth(1)
    # The turn says it was interrupted; IPython draws no TurnInterrupted traceback under it.
    expect(cell.locator(STDERR)).to_have_count(0)
    expect(cell.locator(".jp-OutputArea-output")).to_have_count(1)
    assert "TurnInterrupted" not in cell.inner_text()
    screenshot(page, f"toolbar-interrupt-{app}")


@pytest.mark.parametrize("app", APPS)
def test_a_thread_the_coordinator_did_not_wait_for_finishes_with_its_tokens(page: Page, lab: Lab, app: str) -> None:
    # The helper has its own script, so the coordinator's and the helper's requests cannot take each
    # other's answers whichever asks first.
    helper = script(
        lab, f"helper-{app}", [{"steps": [{"kind": "delay", "seconds": 3}, {"kind": "text", "text": "old pond"}]}]
    )
    spawn = {"task": "write a haiku", "inline_agent": {"name": "poet", "model": helper.removeprefix("%model ")}}
    model = script(
        lab,
        f"no-wait-{app}",
        [
            {"steps": [{"kind": "tool_call", "name": "spawn_thread", "input": spawn}]},
            {"steps": [{"kind": "text", "text": "The poet is on it."}]},
        ],
    )
    _start(page, lab, f"no-wait-{app}", [model, "%threads on", "Delegate a haiku, do not wait."], app)
    run_cell(page, 1)
    wait_cell_done(page, 1)
    run_cell(page, 2)
    view = turn(page, 2)
    thread = view.locator(".ac-thread")
    # The coordinator has said its last word while the poet still works.
    expect(view.locator(".ac-message").last).to_have_text("The poet is on it.", timeout=30_000)
    expect(thread.locator(".ac-thread-status")).to_have_text("running")
    screenshot(page, f"thread-not-waited-running-{app}")
    wait_cell_done(page, 2)
    expect(thread.locator(".ac-thread-status")).to_have_text("finished", timeout=30_000)
    expect(thread.locator(".ac-thread-usage")).to_contain_text(re.compile(r"in [1-9][\d,]* · out [1-9]"))
    expect(view.locator(".ac-turn-status")).to_have_text("done")
    thread.locator("summary").click()
    expect(thread.locator(".ac-thread-body")).to_contain_text("old pond")
    screenshot(page, f"thread-not-waited-finished-{app}")


@pytest.mark.parametrize("app", APPS)
def test_a_normal_end_says_done_and_an_unusual_end_says_what_it_was(page: Page, lab: Lab, app: str) -> None:
    cut = {"steps": [{"kind": "text", "text": "A long answer that the limit cut"}], "stop_reason": "max_tokens"}
    responses = [{"steps": [{"kind": "text", "text": "Hello."}]}, cut, {"steps": [], "stop_reason": "refusal"}]
    model = script(lab, f"ends-{app}", responses, pricing={"input_mtok": 3, "output_mtok": 15})
    # Three turns spend about $0.0125: a budget of $0.01 set after them is overspent before the fourth's request.
    cells = [model, "Say hello.", "Say a lot.", "Say something you will not.", "%budget 0.01", "Go on."]
    _start(page, lab, f"ends-{app}", cells, app)
    for index in range(1, 6):
        run_cell(page, index)
        wait_cell_done(page, index)
    ends = {
        1: ("done", None),
        2: ("done", "max_tokens"),
        3: ("done", "refusal"),
        5: ("done: budget_reached", "budget_reached"),
    }
    for index, (status, said) in ends.items():
        view = turn(page, index)
        expect(view.locator(".ac-turn-status")).to_have_text(status, timeout=30_000)
        errors = view.locator(".ac-error-block")
        expect(errors).to_have_count(0 if said is None else 1)
        if said is not None:
            expect(errors.locator("strong")).to_have_text(said)
        assert "end_turn" not in view.inner_text()
    expect(turn(page, 2).locator(".ac-error-block")).to_contain_text("the answer was cut off at max_tokens")
    expect(turn(page, 2).locator(".ac-message")).to_have_text("A long answer that the limit cut")
    expect(turn(page, 3).locator(".ac-error-block")).to_contain_text("the model declined to answer")
    # Overspent reads as nothing left, in the error and in the footer alike (not a negative amount).
    expect(turn(page, 5).locator(".ac-error-block")).to_contain_text("nothing is left of the $0.01 budget")
    expect(turn(page, 5)).to_contain_text("budget $0.01: $0 left")
    assert "-$" not in turn(page, 5).inner_text() and "$-" not in turn(page, 5).inner_text()
    screenshot(page, f"turn-ends-{app}")


def test_a_denied_call_shows_no_duration_and_says_the_denial_once_in_notebook7(page: Page, lab: Lab) -> None:
    # JupyterLab's is test_turn_view.py's test_allow_runs_the_tool_and_deny_returns_a_refusal.
    marker = lab.root / "denied-notebook7.marker"
    call = {"kind": "tool_call", "name": "bash", "input": {"command": f"touch {marker}"}}
    answer = {"steps": [{"kind": "text", "text": "Understood, not touching it."}]}
    model = script(lab, "deny-notebook7", [{"steps": [call]}, answer])
    _start(page, lab, "deny-notebook7", [model, "Make the marker."], "notebook7")
    run_cell(page, 1)
    card = turn(page, 1).locator(".ac-tool")
    panel = card.locator(".ac-approval")
    expect(panel).to_be_visible(timeout=30_000)
    panel.get_by_role("textbox").fill("not today")
    panel.get_by_role("button", name="Deny").click()
    expect(card.locator(".ac-status")).to_have_text("denied", timeout=30_000)
    expect(turn(page, 1).locator(".ac-message")).to_have_text("Understood, not touching it.")
    wait_cell_done(page, 1)
    # It never ran: no duration, no result repeating the note; the user's words are said once.
    expect(card.locator(".ac-note-deny")).to_have_text("Denied: not today")
    expect(card.locator(".ac-tool-time")).to_have_count(0)
    expect(card.locator(".ac-tool-output")).to_have_count(0)
    assert card.inner_text().count("not today") == 1, card.inner_text()
    assert not re.search(r"\b\d+ m?s\b", card.locator(".ac-tool-head").inner_text())
    assert not marker.exists()
    screenshot(page, "denied-card-notebook7")
