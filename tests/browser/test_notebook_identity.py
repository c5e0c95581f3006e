"""A notebook's conversation is its own, in JupyterLab and Notebook 7 with default settings: a new notebook at
a reused name (``Untitled.ipynb``) starts afresh, also after a kernel restart and with every kernel shut
down; Duplicate and a file-system copy fork; a rename keeps the session; opening an untouched notebook does
not mark it modified; a notebook opened on a store that never saw its conversation goes on from what it shows.
The loopback Anthropic server's request log says what history the model got."""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import Page, expect

from agentcell import Engine
from agentcell.kernel.kernel import AgentCellKernel
from agentcell.store import notebooks as notebook_index

from ..kernel.echo_server import EchoServer, echo_server
from .conftest import lab_env
from .lab import Lab, open_notebook, run_cell, run_lab, wait_cell_done, wait_idle, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def server() -> Iterator[EchoServer]:
    with echo_server() as instance:
        yield instance


@pytest.fixture(scope="module")
def claude_lab(tmp_path_factory: pytest.TempPathFactory, server: EchoServer) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("identity-lab")
    with run_lab(base, env=_claude_env(base, server), defaults=True) as lab:
        yield lab


def _claude_env(base: Path, server: EchoServer) -> dict[str, str]:
    """The lab's kernels on Claude, served by the loopback Anthropic server."""
    return lab_env(base) | {
        "AGENTCELL_MODEL": "claude-sonnet-4-5",
        "ANTHROPIC_BASE_URL": server.root,
        "ANTHROPIC_API_KEY": "sk-ant-test",
    }


def _users(server: EchoServer) -> list[str]:
    """The user messages of the latest request: the history the model got, and the question."""
    return [text for role, text in server.conversations()[-1] if role == "user"]


def _shut_down_kernels(page: Page, lab: Lab) -> None:
    page.goto("about:blank")
    for kernel in lab.api("GET", "/api/kernels"):
        lab.api("DELETE", f"/api/kernels/{kernel['id']}")


def _restart_kernel(page: Page, lab: Lab, name: str, app: str) -> None:
    (session,) = [s for s in lab.api("GET", "/api/sessions") if s["path"] == name]
    lab.api("POST", f"/api/kernels/{session['kernel']['id']}/restart")
    wait_idle(page, app=app)


def _run(page: Page, *indices: int) -> None:
    for index in indices:
        run_cell(page, index)
        wait_cell_done(page, index)


def _notebook_id(path: Path) -> str | None:
    value = json.loads(path.read_text())["metadata"].get("agentcell", {}).get("notebook_id")
    return value if isinstance(value, str) else None


@pytest.mark.parametrize("app", ["lab", "notebook7"])
def test_untitled_reuse_copies_and_rename(page: Page, claude_lab: Lab, server: EchoServer, app: str) -> None:
    lab = claude_lab
    untitled = f"{app}/Untitled.ipynb"
    daily, daily_id = _daily(page, lab, server, app)
    daily_session = _session_of(daily)

    # A new notebook: the name Untitled.ipynb is free again.
    write_notebook(lab, untitled, [f"{app} fresh one", f"{app} fresh two"])
    open_notebook(page, lab, untitled, app)
    _run(page, 0)
    assert _users(server) == [f"{app} fresh one"]
    _restart_kernel(page, lab, untitled, app)
    _run(page, 1)
    assert _users(server) == [f"{app} fresh one", f"{app} fresh two"]  # its own session, not daily's
    _shut_down_kernels(page, lab)

    # Duplicate (what Lab's Duplicate asks the server) and a file-system copy: each forks daily's session.
    duplicate = lab.api("POST", f"/api/contents/{app}", {"copy_from": f"{app}/daily.ipynb"})["path"]
    copied = f"{app}/daily-cp.ipynb"
    shutil.copy(daily, lab.root / copied)
    for name in (duplicate, copied):
        open_notebook(page, lab, name, app)
        _run(page, 1)  # redoes daily two, in the copy's own session
        assert _users(server) == [f"{app} daily one", f"{app} daily two"]
        toast = page.locator(".jp-Notification-Toast-info", has_text="This notebook is a copy of daily.ipynb")
        if app == "lab":
            expect(toast).to_be_visible(timeout=20_000)
        page.keyboard.press("Control+s")
        _wait_saved_with_id(lab.root / name, not_id=daily_id)
        _shut_down_kernels(page, lab)

    # Daily, renamed, keeps its session: its history is its own two turns, in the session it had.
    open_notebook(page, lab, f"{app}/daily.ipynb", app)
    _run(page, 1)
    assert _users(server) == [f"{app} daily one", f"{app} daily two"]
    page.keyboard.press("Control+s")
    _wait_saved_with_id(daily)
    assert _notebook_id(daily) == daily_id and _session_of(daily) == daily_session
    sessions = {_session_of(lab.root / name) for name in (f"{app}/daily.ipynb", duplicate, copied)}
    assert len(sessions) == 3  # three notebooks, three conversations
    _shut_down_kernels(page, lab)


