"""A copied notebook (the same id at two paths, both present) forks outside JupyterLab too, and a renamed one
keeps its session: the ``%%agent`` extension in a plain IPython kernel, and ``agentcell run``. Real kernels,
notebook files on disk, and the loopback Anthropic server's request log for what history the model got."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from .conftest import execute, running_kernel
from .echo_server import EchoServer
from .notebook_files import DAILY_ID, daily_notebook, saved_id, users_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]  # several kernels one after another


def _agent(kernel_env: dict[str, str], notebook: Path, *cells: str) -> list[str]:
    """Run ``cells`` with ``%%agent`` in a python3 kernel for ``notebook``; what each printed."""
    env = {**kernel_env, "JPY_SESSION_NAME": str(notebook)}
    with running_kernel(env, kernel_name="python3", cwd=notebook.parent) as (_, kc):
        assert execute(kc, "%load_ext agentcell").status == "ok"
        return [execute(kc, f"%%agent\n{cell}").stdout for cell in cells]


def test_the_agent_extension_keeps_a_renamed_notebook_s_session_and_forks_a_copy(
    kernel_env: dict[str, str], tmp_path: Path, claude_echo: EchoServer
) -> None:
    daily = daily_notebook(kernel_env, tmp_path)  # made in Lab as Untitled.ipynb, renamed to daily.ipynb
    assert _agent(kernel_env, daily, "daily three") == [""]
    assert users_of(claude_echo) == ["daily one", "daily two", "daily three"]  # the rename kept the session
    copy = tmp_path / "daily-Copy1.ipynb"
    shutil.copy(daily, copy)  # both carry daily's id; the copy shows daily one and two
    [said] = _agent(kernel_env, copy, "the copy's question")
    assert said.count("agentcell: This notebook is a copy of daily.ipynb") == 1
    assert users_of(claude_echo) == ["daily one", "daily two", "the copy's question"]
    assert _agent(kernel_env, daily, "daily four") == [""]
    assert users_of(claude_echo) == ["daily one", "daily two", "daily three", "daily four"]
    # The copy's file still carries daily's id (the extension never rewrites it): it finds its own fork again.
    assert saved_id(copy) == DAILY_ID
    assert _agent(kernel_env, copy, "the copy again") == [""]
    assert users_of(claude_echo) == ["daily one", "daily two", "the copy's question", "the copy again"]


def _run(notebook: Path, out: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "agentcell.cli", "run", str(notebook), "--continue", "-o", str(out)]
    return subprocess.run(command, check=False, capture_output=True, text=True, env=env)


def _sessions(path: Path) -> set[str]:
    """The sessions of the turns the saved notebook shows."""
    outputs = [o for cell in nbformat.read(path, as_version=4).cells for o in cell.get("outputs", [])]
    turns = [o["data"]["application/vnd.agentcell.turn+json"] for o in outputs if "data" in o]
    return {str(event["session_id"]) for turn in turns for event in turn["events"]}


def test_agentcell_run_keeps_a_moved_notebook_s_session_and_forks_its_copy(
    kernel_env: dict[str, str], tmp_path: Path, claude_echo: EchoServer
) -> None:
    daily = daily_notebook(kernel_env, tmp_path)
    [session] = _sessions(daily)
    env = {k: v for k, v in kernel_env.items() if k != "JPY_SESSION_NAME"}
    moved = tmp_path / "sub" / "moved.ipynb"
    moved.parent.mkdir()
    daily.rename(moved)
    done = _run(moved, tmp_path / "moved-run.ipynb", env)
    assert done.returncode == 0, done.stderr
    assert "agentcell run:" not in done.stderr
    assert _sessions(tmp_path / "moved-run.ipynb") == {session}  # the move kept the session
    assert saved_id(tmp_path / "moved-run.ipynb") == DAILY_ID
    copy = tmp_path / "sub" / "copy.ipynb"
    shutil.copy(moved, copy)
    nb = nbformat.read(copy, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("the copy's question", id="cell-2"))
    nbformat.write(nb, copy)
    done = _run(copy, tmp_path / "copy-run.ipynb", env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("agentcell run: This notebook is a copy of") == 1
    [forked] = _sessions(tmp_path / "copy-run.ipynb")
    assert forked != session
    assert saved_id(tmp_path / "copy-run.ipynb") not in (None, DAILY_ID)
    assert users_of(claude_echo) == ["daily one", "daily two", "the copy's question"]
    # The original goes on in its own session: none of the copy's turns reach its model.
    nb = nbformat.read(moved, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("daily three", id="cell-2"))
    nbformat.write(nb, moved)
    done = _run(moved, tmp_path / "moved-again.ipynb", env)
    assert done.returncode == 0, done.stderr
    assert "agentcell run:" not in done.stderr
    assert _sessions(tmp_path / "moved-again.ipynb") == {session}
    assert users_of(claude_echo) == ["daily one", "daily two", "daily three"]
