"""%model asks for a missing API key in JupyterLab's own hidden prompt, and the key never reaches the
saved notebook (issue 14, 5): a real JupyterLab, its kernels pointed at a loopback Anthropic server."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from ..kernel.echo_server import EchoServer, echo_server
from .conftest import lab_env
from .lab import Lab, open_notebook, run_cell, run_lab, save, screenshot, wait_cell_done, write_notebook

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(180)]

KEY = "fake-key-typed-in-the-browser-0123456789"  # not key-shaped: nothing scans it as a leak


@pytest.fixture(scope="module")
def anthropic() -> Iterator[EchoServer]:
    with echo_server() as server:
        yield server


@pytest.fixture(scope="module")
def keyless_lab(tmp_path_factory: pytest.TempPathFactory, anthropic: EchoServer) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("keyless-lab")
    env = {**lab_env(base), "ANTHROPIC_BASE_URL": anthropic.root, "ANTHROPIC_API_KEY": ""}
    with run_lab(base, env=env) as server:
        yield server


def test_a_missing_key_is_typed_into_a_hidden_prompt_and_never_saved(
    page: Page, keyless_lab: Lab, anthropic: EchoServer
) -> None:
    lab = keyless_lab
    path: Path = write_notebook(lab, "keyed.ipynb", ["%model claude-sonnet-4-5", "Say hello"])
    open_notebook(page, lab, "keyed.ipynb")
    run_cell(page, 0)
    prompt = page.locator(".jp-Stdin-input")
    expect(prompt).to_be_visible(timeout=30_000)
    assert prompt.get_attribute("type") == "password"  # Lab hides what is typed
    expect(page.locator(".jp-Stdin-prompt")).to_contain_text("ANTHROPIC_API_KEY")
    prompt.fill(KEY)
    prompt.press("Enter")
    wait_cell_done(page, 0)
    cell = page.locator(".jp-Notebook .jp-Cell").nth(0)
    expect(cell.locator(".jp-OutputArea")).to_contain_text("model: claude-sonnet-4-5")
    run_cell(page, 1)
    wait_cell_done(page, 1)
    expect(page.locator(".jp-Notebook .jp-Cell").nth(1)).to_contain_text(re.compile("reply to: Say hello"))
    screenshot(page, "key-prompt")
    save(page)
    assert anthropic.headers[-1]["x-api-key"] == KEY
    saved = path.read_text()
    assert KEY not in saved and "model: claude-sonnet-4-5" in saved
