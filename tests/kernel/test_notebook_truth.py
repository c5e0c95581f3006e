"""The notebook is the truth: when the store has lost a notebook's conversation (the database deleted, or
moved without it) or lags behind it (restored from an older copy), the model sees what the notebook shows,
rebuilt from its saved turns into a new session, and the user is told once. Real kernels, notebook files on
disk, and the loopback Anthropic server's request log for what history the model got."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from .conftest import execute, running_kernel
from .echo_server import EchoServer
from .notebook_files import DAILY_ID, add_turn, daily_notebook, identify, users_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]  # several kernels one after another

LONG = "daily three, at length:" + " word" * 600  # longer than a saved turn's preview of its prompt


def _database_files(db: Path) -> list[Path]:
    return [p for p in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")) if p.exists()]


def test_a_deleted_store_is_rebuilt_from_the_notebook_once(
    kernel_env: dict[str, str], tmp_path: Path, claude_echo: EchoServer
) -> None:
    daily = daily_notebook(kernel_env, tmp_path)
    for path in _database_files(Path(kernel_env["AGENTCELL_DB"])):
        path.unlink()
    env = {**kernel_env, "JPY_SESSION_NAME": str(daily)}
    with running_kernel(env, cwd=tmp_path) as (_, kc):
        answer = identify(kc, DAILY_ID)
        assert answer["notebook_id"] == DAILY_ID
        assert len(answer["notices"]) == 1
        assert "has no conversation of this notebook" in answer["notices"][0]
        assert "its 2 turns are rebuilt" in answer["notices"][0]
        first = execute(kc, "daily three", cell_id="cell-2")
        # The front end was told (a notification); the first turn's output says it too, and stays saved.
        assert first.stdout.count("agentcell: The store has no conversation of this notebook") == 1
        assert users_of(claude_echo) == ["daily one", "daily two", "daily three"]
        rerun = execute(kc, "daily two, again", cell_id="cell-1")  # the rebuilt turns keep their cells
        assert rerun.status == "ok" and "agentcell:" not in rerun.stdout  # told once
        assert users_of(claude_echo) == ["daily one", "daily two, again"]
    with running_kernel(env, cwd=tmp_path) as (_, kc):  # told once: the rebuilt session is the notebook's now
        assert identify(kc, DAILY_ID) == {"notebook_id": DAILY_ID, "notices": []}
        execute(kc, "daily four", cell_id="cell-3")
    assert users_of(claude_echo) == ["daily one", "daily two, again", "daily four"]


def test_a_moved_store_without_the_notebook_s_session_is_rebuilt_from_the_notebook(
    kernel_env: dict[str, str], tmp_path: Path, claude_echo: EchoServer
) -> None:
    daily = daily_notebook(kernel_env, tmp_path)
    conn = sqlite3.connect(tmp_path / "kernel.db")
    rows = conn.execute("SELECT key, value FROM kv WHERE key LIKE 'notebook-id:%'").fetchall()
    conn.close()
    # The index row came along (a database copied without its sessions): the index names a session the
    # store does not have.
    kernel_env["AGENTCELL_DB"] = str(tmp_path / "moved.db")
    with running_kernel({**kernel_env, "JPY_SESSION_NAME": str(tmp_path / "probe.ipynb")}, cwd=tmp_path) as (_, kc):
        assert execute(kc, f"%%python\n__agentcell__.engine.store.set_value(*{tuple(rows[0])!r})").status == "ok"
    with running_kernel({**kernel_env, "JPY_SESSION_NAME": str(daily)}, cwd=tmp_path) as (_, kc):
        answer = identify(kc, DAILY_ID)
        assert answer["notebook_id"] == DAILY_ID
        assert len(answer["notices"]) == 1
        assert "session" in answer["notices"][0] and "is not in the store" in answer["notices"][0]
        assert "moved.db" in answer["notices"][0] and "its 2 turns are rebuilt" in answer["notices"][0]
        execute(kc, "after the move")
    assert users_of(claude_echo) == ["daily one", "daily two", "after the move"]


def test_a_store_that_lags_behind_the_notebook_is_caught_up_from_it(
    kernel_env: dict[str, str], tmp_path: Path, claude_echo: EchoServer
) -> None:
    daily = daily_notebook(kernel_env, tmp_path)
    db = Path(kernel_env["AGENTCELL_DB"])
    backup = tmp_path / "backup"
    backup.mkdir()
    for path in _database_files(db):  # no kernel has it open: the files are the database
        shutil.copy(path, backup / path.name)
    env = {**kernel_env, "JPY_SESSION_NAME": str(daily)}
    with running_kernel(env, cwd=tmp_path) as (_, kc):
        identify(kc, DAILY_ID)
        add_turn(daily, LONG, execute(kc, LONG, cell_id="cell-2"), "cell-2")
    for path in _database_files(db):
        path.unlink()
    for path in backup.iterdir():  # restored from the copy made before daily three
        shutil.copy(path, tmp_path / path.name)
    with running_kernel(env, cwd=tmp_path) as (_, kc):
        answer = identify(kc, DAILY_ID)
        assert len(answer["notices"]) == 1
        assert "lacks turns of session" in answer["notices"][0] and "its 3 turns are rebuilt" in answer["notices"][0]
        execute(kc, "daily four", cell_id="cell-3")
    # The long prompt comes back whole from its cell (the saved turn shows a preview of it).
    assert users_of(claude_echo) == ["daily one", "daily two", LONG, "daily four"]


def test_the_agent_extension_says_so_in_the_first_turn_s_output(
    kernel_env: dict[str, str], tmp_path: Path, claude_echo: EchoServer
) -> None:
    daily = daily_notebook(kernel_env, tmp_path)
    kernel_env["AGENTCELL_DB"] = str(tmp_path / "elsewhere.db")
    with running_kernel({**kernel_env, "JPY_SESSION_NAME": str(daily)}, kernel_name="python3", cwd=tmp_path) as (
        _,
        kc,
    ):
        assert execute(kc, "%load_ext agentcell").status == "ok"
        first = execute(kc, "%%agent\ndaily three")
        assert first.stdout.count("agentcell: The store has no conversation of this notebook") == 1
        assert users_of(claude_echo) == ["daily one", "daily two", "daily three"]
        assert "agentcell:" not in execute(kc, "%%agent\ndaily four").stdout  # told once
    assert users_of(claude_echo) == ["daily one", "daily two", "daily three", "daily four"]


def test_agentcell_run_continue_rebuilds_and_says_so_on_stderr(
    kernel_env: dict[str, str], tmp_path: Path, claude_echo: EchoServer
) -> None:
    daily = daily_notebook(kernel_env, tmp_path)
    kernel_env["AGENTCELL_DB"] = str(tmp_path / "elsewhere.db")
    nb = nbformat.read(daily, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("daily three", id="cell-2"))
    nbformat.write(nb, daily)
    env = {k: v for k, v in kernel_env.items() if k != "JPY_SESSION_NAME"}
    before = len(claude_echo.requests)
    done = subprocess.run(
        [sys.executable, "-m", "agentcell.cli", "run", str(daily), "--continue", "-o", str(tmp_path / "out.ipynb")],
        check=False,
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("agentcell run: The store has no conversation of this notebook") == 1
    # --continue redoes each cell on the rebuilt conversation: each cell's run replaces its rebuilt turn (the
    # turns keep their cells), so nothing is sent twice.
    assert [users_of(claude_echo, i) for i in range(before, len(claude_echo.requests))] == [
        ["daily one"],
        ["daily one", "daily two"],
        ["daily one", "daily two", "daily three"],
    ]
