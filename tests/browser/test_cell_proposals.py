"""The agent's proposed cells in JupyterLab with its default settings, the real kernel on a scripted model:
each proposal is a card in the turn; a new cell's source edited on its card, then Accept & run, inserts it
below the turn and runs it; an edit shows
its diff and Reject leaves the cell as it was; a proposal left waiting survives save and reopen and is
accepted from the keyboard alone, while one answered before is not applied twice; each answer reaches the
session's log, for the next request."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from typing import Any

import nbformat
import pytest
from playwright.sync_api import Page, expect

from .conftest import lab_env, script
from .lab import APPS, Lab, open_notebook, run_cell, run_lab, save, screenshot, turn, wait_cell_done

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(180)]

INSERT = {"action": "insert", "source": "y = x * 2\nprint('y is', y)", "note": "double it"}
EDIT = {"action": "edit", "cell_id": "setup", "source": "x = 3"}
NOTE = {"action": "insert", "cell_type": "markdown", "cell_id": "setup", "source": "## Doubling x"}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("proposals")
    with run_lab(base, env=lab_env(base), defaults=True) as server:
        yield server


def cells(page: Page) -> Any:
    return page.locator(".jp-Notebook .jp-Cell")


def answers(lab: Lab) -> list[tuple[int, str, bool, str | None]]:
    conn = sqlite3.connect(lab.root.parent / "agentcell.db")
    rows = conn.execute("SELECT body FROM events WHERE type = 'user.cell_proposal_resolved' ORDER BY seq").fetchall()
    conn.close()
    found = [json.loads(body) for (body,) in rows]
    return [(b["number"], b["outcome"], b.get("run", False), b.get("source")) for b in found]


def test_proposals_are_answered_in_place_and_a_waiting_one_survives_reopening(page: Page, lab: Lab) -> None:
    calls = [{"steps": [{"kind": "tool_call", "name": "notebook_edit", "input": i}]} for i in (INSERT, EDIT, NOTE)]
    model = script(lab, "proposals", [*calls, {"steps": [{"kind": "text", "text": "Three proposals."}]}])
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "agentcell", "display_name": "agentcell", "language": "markdown"}
    sources = {"model": model, "config": "%config AgentCell.propose_cells = True", "setup": "%%python\nx = 2"}
    nb.cells = [nbformat.v4.new_code_cell(s, id=i) for i, s in sources.items()]
    nb.cells.append(nbformat.v4.new_code_cell("Double x, make it three, and add a heading.", id="ask"))
    nbformat.write(nb, lab.root / "proposals.ipynb")

    open_notebook(page, lab, "proposals.ipynb")
    for index in range(4):
        run_cell(page, index)
        wait_cell_done(page, index)
    expect(turn(page, 3).locator(".ac-turn-status")).to_have_text("done", timeout=30_000)
    cards = turn(page, 3).locator(".ac-proposal")
    expect(cards).to_have_count(3)
    expect(cards.nth(0)).to_contain_text("Proposed 1: a new code cell below the turn · double it")
    expect(cards.nth(1).locator(".ac-diff-line")).to_have_text(["- x = 2", "+ x = 3"])
    expect(cards.nth(0).locator(".ac-proposal-help")).to_be_hidden()  # the %accept hint is for other front ends
    screenshot(page, "proposals-pending")

    before = cells(page).count()  # Shift+Enter on the last cell added an empty one below it
    cards.nth(0).locator(".ac-proposal-code").fill("y = x * 10\nprint('y is', y)")  # edited before accepting
    cards.nth(0).get_by_role("button", name="Accept & run").click()
    expect(cells(page)).to_have_count(before + 1)
    added = cells(page).nth(4)
    expect(added.locator(".cm-content")).to_have_text("%%pythony = x * 10print('y is', y)")
    expect(added.locator(".jp-OutputArea-output")).to_contain_text("y is 20", timeout=30_000)
    cards.nth(1).get_by_role("button", name="Reject").click()
    expect(cards.nth(1).locator(".ac-proposal-status")).to_have_text("Rejected")
    expect(cells(page).nth(2).locator(".cm-content")).to_have_text("%%pythonx = 2")  # unchanged
    screenshot(page, "proposals-answered")
    save(page)
    for kernel in lab.api("GET", "/api/kernels"):
        lab.api("DELETE", f"/api/kernels/{kernel['id']}")

    open_notebook(page, lab, "proposals.ipynb")
    waiting = cells(page).nth(3).locator(".ac-proposal").nth(2)
    expect(waiting).to_contain_text("Proposed 3: a new markdown cell after cell setup")
    expect(waiting.get_by_role("button", name="Accept", exact=True)).to_be_enabled()
    screenshot(page, "proposals-reopened")
    waiting.focus()
    page.keyboard.press("a")  # the card's own key, not JupyterLab's "insert a cell above"
    expect(cells(page)).to_have_count(before + 2)
    heading = cells(page).nth(3)
    expect(heading).to_have_class(re.compile(r"\bjp-MarkdownCell\b"))
    screenshot(page, "proposals-keyboard")
    answered = cells(page).nth(4).locator(".ac-proposal").nth(0)  # accepted before the notebook was closed
    answered.get_by_role("button", name="Accept", exact=True).click()
    expect(page.get_by_text("Proposal 1 was answered already; nothing was changed.")).to_be_visible()
    expect(cells(page)).to_have_count(before + 2)
    for _ in range(100):  # the kernel records the last answer once its silent request is through
        if len(answers(lab)) == 3:
            break
        page.wait_for_timeout(100)
    assert answers(lab) == [
        (1, "accepted", True, "y = x * 10\nprint('y is', y)"),  # the model learns the source the user accepted
        (2, "rejected", False, None),
        (3, "accepted", False, None),
    ]


@pytest.mark.parametrize("app", APPS)
def test_fix_on_a_traceback_proposes_an_edit_of_the_failing_cell(page: Page, lab: Lab, app: str) -> None:
    fix = {"action": "edit", "cell_id": "bad", "source": "ratio = 1 / 2"}
    model = script(lab, f"fix-{app}", [{"steps": [{"kind": "tool_call", "name": "notebook_edit", "input": fix}]},
                                {"steps": [{"kind": "text", "text": "Divide by two, not zero."}]}])  # fmt: skip
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "agentcell", "display_name": "agentcell", "language": "markdown"}
    nb.cells = [
        nbformat.v4.new_code_cell(model, id="model"),
        nbformat.v4.new_code_cell("%%python\nratio = 1 / 0", id="bad"),
    ]
    nbformat.write(nb, lab.root / f"fix-{app}.ipynb")
    open_notebook(page, lab, f"fix-{app}.ipynb", app=app)
    run_cell(page, 0)
    wait_cell_done(page, 0)
    run_cell(page, 1)
    wait_cell_done(page, 1)
    failed = cells(page).nth(1)
    expect(failed.locator(".jp-OutputArea-output")).to_contain_text("ZeroDivisionError")
    button = failed.get_by_role("button", name="Fix with the agent")
    screenshot(page, f"fix-offered-{app}")
    button.focus()
    page.keyboard.press("Enter")  # keyboard only
    fixing = cells(page).nth(2)
    expect(fixing.locator(".cm-content")).to_have_text("%fix")
    card = fixing.locator(".ac-proposal")
    expect(card).to_contain_text("Proposed 1: an edit of cell bad", timeout=30_000)
    expect(card.locator(".ac-diff-line")).to_have_text(["- ratio = 1 / 0", "+ ratio = 1 / 2"])
    expect(button).to_have_count(0)
    screenshot(page, f"fix-proposed-{app}")
    card.get_by_role("button", name="Accept & run").click()
    expect(failed.locator(".cm-content")).to_have_text("%%pythonratio = 1 / 2")
    expect(failed.locator(".jp-OutputArea-output")).to_have_count(0, timeout=30_000)  # it ran, and raised nothing
    screenshot(page, f"fix-accepted-{app}")
