"""The live widget where agentcell's lab extension is not there to lend it the views (issue 34): JupyterLab and
Notebook 7 with the extension disabled, as VS Code or Colab would be. Each turn's widget carries a small
loader; the page asks the kernel for the views once and for KaTeX once, the first time a reply has math, and
the widget streams and takes approvals as with the extension. With the extension, the kernel sends no code.
A notebook nbclient executed, widget state and all, reopens with every turn; the `--html` page carries KaTeX
only when a turn has math and renders every turn offline."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from playwright.sync_api import Page, Route, WebSocket, expect

from agentcell.render.notebook_html import to_html

from ..kernel.conftest import write_script
from ..widgets.conftest import python_turns
from .conftest import lab_env, script
from .lab import (
    Lab,
    open_notebook,
    run_cell,
    run_lab,
    screenshot,
    turn,
    wait_cell_done,
    write_notebook,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(240)]

CODE = re.compile(rb'"type": ?"code", ?"part": ?"(turn|math)"')
"""A kernel → page message that carries a part of the widget's code (widget_renderer.py, `_send_code`)."""


@pytest.fixture(scope="module")
def bare_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab and Notebook 7 with agentcell's extension disabled (`jupyter labextension disable`'s file)."""
    base = tmp_path_factory.mktemp("bare-lab")
    config = base / "config" / "labconfig"
    config.mkdir(parents=True)
    (config / "page_config.json").write_text(json.dumps({"disabledExtensions": {"agentcell-widgets": True}}))
    with run_lab(base, env=lab_env(base)) as server:
        yield server


def code_sent(page: Page) -> list[str]:
    """The parts of the widget's code the kernel sends this page, as they arrive."""
    parts: list[str] = []

    def watch(ws: WebSocket) -> None:
        def received(payload: str | bytes) -> None:
            data = payload.encode() if isinstance(payload, str) else payload
            parts.extend(m.group(1).decode() for m in CODE.finditer(data))

        ws.on("framereceived", received)

    page.on("websocket", watch)
    return parts


def notebook(lab: Lab, name: str, marker: Path) -> None:
    model = script(
        lab,
        name,
        [
            {"steps": [{"kind": "text", "text": "Ready."}]},
            {
                "steps": [
                    {"kind": "text", "text": "First, $E = mc^2$. Now the marker."},
                    {"kind": "tool_call", "name": "bash", "input": {"command": f"touch {marker}"}},
                ]
            },
            {"steps": [{"kind": "text", "text": "Touched."}]},
            {"steps": [{"kind": "text", "text": "tick " * 300, "chunk_size": 5, "delay": 0.02}]},
        ],
    )
    write_notebook(lab, f"{name}.ipynb", [model, "Warm up.", "Touch the marker.", "Talk for a while."])


@pytest.mark.parametrize("app", ["lab", "notebook7"])
def test_the_live_widget_streams_and_takes_approvals_without_the_extension(page: Page, bare_lab: Lab, app: str) -> None:
    lab = bare_lab
    name = f"bare-{app}"
    marker = lab.root / f"{name}.marker"
    notebook(lab, name, marker)
    sent = code_sent(page)
    open_notebook(page, lab, f"{name}.ipynb", app=app)
    run_cell(page, 0)
    wait_cell_done(page, 0)
    run_cell(page, 1)
    wait_cell_done(page, 1)
    expect(page.locator(".jp-Cell").nth(1).locator(".agentcell-fallback")).to_contain_text("Ready.")

    run_cell(page, 2)
    live = turn(page, 2)
    panel = live.locator(".ac-tool .ac-approval")
    expect(panel).to_contain_text("bash wants to run", timeout=30_000)
    expect(live.locator(".ac-message .ac-math .katex-html")).to_be_visible()  # KaTeX came, with its styles
    family = live.locator(".katex .mathnormal").first.evaluate("e => getComputedStyle(e).fontFamily")
    assert "KaTeX_Math" in family
    screenshot(page, f"widget-without-extension-{app}")
    panel.get_by_role("button", name="Allow once").click()
    wait_cell_done(page, 2)
    assert marker.exists()
    # Without the extension's renderer the finished turn shows its HTML transcript in place of the view.
    expect(page.locator(".jp-Cell").nth(2).locator(".agentcell-fallback")).to_contain_text("completed")

    run_cell(page, 3)
    view = turn(page, 3)
    expect(view.locator(".ac-message")).to_contain_text("tick tick", timeout=30_000)
    streamed = view.locator(".ac-message").inner_text()
    assert 0 < len(streamed) < len(("tick " * 300).strip())  # shown while it streams, not only at the end
    wait_cell_done(page, 3)
    # Four turns, one copy of the views and one of KaTeX, which came only once a reply had math.
    assert sorted(sent) == ["math", "turn"], sent


