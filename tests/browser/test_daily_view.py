"""The turn view for daily use, in a real JupyterLab (light and dark themes) and Notebook 7, in Chromium:
replies with tables, math, task lists and blocked images; what the python tool displays inside its card; an
approval headlined by its command and answered with `y`; Enter in the Steer box. One server serves both
apps."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from .conftest import script
from .lab import APPS, Lab, open_notebook, run_cell, screenshot, turn, wait_cell_done, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(180)]

REPLY = """\
| city | people |
| --- | ---: |
| Lyon | 522,250 |
| Nice | 348,085 |

Einstein: $E = mc^2$, with a thin space $a\\,b$.

$$\\int_0^1 x\\,dx = \\frac{1}{2}$$

- [x] write the tests
- [ ] ship it

> a quoted line

![sales by month](https://example.invalid/track.png)
"""

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d4944415478da63f8cfc0f01f0005000201a5f645400000000049454e44ae426082"
    )
).decode()


def _dark(page: Page) -> None:
    """Switch JupyterLab to its dark theme the way a user does: Settings → Theme → JupyterLab Dark."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Settings").click()
    page.locator(".lm-Menu-itemLabel", has_text="Theme").first.hover()
    page.locator(".lm-Menu-itemLabel").get_by_text("JupyterLab Dark", exact=True).click()
    expect(page.locator("body[data-jp-theme-light='false']")).to_be_attached(timeout=15_000)


def _start_turn(
    page: Page, lab: Lab, name: str, call: tuple[str, dict[str, str]], *, answer: str, prompt: str, app: str
) -> Any:
    """A notebook whose second cell asks for one tool call, then says ``answer``; runs both cells (the first
    selects the script) in ``app`` and returns the turn's view, still running."""
    tool, arguments = call
    name = f"{name}-{app}"
    model = script(
        lab,
        name,
        [
            {"steps": [{"kind": "tool_call", "name": tool, "input": arguments}]},
            {"steps": [{"kind": "text", "text": answer}]},
        ],
    )
    write_notebook(lab, f"{name}.ipynb", [model, prompt])
    open_notebook(page, lab, f"{name}.ipynb", app=app)
    run_cell(page, 0)
    wait_cell_done(page, 0)
    run_cell(page, 1)
    return turn(page, 1)


@pytest.mark.parametrize(("app", "theme"), [("lab", "light"), ("lab", "dark"), ("notebook7", "light")])
def test_a_reply_has_bordered_tables_typeset_math_task_boxes_and_image_placeholders(
    page: Page, lab: Lab, app: str, theme: str
) -> None:
    name = f"reply-{app}-{theme}"
    model = script(lab, name, [{"steps": [{"kind": "text", "text": REPLY}]}])
    write_notebook(lab, f"{name}.ipynb", [model, "Show me everything."])
    open_notebook(page, lab, f"{name}.ipynb", app=app)
    if theme == "dark":
        _dark(page)
    run_cell(page, 0)
    wait_cell_done(page, 0)
    run_cell(page, 1)
    wait_cell_done(page, 1)
    message = turn(page, 1).locator(".ac-message")
    cell = message.locator("td").first
    expect(cell).to_have_text("Lyon")
    border = cell.evaluate(
        "td => [getComputedStyle(td).borderTopStyle, parseFloat(getComputedStyle(td).borderTopWidth)]"
    )
    assert border[0] == "solid" and border[1] >= 1, border
    maths = message.locator(".ac-math")
    expect(maths).to_have_count(3)
    expect(message.locator(".ac-math .katex-html").first).to_be_visible()
    expect(message.locator(".ac-math-display .katex-display")).to_be_visible()
    expect(maths.nth(1)).to_have_attribute("title", "a\\,b")
    # The bundled fonts, not the page's: KaTeX's own face is loaded (from the CSS, no request elsewhere).
    assert page.evaluate("async () => { await document.fonts.ready; return document.fonts.check('16px KaTeX_Main'); }")
    expect(message.locator(".ac-task-checked[aria-checked='true']")).to_have_count(1)
    expect(message.locator(".ac-task[aria-checked='false']")).to_have_count(1)
    expect(message.locator(".ac-image-blocked")).to_have_text("🖼 sales by month (not loaded: a linked image)")
    quote = message.locator("blockquote")
    assert quote.evaluate("q => getComputedStyle(q).borderLeftStyle") == "solid"
    if theme == "dark":  # themed: the table's text follows the dark theme, not a fixed dark colour
        colour = cell.evaluate("td => getComputedStyle(td).color")
        assert colour not in {"rgb(31, 31, 31)", "rgb(0, 0, 0)"}, colour
    screenshot(page, name)


