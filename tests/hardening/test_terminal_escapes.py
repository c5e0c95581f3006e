"""Terminal escapes: model text and tool calls carrying escape sequences never reach the terminal as orders.

``agentcell run`` executes a notebook whose model answers with an OSC 52 clipboard write, a screen clear, a
window title, a carriage return and C1 controls (streamed in small deltas, so a sequence is split across
them), after a tool call whose input holds the same; then ``agentcell follow --all`` prints the session
from the store. Neither output holds an ESC, a BEL, a carriage return or a C1 control, and both still
show the text around them.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from .kernel_session import kernel_environment

pytestmark = pytest.mark.slow

HOSTILE = "\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\x1b]0;owned\x07\rhidden\x9b31m\x90q\x9c"
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentcell.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def test_run_and_follow_print_no_escape_sequence(tmp_path: Path) -> None:
    script = tmp_path / "hostile.json"
    tool = {"kind": "tool_call", "name": "no_such_tool", "input": {"note": f"before {HOSTILE} after"}}
    text = {"kind": "text", "text": f"Start. {HOSTILE} End.", "chunk_size": 3}
    script.write_text(json.dumps([{"steps": [tool]}, {"steps": [text]}]))
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "agentcell", "display_name": "agentcell", "language": "markdown"}
    notebook.cells = [nbformat.v4.new_code_cell("Say something.")]
    nbformat.write(notebook, tmp_path / "hostile.ipynb")
    env = kernel_environment(tmp_path)
    env.pop("JPY_SESSION_NAME")

    run = _cli("run", str(tmp_path / "hostile.ipynb"), "--model", f"scripted:{script}", env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "Start." in run.stdout and "End." in run.stdout and "no_such_tool" in run.stdout
    assert not CONTROLS.search(run.stdout.replace("\n", "")), repr(run.stdout)

    conn = sqlite3.connect(env["AGENTCELL_DB"])
    (session_id,) = conn.execute("SELECT id FROM sessions ORDER BY created_at DESC LIMIT 1").fetchone()
    conn.close()
    follow = _cli("follow", session_id, "--all", "--until-idle", env=env, cwd=tmp_path)
    assert follow.returncode == 0, follow.stderr
    assert "Start." in follow.stdout and "End." in follow.stdout
    assert not CONTROLS.search(follow.stdout.replace("\n", "")), repr(follow.stdout)
