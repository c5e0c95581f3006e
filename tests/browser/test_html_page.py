"""The page `agentcell run --html` writes, opened from disk in Chromium: the turns render with the widget's
module from the bundles saved in the page with no network at all, and without JavaScript the static
fallbacks show instead."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import Browser, Page, Route, expect

from ..kernel.conftest import write_script

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

DOT = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP4z8DwHwAFAAIBpfZFQAAAAABJRU5ErkJggg=="
"""A 1x1 PNG: the bundle keeps a tool's image once, in its HTML fallback, and the page's views take it there."""
CODE = (
    "import base64\nfrom IPython.display import Image, display\n"
    f"print(6 * 7)\ndisplay(Image(data=base64.b64decode({DOT!r})))"
)
SCRIPT = [
    {"steps": [{"kind": "tool_call", "name": "python", "input": {"code": CODE}}]},
    {"steps": [{"kind": "text", "text": "The answer is **42**."}]},
]


@pytest.fixture
def page_file(kernel_env: dict[str, str], tmp_path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "agentcell", "display_name": "Agent (agentcell)", "language": "markdown"}
    model = write_script(tmp_path / "script.json", SCRIPT)
    nb.cells = [nbformat.v4.new_code_cell(f"%model {model}"), nbformat.v4.new_code_cell("Compute six times seven.")]
    path = tmp_path / "answer.ipynb"
    nbformat.write(nb, path)
    command = [sys.executable, "-m", "agentcell.cli", "run", str(path), "--html"]
    done = subprocess.run(command, check=False, capture_output=True, text=True, env=kernel_env, timeout=120)
    assert done.returncode == 0, done.stderr
    return tmp_path / "answer.executed.html"


def test_the_page_renders_its_turns_from_saved_state_and_fetches_nothing(page: Page, page_file: Path) -> None:
    html = page_file.read_text()
    assert not re.search(r"""<script[^>]*\bsrc=["']?https?:""", html)  # no require.js, MathJax, widget manager
    assert "unpkg.com" not in html and "cdnjs" not in html
    fetched: list[str] = []

    def offline(route: Route) -> None:
        url = route.request.url
        if url.startswith(("file:", "blob:", "data:")):
            route.continue_()
        else:
            fetched.append(url)
            route.abort()

    page.route("**/*", offline)
    page.goto(page_file.as_uri())
    view = page.locator(".agentcell-turn")
    expect(view.locator(".ac-message strong")).to_have_text("42")
    expect(view.locator(".ac-tool .ac-tool-output")).to_contain_text("42")
    assert view.locator(".ac-tool img.ac-image").evaluate("img => img.decode().then(() => img.naturalWidth)") == 1
    expect(view.locator(".ac-turn-status")).to_have_text("done")
    expect(page.locator(".agentcell-fallback")).to_be_hidden()  # the turn view stands in for it
    expect(page.locator(".agentcell-turn")).to_have_count(1)  # one view per turn: the bundle, not a widget
    assert "application/vnd.jupyter.widget-view+json" not in html
    assert fetched == []


def test_without_javascript_the_page_shows_the_static_fallback(browser: Browser, page_file: Path) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(page_file.as_uri())
        fallback = page.locator(".agentcell-fallback")
        expect(fallback).to_be_visible()
        expect(fallback).to_contain_text("The answer is 42.")
        expect(page.locator(".agentcell-turn")).to_have_count(0)
        expect(page.get_by_text("agent turn (a live view")).to_have_count(0)  # no widget placeholder left
    finally:
        context.close()
