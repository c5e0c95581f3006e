"""``%session follow`` in a real JupyterLab (headless Chromium): the view keeps updating after its cell ran."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from agentcell import Engine

from ..browser.lab import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, open_notebook, run_cell, run_lab, wait_cell_done
from ..browser.lab import write_notebook as write_lab_notebook

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def test_a_followed_session_updates_in_the_notebook_while_another_process_drives_it(
    tmp_path: Path, pg_url: str
) -> None:
    with Engine(pg_url) as driver:
        session = driver.sessions.create(agent=driver.agents.create(name="lead", model="scripted").id)
        session.send_sync("What did the survey find?")
        env = {"AGENTCELL_DB": pg_url, "JUPYTER_DATA_DIR": str(tmp_path / "data"), "AGENTCELL_MODEL": "scripted"}
        with run_lab(tmp_path / "lab", env=env) as lab, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1100, "height": 800})
            write_lab_notebook(lab, "watch.ipynb", [f"%session follow {session.id}"])
            open_notebook(page, lab, "watch.ipynb")
            run_cell(page, 0)
            wait_cell_done(page, 0)
            output = page.locator(".jp-Notebook .jp-Cell").nth(0).locator(".jp-OutputArea")
            expect(output).to_contain_text(f"Following session {session.id}", timeout=20_000)
            expect(output).to_contain_text("You said: What did the survey find?", timeout=20_000)

            # The cell has finished: the view must follow on. (Playwright's loop runs in this thread, so the
            # driver's turn runs in another.)
            with ThreadPoolExecutor(1) as other:
                other.submit(session.send_sync, "Summarise it in one line.").result(timeout=30)
            expect(output).to_contain_text("You said: Summarise it in one line.", timeout=20_000)
            expect(output).to_contain_text(re.compile(r"idle · \d+ events"))
            expect(output).to_contain_text("turn $0 · session $0")  # dollars, not MathJax
            assert output.locator("mjx-container, .MathJax").count() == 0
            assert output.locator("button").count() == 0  # read-only: no Stop, no approvals
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "session-follow.png"))
            browser.close()