def _daily(page: Page, lab: Lab, server: EchoServer, app: str) -> tuple[Path, str]:
    """A new notebook, Untitled.ipynb, two turns, saved, then renamed daily.ipynb (as the first save's dialog
    does, the notebook open and its kernel running); returns its path and id."""
    (lab.root / app).mkdir()
    path = write_notebook(lab, f"{app}/Untitled.ipynb", [f"{app} daily one", f"{app} daily two"])
    nb = nbformat.read(path, as_version=4)
    # As Lab saves it, so nothing is left for Lab itself to update at open.
    nb.metadata["language_info"] = AgentCellKernel.language_info
    nb.metadata["kernelspec"]["display_name"] = "Agent (agentcell)"
    nbformat.write(nb, path)
    before = path.read_text()
    open_notebook(page, lab, f"{app}/Untitled.ipynb", app)
    if app == "lab":  # opening an untouched notebook leaves it unmodified (Notebook 7 shows no tab to mark)
        expect(page.locator(".lm-TabBar-tab.jp-mod-current")).to_have_count(1)
        expect(page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty")).to_have_count(0)
    assert path.read_text() == before
    _run(page, 0, 1)
    assert _users(server) == [f"{app} daily one", f"{app} daily two"]
    page.keyboard.press("Control+s")
    _wait_saved_with_id(path)
    daily_id = _notebook_id(path)
    assert daily_id is not None
    _rename(page, "daily.ipynb")
    daily = lab.root / app / "daily.ipynb"
    _wait_saved_with_id(daily)
    _wait_index_knows(lab, daily_id, daily)
    _shut_down_kernels(page, lab)
    return daily, daily_id


def _rename(page: Page, name: str) -> None:
    """File → Rename, in JupyterLab and Notebook 7 alike."""
    page.get_by_role("menuitem", name="File", exact=True).click()
    page.get_by_role("menuitem", name=re.compile(r"^Rename")).first.click()
    field = page.locator(".jp-Dialog input")
    field.fill(name)
    field.press("Enter")
    expect(page.locator(".jp-Dialog")).to_have_count(0)


def _wait_saved_with_id(path: Path, *, not_id: str | None = None, timeout: float = 20.0) -> None:
    """Until the saved file carries an id (other than ``not_id``) and its turns: the save has landed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            saved = json.loads(path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):  # a rename or a save still on its way
            saved = {"metadata": {}, "cells": []}
        found = saved["metadata"].get("agentcell", {}).get("notebook_id")
        if found and found != not_id and any(c.get("outputs") for c in saved["cells"]):
            return
        time.sleep(0.2)
    raise AssertionError(f"{path.name} was not saved with an id of its own")


def _wait_index_knows(lab: Lab, notebook_id: str, path: Path, timeout: float = 20.0) -> None:
    """Until the kernel has heard of the rename (the front end says the new path as it happens) and its
    notebook index has the new path: a user's next step is seconds away, the test's is not."""
    deadline = time.monotonic() + timeout
    with Engine(str(lab.root.parent / "agentcell.db")) as engine:
        while time.monotonic() < deadline:
            record = notebook_index.get_notebook(engine.store, notebook_id)
            if record is not None and record.path and Path(record.path).resolve() == path.resolve():
                return
            time.sleep(0.2)
    raise AssertionError(f"the notebook index never learned that {notebook_id} is at {path}")


def _session_of(path: Path) -> str:
    """The session of the notebook's last saved turn."""
    nb = nbformat.read(path, as_version=4)
    for cell in reversed(nb.cells):
        for output in cell.get("outputs", []):
            events = output.get("data", {}).get("application/vnd.agentcell.turn+json", {}).get("events", [])
            if events:
                return str(events[0]["session_id"])
    raise AssertionError(f"{path.name} shows no turn")


def test_untitled_reuse_after_a_server_restart(
    page: Page, tmp_path_factory: pytest.TempPathFactory, server: EchoServer
) -> None:
    base = tmp_path_factory.mktemp("restarted-lab")
    env = _claude_env(base, server)
    with run_lab(base, env=env, defaults=True) as lab:
        daily, daily_id = _daily(page, lab, server, "lab")
        page.goto("about:blank")
    with run_lab(base, env=env, defaults=True) as lab:  # the same root and store, a new server
        write_notebook(lab, "lab/Untitled.ipynb", ["after the restart"])
        open_notebook(page, lab, "lab/Untitled.ipynb")
        _run(page, 0)
        assert _users(server) == ["after the restart"]
        _shut_down_kernels(page, lab)
        open_notebook(page, lab, "lab/daily.ipynb")
        _run(page, 1)
        assert _users(server) == ["lab daily one", "lab daily two"]
        page.keyboard.press("Control+s")
        _wait_saved_with_id(daily)
        assert _notebook_id(daily) == daily_id
        _shut_down_kernels(page, lab)


def test_a_notebook_on_another_store_goes_on_from_what_it_shows(
    page: Page, tmp_path_factory: pytest.TempPathFactory, server: EchoServer
) -> None:
    """The notebook is the truth: opened where the store never saw its conversation (another machine, a
    deleted database), its next turn's model gets the turns it shows, and the user is told once."""
    first = tmp_path_factory.mktemp("first-store-lab")
    with run_lab(first, env=_claude_env(first, server), defaults=True) as lab:
        daily, _ = _daily(page, lab, server, "lab")
        page.goto("about:blank")
    nb = nbformat.read(daily, as_version=4)
    nb.cells = [cell for cell in nb.cells if cell.source]  # the empty one Shift+Enter left below the last
    nb.cells.append(nbformat.v4.new_code_cell("lab daily three"))
    second = tmp_path_factory.mktemp("second-store-lab")
    with run_lab(second, env=_claude_env(second, server), defaults=True) as lab:  # its own store
        (lab.root / "lab").mkdir()
        nbformat.write(nb, lab.root / "lab" / "daily.ipynb")
        open_notebook(page, lab, "lab/daily.ipynb")
        _run(page, 2)
        assert _users(server) == ["lab daily one", "lab daily two", "lab daily three"]
        said = "The store has no conversation of this notebook"
        expect(page.locator(".jp-Notification-Toast-info", has_text=said)).to_be_visible(timeout=20_000)
        cells = page.locator(".jp-Notebook .jp-Cell")
        expect(cells.nth(2).locator(".jp-OutputArea-output", has_text=said)).to_have_count(1)
        _shut_down_kernels(page, lab)
