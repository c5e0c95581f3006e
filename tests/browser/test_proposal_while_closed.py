"""A proposal made while its notebook is closed (issue 33), in JupyterLab with its default settings, the real
kernel against the loopback Anthropic server: the user starts a turn and closes the notebook's tab (the
kernel goes on); the agent proposes a new cell meanwhile and is told that it waits for the user; reopened,
the notebook shows the proposal waiting in place, and answering it there reaches the session's log."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator

import nbformat
import pytest
from playwright.sync_api import Page, expect

from ..kernel.test_cell_proposals_kernel import tool_call
from ..providers.conftest import API_KEY, Recorded, Reply, SSEServer, sse_reply
from .conftest import lab_env
from .lab import Lab, open_notebook, run_cell, run_lab, screenshot, wait_cell_done
from .test_cell_proposals import answers, answers_when, cells

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(180)]

INSERT = {"action": "insert", "source": "y = x * 2\nprint('y is', y)", "note": "double it"}


@pytest.fixture(scope="module")
def anthropic() -> Iterator[SSEServer]:
    server = SSEServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, anthropic: SSEServer) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("closed")
    env = {
        **lab_env(base),
        "ANTHROPIC_API_KEY": API_KEY,
        "ANTHROPIC_BASE_URL": anthropic.url,
        "AGENTCELL_MODEL": "anthropic:claude-sonnet-4-5",
    }
    with run_lab(base, env=env, defaults=True) as server:
        yield server


def _until(page: Page, done: object, what: str) -> None:
    for _ in range(300):
        if callable(done) and done():
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"timed out waiting for {what}")


def _tool_results(body: object) -> str:
    texts = []
    for message in body["messages"] if isinstance(body, dict) else []:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result":
                inner = block.get("content")
                texts += [inner] if isinstance(inner, str) else [b.get("text", "") for b in inner or []]
    return "\n".join(texts)


@pytest.mark.parametrize("reopened", ["after-the-turn", "during-the-turn"])
def test_a_proposal_made_while_the_notebook_is_closed_waits_for_it_to_reopen(
    page: Page, lab: Lab, anthropic: SSEServer, reopened: str
) -> None:
    release = threading.Event()

    def held(_: Recorded) -> Reply:  # the model answers once the user has closed the tab
        release.wait(60)
        return tool_call("notebook_edit", INSERT)

    sent = len(anthropic.requests)  # the other case's, in the same lab
    anthropic.queue(held, sse_reply("anthropic_text.sse"))
    name = f"closed-{reopened}.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "agentcell", "display_name": "agentcell", "language": "markdown"}
    nb.cells = [  # no %config: proposing cells is on by default
        nbformat.v4.new_code_cell("%%python\nx = 2", id="setup"),
        nbformat.v4.new_code_cell("Double x in a new cell.", id="ask"),
    ]
    nbformat.write(nb, lab.root / name)
    open_notebook(page, lab, name)
    run_cell(page, 0)
    wait_cell_done(page, 0)
    earlier = len(answers(lab))
    run_cell(page, 1)
    _until(page, lambda: len(anthropic.requests) == sent + 1, "the turn's first request")

    tab = page.locator(".lm-TabBar-tab.jp-mod-current", has_text=name)
    tab.locator(".lm-TabBar-tabCloseIcon").click()
    page.locator(".jp-Dialog").get_by_role("button", name="Save").click()  # "Save your work" before closing
    expect(page.locator(".jp-Notebook")).to_have_count(0)
    reopen = page.locator(".jp-DirListing-item", has_text=name)
    if reopened == "during-the-turn":
        reopen.dblclick()
        expect(cells(page).first).to_be_visible(timeout=30_000)
    release.set()
    _until(page, lambda: len(anthropic.requests) == sent + 2, "the request after the proposal")
    told = _tool_results(anthropic.requests[-1].body)
    assert "Proposal 1 (a new code cell below the turn) is waiting for the user's review" in told, told
    if reopened == "after-the-turn":
        kernels = lambda: lab.api("GET", "/api/kernels")  # noqa: E731
        _until(page, lambda: all(k["execution_state"] == "idle" for k in kernels()), "the turn to end")
        reopen.dblclick()

    expect(page.locator(".jp-Cell.ac-proposed-cell")).to_have_count(1, timeout=30_000)
    proposed = cells(page).nth(2)  # below the turn
    expect(proposed).to_have_class(re.compile(r"\bac-proposed-cell\b"))
    expect(proposed.locator(".ac-proposed-bar")).to_contain_text("Proposed 1")
    expect(proposed.locator(".cm-content")).to_have_text("%%pythony = x * 2print('y is', y)")
    told_user = re.compile(r"While this notebook was closed, the agent proposed a cell \(1\)")
    expect(page.get_by_text(told_user)).to_be_visible()
    screenshot(page, f"proposal-closed-{reopened}")
    proposed.get_by_role("button", name="Accept & run", exact=True).click()
    expect(proposed.locator(".jp-OutputArea-output")).to_contain_text("y is 4", timeout=30_000)
    assert answers_when(page, lab, earlier + 1)[earlier:] == [(1, "accepted", True, None)]
