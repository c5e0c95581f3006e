"""What agentcell's JupyterLab / Notebook 7 extension adds to the turn view, in both apps with their default
settings (one server serves both): "Insert below" makes a cell, an approval waiting off-screen is a
notification, a saved reply's math is typeset with KaTeX's own styles after reopening; and, in JupyterLab, a
revoked "always" rule asks again after a kernel restart, and a running thread is open with its spinner."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from .conftest import lab_env, script
from .lab import (
    APPS,
    Lab,
    open_notebook,
    run_cell,
    run_lab,
    save,
    screenshot,
    turn,
    wait_cell_done,
    wait_idle,
    write_notebook,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(180)]

MATH_REPLY = """\
Einstein: $E = mc^2$.

$$\\int_0^1 x\\,dx = \\frac{1}{2}$$

```python
print(6 * 7)
```
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab with its default settings (widget state not saved), serving Notebook 7's pages too."""
    base = tmp_path_factory.mktemp("lab-extension")
    with run_lab(base, env=lab_env(base), defaults=True) as server:
        yield server


def cells(page: Page) -> Any:
    return page.locator(".jp-Notebook .jp-Cell")


def katex_styled(page: Page, message: Any) -> None:
    """The reply's math is typeset and KaTeX's stylesheet is in the page: its MathML copy is hidden and its
    own font face is loaded from the bundled CSS (without the stylesheet both would fail)."""
    expect(message.locator(".ac-math .katex-html").first).to_be_visible()
    expect(message.locator(".ac-math-display .katex-display")).to_be_visible()
    mathml = message.locator(".katex-mathml").first
    assert mathml.evaluate("e => getComputedStyle(e).position") == "absolute"
    family = message.locator(".katex .mathnormal").first.evaluate("e => getComputedStyle(e).fontFamily")
    assert "KaTeX_Math" in family, family
    assert page.evaluate("async () => { await document.fonts.ready; return document.fonts.check('16px KaTeX_Main'); }")


def test_a_reopened_math_reply_is_typeset_and_insert_below_adds_its_code_as_a_cell(page: Page, lab: Lab) -> None:
    model = script(lab, "math", [{"steps": [{"kind": "text", "text": MATH_REPLY}]}])
    write_notebook(lab, "math.ipynb", [model, "Some maths and code, please."])
    open_notebook(page, lab, "math.ipynb")
    run_cell(page, 0)
    wait_cell_done(page, 0)
    run_cell(page, 1)
    wait_cell_done(page, 1)
    expect(turn(page, 1).locator(".ac-turn-status")).to_have_text("done", timeout=30_000)
    save(page)
    for kernel in lab.api("GET", "/api/kernels"):
        lab.api("DELETE", f"/api/kernels/{kernel['id']}")

    for app in APPS:
        # A fresh page: no live widget has put its stylesheet in it, only the extension can have.
        open_notebook(page, lab, "math.ipynb", app=app)
        message = cells(page).nth(1).locator(".agentcell-mime .ac-message")
        expect(message.locator(".ac-math")).to_have_count(2, timeout=30_000)
        katex_styled(page, message)
        screenshot(page, f"saved-math-{app}")

        insert = message.locator(".ac-insert")
        before = cells(page).count()
        insert.click()
        expect(cells(page)).to_have_count(before + 1)
        expect(insert).to_have_text("Inserted")  # answered by the extension, not copied for pasting
        added = cells(page).nth(2)
        expect(added.locator(".cm-content")).to_have_text("%%pythonprint(6 * 7)")  # two lines, no newline text
        expect(added.locator(".cm-content")).to_have_attribute("data-language", "python")
        expect(added).to_have_class(re.compile(r"\bjp-mod-active\b"))
        screenshot(page, f"insert-below-{app}")


