"""`agentcell run` and the agent's proposed cells: listed, never applied, by default; with --accept-cells a
new cell goes in below its turn and runs, an edit replaces its cell's source, and each answer is in the
session's log for the next request."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.slow

INSERT = {"action": "insert", "source": "y = x * 2\nprint('y is', y)", "note": "double it"}
EDIT = {"action": "edit", "cell_id": "setup", "source": "x = 3"}


def _notebook(path: Path, script: Path) -> Path:
    script.write_text(
        json.dumps([
            {"steps": [{"kind": "tool_call", "name": "notebook_edit", "input": INSERT}]},
            {"steps": [{"kind": "tool_call", "name": "notebook_edit", "input": EDIT}]},
            {"steps": [{"kind": "text", "text": "Proposed two changes."}]},
            {"steps": [{"kind": "text", "text": "Noted."}]},
        ])
    )  # fmt: skip
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "agentcell", "display_name": "Agent (agentcell)", "language": "markdown"}
    sources = {
        "config": "%context on",  # the default; proposing cells is on by default too, with no %config
        "setup": "%%python\nx = 2",
        "ask": "Double x, and make x three.",
        "after": "What now?",
    }
    nb.cells = [nbformat.v4.new_code_cell(source, id=cell_id) for cell_id, source in sources.items()]
    nbformat.write(nb, path)
    return path


def _run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentcell.cli", *args],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _answers(db: str) -> list[dict[str, object]]:
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT body FROM events WHERE type = 'user.cell_proposal_resolved' ORDER BY seq").fetchall()
    conn.close()
    return [json.loads(body) for (body,) in rows]


def test_run_lists_proposals_and_applies_them_only_when_asked(kernel_env: dict[str, str], tmp_path: Path) -> None:
    kernel_env.pop("JPY_SESSION_NAME")
    nb = _notebook(tmp_path / "propose.ipynb", tmp_path / "s.json")
    model = f"scripted:{tmp_path / 's.json'}"
    listed = _run("run", str(nb), "-o", str(tmp_path / "listed.ipynb"), "--model", model, env=kernel_env)
    assert listed.returncode == 0, listed.stderr
    assert "📝 proposal 1: insert a new cell: y = x * 2 print('y is', y)" in listed.stdout
    assert "📝 proposal 2: edit cell setup: x = 3" in listed.stdout
    assert "the agent proposed cells (1, 2); none was applied. Run with --accept-cells" in listed.stderr
    untouched = nbformat.read(tmp_path / "listed.ipynb", as_version=4)
    assert [c.id for c in untouched.cells] == ["config", "setup", "ask", "after"]
    assert untouched.cells[1].source == "%%python\nx = 2"
    assert _answers(kernel_env["AGENTCELL_DB"]) == []

    out = tmp_path / "applied.ipynb"
    applied = _run("run", str(nb), "-o", str(out), "--model", model, "--accept-cells", env=kernel_env)
    assert applied.returncode == 0, applied.stderr
    assert "📝 proposal 1: accepted\n" in applied.stderr and "📝 proposal 2: accepted\n" in applied.stderr
    executed = nbformat.read(out, as_version=4)
    ids = [c.id for c in executed.cells]
    assert ids[:3] == ["config", "setup", "ask"] and ids[-1] == "after" and len(ids) == 5
    new = executed.cells[3]
    assert new.source == "%%python\ny = x * 2\nprint('y is', y)"
    assert "y is 4" in "".join(o.get("text", "") for o in new.outputs)  # it ran, in its turn
    assert executed.cells[1].source == "%%python\nx = 3"  # the edit: the cell's source replaced
    answers = _answers(kernel_env["AGENTCELL_DB"])
    assert [(a["number"], a["outcome"], a.get("cell_id")) for a in answers] == [
        (1, "accepted", new.id),
        (2, "accepted", "setup"),
    ]