@pytest.mark.parametrize("app", APPS)
def test_what_the_python_tool_displays_is_inside_its_card_and_the_cell_has_one_output(
    page: Page, lab: Lab, app: str
) -> None:
    code = (
        "from IPython.display import HTML, Image, display\nimport base64\n"
        "display(HTML('<table><tr><th>n</th></tr><tr><td>cell one</td></tr></table>'))\n"
        f"display(Image(data=base64.b64decode({PNG!r})))\n"
    )
    call = ("python", {"code": code})
    view = _start_turn(page, lab, "display", call, answer="Shown above.", prompt="Show a table and a dot.", app=app)
    wait_cell_done(page, 1)
    card = view.locator(".ac-tool")
    expect(card.locator(".ac-status")).to_have_text("completed")
    expect(card.locator(".ac-display td")).to_have_text("cell one")
    expect(card.locator("img.ac-image")).to_be_visible()
    outputs = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea-child")
    visible = [i for i in range(outputs.count()) if outputs.nth(i).is_visible()]
    assert len(visible) == 1, f"{len(visible)} visible outputs"  # the turn; the static fallback is hidden
    screenshot(page, f"tool-display-{app}")


@pytest.mark.parametrize("app", APPS)
def test_an_approval_is_headlined_by_its_command_and_y_allows_it(page: Page, lab: Lab, app: str) -> None:
    marker = lab.root / f"y-{app}.marker"
    call = ("bash", {"command": f"touch {marker}"})
    view = _start_turn(page, lab, "keys", call, answer="Touched.", prompt="Touch the marker.", app=app)
    panel = view.locator(".ac-approval")
    expect(panel.locator(".ac-command")).to_have_text(f"$ touch {marker}", timeout=30_000)
    expect(panel.locator(".ac-approval-reason")).to_contain_text("Asked because bash would run")
    screenshot(page, f"approval-headline-{app}")
    cells = page.locator(".jp-Notebook .jp-Cell").count()
    panel.focus()
    page.keyboard.press("y")
    expect(view.locator(".ac-tool .ac-status")).to_have_text("completed", timeout=30_000)
    expect(view.locator(".ac-note-allow")).to_have_text("Allowed once")
    wait_cell_done(page, 1)
    assert marker.exists()
    assert page.locator(".jp-Notebook .jp-Cell").count() == cells  # the notebook's own shortcuts stayed out


@pytest.mark.parametrize("app", APPS)
def test_enter_in_the_steer_box_sends_and_the_transcript_says_it_was_delivered(page: Page, lab: Lab, app: str) -> None:
    sleep = ("python", {"code": "import time\ntime.sleep(4)"})
    view = _start_turn(page, lab, "steer", sleep, answer="Using the median.", prompt="Measure it.", app=app)
    expect(view.locator(".ac-tool .ac-status")).to_have_text("running", timeout=30_000)
    box = view.locator(".ac-steer-input")
    cells = page.locator(".jp-Notebook .jp-Cell").count()
    box.fill("use the median")
    box.press("Enter")
    expect(box).to_have_value("")
    expect(view.locator(".ac-note", has_text="Steer delivered: use the median")).to_be_visible(timeout=30_000)
    wait_cell_done(page, 1)
    expect(view.locator(".ac-message")).to_have_text("Using the median.")
    screenshot(page, f"steer-delivered-{app}")
    assert page.locator(".jp-Notebook .jp-Cell").count() == cells  # Enter went to the box, not the notebook