@pytest.mark.parametrize("app", APPS)
def test_an_approval_waiting_off_screen_is_one_notification_whose_show_focuses_it(
    page: Page, lab: Lab, app: str
) -> None:
    marker = lab.root / f"notice-{app}.marker"
    model = script(
        lab,
        f"notice-{app}",
        [
            # The model takes a moment before asking, time for the user to scroll away.
            {
                "steps": [
                    {"kind": "delay", "seconds": 3},
                    {"kind": "tool_call", "name": "bash", "input": {"command": f"touch {marker}"}},
                ]
            },
            {"steps": [{"kind": "text", "text": "Touched."}]},
        ],
    )
    below = [f"note {i}: later" for i in range(40) if app == "notebook7"]
    write_notebook(lab, f"notice-{app}.ipynb", [model, "Touch the marker.", *below])
    open_notebook(page, lab, f"notice-{app}.ipynb", app=app)
    run_cell(page, 0)
    wait_cell_done(page, 0)
    run_cell(page, 1)
    if app == "lab":  # the user opens another tab (a launcher) while the agent works
        page.locator(".lm-TabBar-addButton:not(.lm-mod-hidden)").first.click()
        expect(page.locator(".jp-Launcher")).to_be_visible()
    else:  # Notebook 7 has one notebook a page: the user scrolls down to the notes below
        cells(page).last.scroll_into_view_if_needed()
    panel = turn(page, 1).locator(".ac-approval")
    expect(panel).to_be_attached(timeout=30_000)
    expect(panel).not_to_be_in_viewport()

    toast = page.locator(".jp-Notification-Toast-warning", has_text="bash waits for your approval")
    expect(toast).to_be_visible(timeout=15_000)
    expect(toast).to_contain_text(f"notice-{app}.ipynb: $ touch /")  # long commands are cut at 80 characters
    # The card asks again when it repaints its panel while the call still waits: still one notification.
    panel.evaluate(
        """p => p.dispatchEvent(new CustomEvent("agentcell:approval-pending", {
          bubbles: true, cancelable: true, detail: { tool: "bash", action: "Approve bash: $ touch again" },
        }))"""
    )
    expect(toast).to_contain_text("$ touch again")
    assert page.locator(".jp-Notification-Toast-warning").count() == 1
    assert not page.title().startswith("⏸ approval needed")  # the extension took it over from the title
    screenshot(page, f"approval-notice-{app}")

    toast.get_by_role("button", name="Show").click()
    expect(panel).to_be_in_viewport()
    expect(panel).to_be_focused()
    expect(toast).to_be_visible()  # until the approval is answered
    page.keyboard.press("y")
    expect(turn(page, 1).locator(".ac-note-allow")).to_have_text("Allowed once", timeout=30_000)
    expect(toast).to_have_count(0)  # answered: the notification is gone
    wait_cell_done(page, 1)
    assert marker.exists()


