"""The agent's proposed cells in JupyterLab with its default settings, the real kernel on a scripted model:
each proposal is a card in the turn, and a new cell's also waits in place in the notebook, marked proposed;
edited there, then Accept & run on its bar, it runs; an edit shows its diff and Reject leaves the cell as it
was; a proposed cell left waiting survives save and reopen (its metadata) and is rejected from the keyboard
alone, while a card answered before shows as answered; "Accept & run, always" holds for the session's later
proposals; each answer reaches the session's log, for the next request."""

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


def propose_three(page: Page, lab: Lab) -> Any:
    """Run a turn that proposes a new code cell, an edit and a new Markdown cell; its proposal cards."""
    calls = [{"steps": [{"kind": "tool_call", "name": "notebook_edit", "input": i}]} for i in (INSERT, EDIT, NOTE)]
    model = script(lab, "proposals", [*calls, {"steps": [{"kind": "text", "text": "Three proposals."}]}])
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "agentcell", "display_name": "agentcell", "language": "markdown"}
    sources = {"model": model, "config": "%config AgentCell.propose_cells = True", "setup": "%%python\nx = 2"}
    nb.cells = [nbformat.v4.new_code_cell(s, id=i) for i, s in sources.items()]
    nb.cells.append(nbformat.v4.new_code_cell("Double x, make it three, and add a heading.", id="ask"))
    nbformat.write(nb, lab.root / "proposals.ipynb")

    open_notebook(page, lab, "proposals.ipynb")
    for index in range(3):
        run_cell(page, index)
        wait_cell_done(page, index)
    run_cell(page, 3)
    # The two new cells wait in the notebook, where the agent put them: the heading after `setup` (so the
    # turn moves down one), the code below the turn (then the empty cell Shift+Enter added); the edit is marked
    # on `setup`, with its diff.
    expect(page.locator(".jp-Cell.ac-proposed-cell")).to_have_count(3, timeout=60_000)
    expect(turn(page, 4).locator(".ac-turn-status")).to_have_text("done", timeout=30_000)
    cards = turn(page, 4).locator(".ac-proposal")
    expect(cards).to_have_count(3)
    expect(cards.nth(0)).to_contain_text("Proposed 1: a new code cell below the turn · double it")
    expect(cards.nth(1).locator(".ac-diff-line")).to_have_text(["- x = 2", "+ x = 3"])
    expect(cards.nth(0).locator(".ac-proposal-help")).to_be_hidden()  # the %accept hint is for other front ends
    return cards


def answers_when(page: Page, lab: Lab, count: int) -> list[tuple[int, str, bool, str | None]]:
    for _ in range(100):  # the kernel records the last answer once its silent request is through
        if len(answers(lab)) == count:
            break
        page.wait_for_timeout(100)
    return answers(lab)


def test_a_proposed_cell_waits_in_place_is_edited_there_and_survives_reopening(page: Page, lab: Lab) -> None:
    cards = propose_three(page, lab)
    expect(cells(page)).to_have_count(7)
    heading, turn_cell, added = cells(page).nth(3), cells(page).nth(4), cells(page).nth(5)
    expect(heading).to_have_class(
        re.compile(r"\bjp-MarkdownCell\b.*\bac-proposed-cell\b|\bac-proposed-cell\b.*\bjp-MarkdownCell\b")
    )
    expect(turn_cell.locator(".agentcell-turn")).to_have_count(1)
    expect(added.locator(".ac-proposed-bar")).to_contain_text("Proposed 1")
    expect(added.locator(".cm-content")).to_have_text("%%pythony = x * 2print('y is', y)")
    screenshot(page, "proposals-pending")

    added.locator(".cm-content").click()  # the user edits the proposal in place before accepting it
    page.keyboard.press("Control+End")
    page.keyboard.type("  # checked")
    added.locator(".ac-proposed-bar").get_by_role("button", name="Accept & run", exact=True).click()
    expect(added.locator(".jp-OutputArea-output")).to_contain_text("y is 4", timeout=30_000)
    expect(added).not_to_have_class(re.compile(r"\bac-proposed-cell\b"))
    expect(added.locator(".ac-proposed-bar")).to_have_count(0)
    setup = cells(page).nth(2).locator(".ac-proposed-bar")  # the edit's diff, on the cell it is about
    expect(setup.locator(".ac-diff-line")).to_have_text(["- x = 2", "+ x = 3"])
    setup.get_by_role("button", name="Reject").click()
    expect(cards.nth(1).locator(".ac-proposal-status")).to_have_text("Rejected")  # the card says so too
    expect(setup).to_have_count(0)
    expect(cells(page).nth(2).locator(".cm-content")).to_have_text("%%pythonx = 2")  # unchanged
    screenshot(page, "proposals-answered")
    save(page)
    for kernel in lab.api("GET", "/api/kernels"):
        lab.api("DELETE", f"/api/kernels/{kernel['id']}")

    open_notebook(page, lab, "proposals.ipynb")
    heading = cells(page).nth(3)  # still waiting, from its saved metadata: its bar is back
    bar = heading.locator(".ac-proposed-bar")
    expect(bar).to_contain_text("Proposed 3")
    saved = nbformat.read(lab.root / "proposals.ipynb", as_version=4)
    assert saved.cells[3].metadata["agentcell"]["proposal"] == {"id": 3, "status": "pending", "source": "## Doubling x"}
    answered = cells(page).nth(4).locator(".ac-proposal")  # the kernel says which cards were answered
    expect(answered.nth(0).locator(".ac-proposal-status")).to_have_text("Answered", timeout=30_000)
    expect(answered.nth(0).get_by_role("button", name="Accept", exact=True)).to_be_disabled()
    expect(answered.nth(2).get_by_role("button", name="Accept", exact=True)).to_be_enabled()
    screenshot(page, "proposals-reopened")
    bar.focus()
    page.keyboard.press("x")  # the bar's own key: Reject takes the proposed cell out
    expect(cells(page)).to_have_count(6)
    expect(cells(page).nth(3).locator(".agentcell-turn")).to_have_count(1)
    screenshot(page, "proposals-keyboard")
    assert answers_when(page, lab, 3) == [
        (1, "accepted", True, "y = x * 2\nprint('y is', y)  # checked"),  # the model learns the source accepted
        (2, "rejected", False, None),
        (3, "rejected", False, None),
    ]


