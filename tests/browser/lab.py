"""A real JupyterLab server for browser tests, and helpers to drive a notebook in it with Playwright.

The server runs from the current environment's ``jupyter`` (so ``.venv-ipykernel73/bin/pytest`` tests
ipykernel 7.3 and ``.venv/bin/pytest`` tests 7.4), on 127.0.0.1 with a token, with temporary config,
runtime, settings and workspace directories. Lab settings written for every run: widget state is saved
with the notebook (``saveState``), news and update checks are off, and comms go over subshells or not
(``commsOverSubshells``) as the test asks.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from playwright.sync_api import Page, expect

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-dev-shm-usage",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "browser"


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    comms: str

    def api(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.url}{path}?token={self.token}", data=data, method=method)
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def notebook_url(self, name: str) -> str:
        return f"{self.url}/lab/tree/{name}?token={self.token}&reset"

    def notebook7_url(self, name: str) -> str:
        """The same notebook in Notebook 7 (the ``notebook`` package's pages on the same server)."""
        return f"{self.url}/notebooks/{name}?token={self.token}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _write_settings(settings: Path, comms: str, *, defaults: bool) -> None:
    files: dict[str, Any] = (
        {}
        if defaults
        else {
            "@jupyter-widgets/jupyterlab-manager/plugin.jupyterlab-settings": {"saveState": True},
            "@jupyterlab/apputils-extension/kernels-settings.jupyterlab-settings": {"commsOverSubshells": comms},
        }
    )
    files |= {
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
            "fetchNews": "false",
            "checkForUpdates": False,
        },
    }
    for name, value in files.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))


@contextmanager
def run_lab(
    base: Path, *, comms: str = "perCommTarget", env: dict[str, str] | None = None, defaults: bool = False
) -> Iterator[Lab]:
    """Start ``jupyter lab`` and wait until its API answers; stop it afterwards. With ``defaults`` the lab
    keeps its default settings (widget state not saved, comms as it chooses) but for the news feed."""
    root, settings, workspaces = base / "root", base / "settings", base / "workspaces"
    for path in (root, settings, workspaces, base / "config", base / "runtime"):
        path.mkdir(parents=True, exist_ok=True)
    _write_settings(settings, comms, defaults=defaults)
    token = secrets.token_hex(16)
    port = _free_port()
    jupyter = Path(sys.executable).parent / "jupyter"
    full_env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(base / "config"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    log = (base / "lab.log").open("w")
    process = subprocess.Popen(
        [
            str(jupyter),
            "lab",
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            f"--LabApp.user_settings_dir={settings}",
            f"--LabApp.workspaces_dir={workspaces}",
        ],
        env=full_env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    lab = Lab(f"http://127.0.0.1:{port}", token, root, comms)
    try:
        deadline = time.monotonic() + 60
        while True:  # the server has no readiness signal but its API answering
            if process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited: {(base / 'lab.log').read_text()[-2000:]}")
            try:
                lab.api("GET", "/api/status")
                break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield lab
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def write_notebook(lab: Lab, name: str, cells: list[str], *, kernel: str = "agentcell") -> Path:
    """A notebook of code cells on ``kernel`` (agentcell cells are prose; ``%`` lines are magics)."""
    nb = nbformat.v4.new_notebook()
    display = "agentcell" if kernel == "agentcell" else "Python 3"
    language = "markdown" if kernel == "agentcell" else "python"
    nb.metadata["kernelspec"] = {"name": kernel, "display_name": display, "language": language}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    path = lab.root / name
    nbformat.write(nb, path)
    return path


APPS = ("lab", "notebook7")
"""The two front ends a test may open a notebook in: JupyterLab and Notebook 7 (one server serves both)."""


def open_notebook(page: Page, lab: Lab, name: str, app: str = "lab") -> None:
    page.goto(lab.notebook7_url(name) if app == "notebook7" else lab.notebook_url(name))
    expect(page.locator(".jp-Notebook .jp-Cell").first).to_be_visible(timeout=30_000)
    wait_idle(page, app=app)


def wait_idle(page: Page, timeout: float = 60_000, app: str = "lab") -> None:
    """The kernel is started and idle (the notebook toolbar's indicator, and in JupyterLab the status bar;
    Notebook 7 has none)."""
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_be_attached(timeout=timeout)
    if app == "lab":
        expect(page.get_by_text(re.compile(r"\| Idle$"))).to_be_visible(timeout=timeout)


def run_cell(page: Page, index: int) -> None:
    """Run the index-th cell (Shift+Enter in its editor). Right after the kernel starts, Lab sometimes
    drops the first keypress; a prompt still showing ``[ ]:`` means nothing was sent, so pressing again
    cannot run the cell twice."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    not_sent = re.compile(r"^\[ \]:$")
    for _ in range(3):
        dialog = page.locator(".jp-Dialog")
        if dialog.count():  # it would take the click: say what it asks rather than time out under it
            raise AssertionError(f"a dialog covers the notebook: {dialog.first.inner_text()!r}")
        cell.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        try:
            expect(cell_prompt(page, index)).not_to_have_text(not_sent, timeout=5_000)
            return
        except AssertionError:
            continue
    raise AssertionError(f"cell {index} did not start running")


def run_all(page: Page, first: int) -> None:
    """Run > Run All Cells; ``first`` is the index of the first code cell. Right after the kernel starts,
    Notebook 7 sometimes clears the outputs and runs nothing; the first cell still showing ``[ ]:`` means
    nothing was sent, so choosing Run All again cannot run a cell twice."""
    for _ in range(3):
        page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-item[data-command='runmenu:run-all']").click()
        try:
            expect(cell_prompt(page, first)).not_to_have_text(re.compile(r"^\[ \]:$"), timeout=5_000)
            return
        except AssertionError:
            continue
    raise AssertionError("Run All did not start")


def cell_prompt(page: Page, index: int) -> Any:
    return page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-InputArea-prompt")


def wait_cell_done(page: Page, index: int, timeout: float = 60_000) -> None:
    """The cell shows an execution count: its execute_reply arrived."""
    expect(cell_prompt(page, index)).to_have_text(re.compile(r"\[\d+\]:"), timeout=timeout)


def turn(page: Page, index: int) -> Any:
    """The turn widget of the index-th cell."""
    return page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".agentcell-turn")


def save(page: Page) -> None:
    """Save the notebook (Ctrl+S) and wait until the tab no longer shows unsaved changes."""
    dirty = page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty")
    expect(dirty).to_have_count(1)
    page.locator(".jp-Notebook").click()
    page.keyboard.press("Control+s")
    expect(dirty).to_have_count(0, timeout=10_000)


def screenshot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
