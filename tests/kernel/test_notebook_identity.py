"""A notebook's conversation is its own, through real kernels and notebook files on disk: a new notebook at a
reused name starts afresh, a renamed one keeps its session, a copy forks it. The loopback Anthropic server's
request log says what history the model got."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from agentcell.kernel.notebook_id import session_of_notebook
from agentcell.store import open_store

from .conftest import execute, running_kernel
from .echo_server import EchoServer
from .notebook_files import DAILY_ID, daily_notebook, identify, save_notebook, saved_id, users_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]  # several kernels one after another


def test_a_new_notebook_at_a_reused_name_starts_afresh_and_the_renamed_one_goes_on(
    kernel_env: dict[str, str], tmp_path: Path, claude_echo: EchoServer
) -> None:
    daily = daily_notebook(kernel_env, tmp_path)
    untitled = tmp_path / "Untitled.ipynb"
    save_notebook(untitled, None, [])  # Launcher → Agent again: the name is free
    env = {**kernel_env, "JPY_SESSION_NAME": str(untitled)}
    with running_kernel(env, cwd=tmp_path) as (_, kc):
        answer = identify(kc, "0b6e1c2d-3f4a-4b5c-8d9e-0f1a2b3c4d5e")
        assert answer == {"notebook_id": "0b6e1c2d-3f4a-4b5c-8d9e-0f1a2b3c4d5e", "notices": []}
        execute(kc, "a fresh question")
    assert users_of(claude_echo) == ["a fresh question"]
    # Without the extension's word (the %%agent extension, a front end without it) the file decides: it shows
    # none of daily's turns, so the path it shares with daily's first name finds nothing.
    save_notebook(untitled, None, [])
    with running_kernel(env, cwd=tmp_path) as (_, kc):
        execute(kc, "another fresh question")
    assert users_of(claude_echo) == ["another fresh question"]
    with running_kernel({**kernel_env, "JPY_SESSION_NAME": str(daily)}, cwd=tmp_path) as (_, kc):
        assert identify(kc, DAILY_ID) == {"notebook_id": DAILY_ID, "notices": []}
        execute(kc, "daily three")
    assert users_of(claude_echo) == ["daily one", "daily two", "daily three"]  # the rename kept the session


def test_the_agent_extension_at_a_reused_name_starts_afresh_without_any_id(
    kernel_env: dict[str, str], tmp_path: Path, claude_echo: EchoServer
) -> None:
    untitled = tmp_path / "Untitled.ipynb"
    save_notebook(untitled, None, [])
    env = {**kernel_env, "JPY_SESSION_NAME": str(untitled)}
    with running_kernel(env, kernel_name="python3", cwd=tmp_path) as (km, kc):  # no extension: no id, ever
        assert execute(kc, "%load_ext agentcell").status == "ok"
        one = execute(kc, "%%agent\nplain one")
        km.restart_kernel(now=True)  # not saved yet: the file shows no turns, and is older than them
        kc.wait_for_ready(timeout=60)
        assert execute(kc, "%load_ext agentcell").status == "ok"
        two = execute(kc, "%%agent\nplain two")
        assert users_of(claude_echo) == ["plain one", "plain two"]
        save_notebook(untitled, None, [("%%agent\nplain one", one), ("%%agent\nplain two", two)])
    untitled.rename(tmp_path / "plain.ipynb")
    save_notebook(untitled, None, [])  # a new notebook at the free name
    with running_kernel(env, kernel_name="python3", cwd=tmp_path) as (_, kc):
        assert execute(kc, "%load_ext agentcell").status == "ok"
        execute(kc, "%%agent\nsomething new")
    assert users_of(claude_echo) == ["something new"]


def test_a_copy_forks_at_the_last_turn_it_shows_and_the_two_diverge(
    kernel_env: dict[str, str], tmp_path: Path, claude_echo: EchoServer
) -> None:
    daily = daily_notebook(kernel_env, tmp_path)
    copy = tmp_path / "daily-Copy1.ipynb"
    shutil.copy(daily, copy)  # Lab's Duplicate, or cp: the same id in both
    daily_env = {**kernel_env, "JPY_SESSION_NAME": str(daily)}
    with running_kernel(daily_env, cwd=tmp_path) as (_, kc):  # daily goes on before the copy is opened
        identify(kc, DAILY_ID)
        execute(kc, "daily three")
    copy_env = {**kernel_env, "JPY_SESSION_NAME": str(copy)}
    with running_kernel(copy_env, cwd=tmp_path) as (_, kc):
        answer = identify(kc, DAILY_ID)
        own_id = answer["notebook_id"]
        assert own_id not in (None, DAILY_ID)
        assert len(answer["notices"]) == 1 and "a copy of daily.ipynb" in answer["notices"][0]
        copied = execute(kc, "copy question")
    assert users_of(claude_echo) == ["daily one", "daily two", "copy question"]  # what the copy shows, not daily three
    with running_kernel(daily_env, cwd=tmp_path) as (_, kc):
        assert identify(kc, DAILY_ID)["notebook_id"] == DAILY_ID
        execute(kc, "daily four")
    assert users_of(claude_echo) == ["daily one", "daily two", "daily three", "daily four"]
    # The copy not saved since (its file still carries daily's id): it finds its own session again.
    assert saved_id(copy) == DAILY_ID
    with running_kernel(copy_env, cwd=tmp_path) as (_, kc):
        assert identify(kc, DAILY_ID) == {"notebook_id": own_id, "notices": []}
        execute(kc, "copy again")
    assert users_of(claude_echo) == ["daily one", "daily two", "copy question", "copy again"]
    # Saved with its own id and then renamed, it is still itself.
    save_notebook(copy, own_id, [("copy question", copied)])
    moved = tmp_path / "sub"
    moved.mkdir()
    copy.rename(moved / "mine.ipynb")
    with running_kernel({**kernel_env, "JPY_SESSION_NAME": str(moved / "mine.ipynb")}, cwd=moved) as (_, kc):
        assert identify(kc, own_id) == {"notebook_id": own_id, "notices": []}
        execute(kc, "after the move")
    assert users_of(claude_echo)[-2:] == ["copy again", "after the move"]
    # What a listing (ACP's session/list) finds for each file: its own session.
    store = open_store(kernel_env["AGENTCELL_DB"])
    try:
        assert session_of_notebook(store, moved / "mine.ipynb") == _saved_session(moved / "mine.ipynb")
        assert session_of_notebook(store, daily) == _saved_session(daily)
        assert _saved_session(daily) != _saved_session(moved / "mine.ipynb")
    finally:
        store.close()


def _saved_session(path: Path) -> str:
    """The session of the first turn the saved notebook shows."""
    outputs = [o for cell in nbformat.read(path, as_version=4).cells for o in cell.get("outputs", [])]
    return str(outputs[0]["data"]["application/vnd.agentcell.turn+json"]["events"][0]["session_id"])


def test_a_copy_without_the_extension_forks_too(
    kernel_env: dict[str, str], tmp_path: Path, claude_echo: EchoServer
) -> None:
    daily = daily_notebook(kernel_env, tmp_path)
    copy = tmp_path / "copy.ipynb"
    shutil.copy(daily, copy)
    copy_env = {**kernel_env, "JPY_SESSION_NAME": str(copy)}
    with running_kernel(copy_env, kernel_name="python3", cwd=tmp_path) as (_, kc):
        assert execute(kc, "%load_ext agentcell").status == "ok"
        # Daily was renamed and not opened since: nothing tells the copy from the renamed file, and the first
        # of the two to run goes on with the session. The other forks when it runs.
        assert execute(kc, "%%agent\nthe copy's question").stdout == ""
    assert users_of(claude_echo) == ["daily one", "daily two", "the copy's question"]
    with running_kernel({**kernel_env, "JPY_SESSION_NAME": str(daily)}, kernel_name="python3", cwd=tmp_path) as (
        _,
        kc,
    ):
        assert execute(kc, "%load_ext agentcell").status == "ok"
        run = execute(kc, "%%agent\ndaily again")
        assert "agentcell: This notebook is a copy of copy.ipynb (or that one of this" in run.stdout  # told in the cell
    assert users_of(claude_echo) == ["daily one", "daily two", "daily again"]  # each has its own conversation
    with running_kernel(copy_env, kernel_name="python3", cwd=tmp_path) as (_, kc):
        assert execute(kc, "%load_ext agentcell").status == "ok"
        execute(kc, "%%agent\nthe copy again")
    assert users_of(claude_echo) == ["daily one", "daily two", "the copy's question", "the copy again"]


def _run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentcell.cli", "run", *args], check=False, capture_output=True, text=True, env=env
    )


def test_agentcell_run_on_a_copy_forks_and_never_takes_the_original_s_session(
    kernel_env: dict[str, str], tmp_path: Path, claude_echo: EchoServer
) -> None:
    daily = daily_notebook(kernel_env, tmp_path)
    copy = tmp_path / "daily-Copy1.ipynb"
    shutil.copy(daily, copy)
    with running_kernel({**kernel_env, "JPY_SESSION_NAME": str(daily)}, cwd=tmp_path) as (_, kc):
        identify(kc, DAILY_ID)  # daily opened since: the index knows where it is
        execute(kc, "daily three")
    nb = nbformat.read(copy, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("the copy's question", id="cell-2"))
    nbformat.write(nb, copy)
    env = {k: v for k, v in kernel_env.items() if k != "JPY_SESSION_NAME"}
    done = _run(str(copy), "--continue", "-o", str(tmp_path / "continued.ipynb"), env=env)
    assert done.returncode == 0, done.stderr
    assert "agentcell run: This notebook is a copy of daily.ipynb" in done.stderr
    # The run redoes the copy's cells (each replaces its turn) on a fork of what the copy shows: daily three,
    # which daily ran after the copy was made, is not in it.
    assert users_of(claude_echo) == ["daily one", "daily two", "the copy's question"]
    own_id = saved_id(tmp_path / "continued.ipynb")
    assert own_id not in (None, DAILY_ID)
    before = len(claude_echo.requests)
    again = _run(str(copy), "-o", str(tmp_path / "fresh.ipynb"), env=env)  # a fresh conversation of the copy's
    assert again.returncode == 0, again.stderr
    assert users_of(claude_echo, before) == ["daily one"]
    assert saved_id(tmp_path / "fresh.ipynb") == own_id
    with running_kernel({**kernel_env, "JPY_SESSION_NAME": str(daily)}, cwd=tmp_path) as (_, kc):
        assert identify(kc, DAILY_ID) == {"notebook_id": DAILY_ID, "notices": []}
        execute(kc, "daily four")
    assert users_of(claude_echo) == ["daily one", "daily two", "daily three", "daily four"]