@pytest.mark.parametrize("app", APPS)
def test_accept_and_run_always_holds_for_the_sessions_later_proposals(page: Page, lab: Lab, app: str) -> None:
    first = {"action": "insert", "source": "print('first')"}
    second = {"action": "insert", "source": "print('second')"}
    propose = [[{"kind": "tool_call", "name": "notebook_edit", "input": i}] for i in (first, second)]
    turns = [propose[0], [{"kind": "text", "text": "One."}], propose[1], [{"kind": "text", "text": "Two."}]]
    model = script(lab, f"always-{app}", [{"steps": steps} for steps in turns])
    earlier = len(answers(lab))  # the lab's log holds the other tests' answers too
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "agentcell", "display_name": "agentcell", "language": "markdown"}
    sources = {"model": model, "config": "%config AgentCell.propose_cells = True", "ask": "Print first."}
    nb.cells = [nbformat.v4.new_code_cell(s, id=i) for i, s in sources.items()]
    nb.cells.append(nbformat.v4.new_code_cell("Print second.", id="again"))
    nbformat.write(nb, lab.root / f"always-{app}.ipynb")
    open_notebook(page, lab, f"always-{app}.ipynb", app=app)
    for index in range(3):
        run_cell(page, index)
        wait_cell_done(page, index)
    proposed = cells(page).nth(3)
    expect(proposed.locator(".ac-proposed-bar")).to_contain_text("Proposed 1", timeout=30_000)
    proposed.get_by_role("button", name="Accept & run, always").click()
    expect(proposed.locator(".jp-OutputArea-output")).to_contain_text("first", timeout=30_000)
    run_cell(page, 4)  # the second request: its proposal is accepted and run as it comes
    ran = cells(page).nth(5)
    expect(ran.locator(".cm-content")).to_have_text("%%pythonprint('second')", timeout=30_000)
    expect(ran.locator(".jp-OutputArea-output")).to_contain_text("second", timeout=30_000)
    expect(page.locator(".jp-Cell.ac-proposed-cell")).to_have_count(0)
    screenshot(page, f"proposals-always-{app}")
    assert answers_when(page, lab, earlier + 2)[earlier:] == [(1, "accepted", True, None), (2, "accepted", True, None)]


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
    on_cell = failed.locator(".ac-proposed-bar")  # the same proposal on the failing cell, with its diff
    expect(on_cell.locator(".ac-diff-line")).to_have_text(["- ratio = 1 / 0", "+ ratio = 1 / 2"])
    screenshot(page, f"fix-proposed-{app}")
    on_cell.get_by_role("button", name="Accept & run", exact=True).click()
    expect(card.locator(".ac-proposal-status")).to_have_text(re.compile("Accepted"))
    expect(failed.locator(".cm-content")).to_have_text("%%pythonratio = 1 / 2")
    expect(failed.locator(".jp-OutputArea-output")).to_have_count(0, timeout=30_000)  # it ran, and raised nothing
    screenshot(page, f"fix-accepted-{app}")