def test_with_the_extension_the_kernel_sends_no_code(page: Page, lab: Lab) -> None:
    marker = lab.root / "with-extension.marker"
    notebook(lab, "with-extension", marker)
    sent = code_sent(page)
    open_notebook(page, lab, "with-extension.ipynb")
    for index in (0, 1):
        run_cell(page, index)
        wait_cell_done(page, index)
    run_cell(page, 2)
    live = turn(page, 2)
    live.locator(".ac-tool .ac-approval").get_by_role("button", name="Allow once").click(timeout=30_000)
    expect(live.locator(".ac-tool .ac-status")).to_have_text("completed", timeout=30_000)
    wait_cell_done(page, 2)
    expect(turn(page, 2).locator(".ac-message .ac-math .katex-html")).to_be_visible()  # the extension's KaTeX
    assert marker.exists()
    assert sent == []


@pytest.fixture(scope="module")
def default_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("default-lab")
    with run_lab(base, env=lab_env(base), defaults=True) as server:
        yield server


def test_a_notebook_nbclient_executed_with_widget_state_reopens_with_every_turn(
    page: Page, default_lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    lab, turns = default_lab, 20
    for key, value in lab_env(lab.root.parent).items():
        monkeypatch.setenv(key, value)
    model = script(lab, "executed", python_turns(turns))
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "agentcell", "display_name": "agentcell", "language": "markdown"}
    nb.cells = [
        nbformat.v4.new_code_cell(c) for c in [model, *(f"Sum the first {n + 10} numbers." for n in range(turns))]
    ]
    NotebookClient(nb, kernel_name="agentcell", timeout=60, store_widget_state=True).execute()
    assert nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]  # saved, as nbclient does
    nbformat.write(nb, lab.root / "executed.ipynb")
    for app in ("lab", "notebook7"):
        open_notebook(page, lab, "executed.ipynb", app=app)
        saved = page.locator(".jp-Notebook .jp-Cell .agentcell-mime .agentcell-turn")
        expect(saved).to_have_count(turns, timeout=30_000)
        for index in (1, turns):  # the first turn and the last, whole: tool card and answer
            view = saved.nth(index - 1)
            view.scroll_into_view_if_needed()
            expect(view.locator(".ac-tool .ac-tool-output")).to_contain_text(str(sum(range(index + 9))))
            expect(view.locator(".ac-message")).to_contain_text(f"first {index + 9} numbers")
        assert page.get_by_text("Error displaying widget").count() == 0
        screenshot(page, f"nbclient-executed-{app}")


def test_the_html_page_carries_katex_only_for_math_and_renders_every_turn_offline(
    page: Page, kernel_env: dict[str, str], tmp_path: Path
) -> None:
    reply = "Energy: $E = mc^2$.\n\n$$\\int_0^1 x\\,dx = \\frac{1}{2}$$"
    responses = [
        {"steps": [{"kind": "text", "text": "It costs $5 and $6, no math."}]},
        {"steps": [{"kind": "text", "text": reply}]},
    ]
    model = write_script(tmp_path / "script.json", responses)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "agentcell", "display_name": "Agent (agentcell)", "language": "markdown"}
    nb.cells = [nbformat.v4.new_code_cell(s) for s in (f"%model {model}", "What does it cost?", "Some physics.")]
    path = tmp_path / "math.ipynb"
    nbformat.write(nb, path)
    command = [sys.executable, "-m", "agentcell.cli", "run", str(path), "--html"]
    done = subprocess.run(command, check=False, capture_output=True, text=True, env=kernel_env, timeout=120)
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "math.executed.html").read_text()
    assert 'id="agentcell-math-module"' in html
    executed = nbformat.read(tmp_path / "math.executed.ipynb", as_version=4)
    executed.cells = executed.cells[:2]  # the page of the turn without math: no KaTeX in it
    without_math = to_html(executed)
    assert 'id="agentcell-math-module"' not in without_math and 'id="agentcell-turn-module"' in without_math
    assert len(without_math) < len(html) - 500_000

    fetched: list[str] = []

    def offline(route: Route) -> None:
        if route.request.url.startswith(("file:", "blob:", "data:")):
            route.continue_()
        else:
            fetched.append(route.request.url)
            route.abort()

    page.route("**/*", offline)
    page.goto((tmp_path / "math.executed.html").as_uri())
    views = page.locator(".agentcell-turn")
    expect(views).to_have_count(2)
    expect(views.nth(0).locator(".ac-message")).to_have_text("It costs $5 and $6, no math.")
    expect(views.nth(1).locator(".ac-math .katex-html").first).to_be_visible()
    expect(views.nth(1).locator(".ac-math-display .katex-display")).to_be_visible()
    family = views.nth(1).locator(".katex .mathnormal").first.evaluate("e => getComputedStyle(e).fontFamily")
    assert "KaTeX_Math" in family
    assert fetched == []
    screenshot(page, "html-page-math")