def _restart_kernel(page: Page) -> None:
    """Kernel → Restart Kernel…, then Restart in the dialog, as a user does."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Kernel").click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Restart Kernel…", exact=True).click()
    page.locator(".jp-Dialog .jp-mod-accept").click()
    expect(page.locator(".jp-Dialog")).to_have_count(0)
    wait_idle(page)


def test_a_revoked_always_rule_asks_again_after_a_kernel_restart(page: Page, lab: Lab) -> None:
    touch = {"kind": "tool_call", "name": "bash", "input": {"command": "true"}}
    done = {"kind": "text", "text": "Ran it."}
    # The script starts over in the restarted kernel: each turn is the same call, then its answer.
    model = script(lab, "revoke", [{"steps": [touch]}, {"steps": [done]}, {"steps": [touch]}, {"steps": [done]}])
    write_notebook(lab, "revoke.ipynb", [model, "Run true.", "%permissions revoke bash", "Run true again."])
    open_notebook(page, lab, "revoke.ipynb")
    run_cell(page, 0)
    wait_cell_done(page, 0)
    run_cell(page, 1)
    panel = turn(page, 1).locator(".ac-approval")
    expect(panel).to_be_visible(timeout=30_000)
    panel.get_by_role("button", name="Allow always").click()
    expect(turn(page, 1).locator(".ac-note-allow")).to_contain_text("Allowed always", timeout=30_000)
    wait_cell_done(page, 1)
    run_cell(page, 2)
    wait_cell_done(page, 2)
    expect(cells(page).nth(2).locator(".jp-OutputArea-output")).to_contain_text("bash")

    _restart_kernel(page)  # the session, its model and its log carry on in the new kernel
    run_cell(page, 3)
    # Kept, the rule would be rebuilt from the session's log and the call would run without asking.
    again = turn(page, 3).locator(".ac-approval")
    expect(again).to_be_visible(timeout=30_000)
    expect(again.locator(".ac-command")).to_have_text("$ true")
    screenshot(page, "revoked-rule-asks-again")
    again.get_by_role("button", name="Allow once").click()
    expect(turn(page, 3).locator(".ac-note-allow")).to_have_text("Allowed once", timeout=30_000)
    wait_cell_done(page, 3)


def test_a_running_thread_is_open_with_its_spinner_then_reads_finished(page: Page, lab: Lab) -> None:
    spawn = {"task": "write a haiku", "inline_agent": {"name": "poet", "system": "you write haiku"}}
    model = script(
        lab,
        "thread",
        [
            {
                "steps": [
                    {"kind": "tool_call", "name": "spawn_thread", "input": spawn},
                    {"kind": "tool_call", "name": "wait_thread"},
                ]
            },
            # The helper thinks for a while: long enough to see it run.
            {"steps": [{"kind": "delay", "seconds": 3}, {"kind": "text", "text": "old pond, a frog"}]},
            {"steps": [{"kind": "text", "text": "The poet wrote it."}]},
        ],
    )
    write_notebook(lab, "thread.ipynb", [model, "%threads on", "Delegate a haiku."])
    open_notebook(page, lab, "thread.ipynb")
    for index in (0, 1):
        run_cell(page, index)
        wait_cell_done(page, index)
    run_cell(page, 2)
    thread = turn(page, 2).locator(".ac-thread")
    expect(thread.locator(".ac-spinner")).to_be_visible(timeout=30_000)
    expect(thread).to_have_attribute("open", "")
    expect(thread.locator(".ac-thread-status")).to_have_text("running")
    expect(thread.locator(".ac-thread-title")).to_have_text("Thread: poet")
    screenshot(page, "thread-running")
    wait_cell_done(page, 2)
    expect(thread.locator(".ac-thread-status")).to_have_text("finished", timeout=30_000)
    expect(thread.locator(".ac-spinner")).to_have_count(0)


OUTCOME_CELL = "%%outcome max_iterations=2\nWrite one sentence about the sea.\n---\nOne sentence that mentions the sea."
PROSE_CELL = "Plain prose\n---\nfor_each: [fish, waves, salt]"
HEADING = "s => parseInt(s.fontWeight) >= 600"
LINK = "s => s.textDecorationLine.includes('underline')"


def drawn(editor: Any, style: str) -> list[str]:
    """The texts in ``editor`` drawn with ``style`` (a predicate on their computed style)."""
    return editor.evaluate(
        f"""(root) => {{
            const test = {style};
            return [...root.querySelectorAll('.cm-line span')]
                .filter((el) => test(getComputedStyle(el)))
                .map((el) => el.textContent);
        }}"""
    )


WORKFLOW_CELL = "%%workflow topic=sea\nname: sea\nsteps:\n  - id: notes\n    for_each: [fish, waves, salt]"


@pytest.mark.parametrize("app", APPS)
def test_cell_magics_are_highlighted_in_their_own_language_not_as_prose(page: Page, lab: Lab, app: str) -> None:
    # As Markdown, an outcome's task over its `---` is a setext heading and a plan's [a, b] list a link.
    write_notebook(lab, f"magics-{app}.ipynb", [OUTCOME_CELL, WORKFLOW_CELL, PROSE_CELL, "%%python\nx = [1, 2]"])
    open_notebook(page, lab, f"magics-{app}.ipynb", app=app)
    outcome, workflow, prose, python = (cells(page).nth(i).locator(".cm-content") for i in range(4))
    expect(workflow).to_have_attribute("data-language", "yaml", timeout=30_000)
    expect(python).to_have_attribute("data-language", "python")
    expect(prose).to_have_attribute("data-language", "markdown")
    expect(outcome).not_to_have_attribute("data-language", "markdown")
    # The editor styles tokens with generated classes (no .tok-heading to look for): what a reader sees is
    # the computed style. The prose cell, the same text as Markdown, shows how a heading and a link look.
    assert "Plain prose" in drawn(prose, HEADING)
    assert "fish, waves, salt" in drawn(prose, LINK)
    assert drawn(outcome, HEADING) == []
    assert drawn(workflow, LINK) == []
    screenshot(page, f"cell-magic-languages-{app}")
