"""An empty cell of an agentcell notebook says what to write in it (issue 14, 5): real JupyterLab, default
settings, the extension the wheel ships."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page

from .conftest import lab_env
from .lab import Lab, open_notebook, run_lab, screenshot, write_notebook

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(180)]

HINT = "Ask the agent… (%%python for Python, %help for the magics)"


@pytest.fixture(scope="module")
def default_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("placeholder-lab")
    with run_lab(base, env=lab_env(base), defaults=True) as server:
        yield server


def _hints(page: Page) -> list[str]:
    # The hint is drawn by CSS (::before), never typed into the cell: read what the browser paints.
    return list(
        page.evaluate(
            """() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .cm-content > .cm-line')]
                .map((line) => getComputedStyle(line, '::before').content)"""
        )
    )


def test_an_empty_agentcell_cell_shows_the_hint_and_a_python_notebooks_does_not(page: Page, default_lab: Lab) -> None:
    write_notebook(default_lab, "hint.ipynb", ["", "What is in the data?"])
    open_notebook(page, default_lab, "hint.ipynb")
    page.wait_for_function("() => document.querySelector('.agentcell-notebook') !== null", timeout=30_000)
    hints = _hints(page)
    assert hints[0] == f'"{HINT}"'
    assert hints[1] in ("none", "normal")  # a cell with text shows none
    screenshot(page, "placeholder")
    write_notebook(default_lab, "plain.ipynb", [""], kernel="python3")
    open_notebook(page, default_lab, "plain.ipynb")
    assert page.locator(".agentcell-notebook").count() == 0
    assert _hints(page)[0] in ("none", "normal")
