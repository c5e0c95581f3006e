"""Browser fixtures: Debian's chromium through Playwright (no browser download), and a JupyterLab server
whose kernels use the scripted provider (each notebook picks its script with ``%model scripted:PATH``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from .lab import CHROMIUM, CHROMIUM_ARGS, Lab, run_lab


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # Module scope, not session: sync Playwright keeps an event loop running in this thread, and the
    # asyncio tests collected after tests/browser could not start theirs while it lives.
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def lab_env(base: Path) -> dict[str, str]:
    (base / "data").mkdir(parents=True, exist_ok=True)
    return {
        "AGENTCELL_DB": str(base / "agentcell.db"),
        "AGENTCELL_MODEL": "scripted",
        "JUPYTER_DATA_DIR": str(base / "data"),
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("lab")
    with run_lab(base, env=lab_env(base)) as server:
        yield server


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not [e for e in errors if "agentcell" in e or "turn.js" in e], errors


def script(lab: Lab, name: str, responses: list[dict[str, Any]], pricing: dict[str, float] | None = None) -> str:
    """Write a scripted-provider script next to the notebooks; returns the ``%model`` cell selecting it."""
    path = lab.root / f"{name}.script.json"
    data: Any = {"responses": responses, "pricing": pricing} if pricing else responses
    path.write_text(json.dumps(data))
    return f"%model scripted:{path}"
