"""`agentcell run` executes a notebook headless on the kernel; `agentcell install` registers the kernelspec."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from agentcell.kernel.kernelspec import kernel_json
from agentcell.kernel.notebook_id import notebook_user

from .conftest import shown_markdown

pytestmark = pytest.mark.slow


def _notebook(path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "agentcell",
        "display_name": "Agent (agentcell)",
        "language": "markdown",
    }
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
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


def test_run_executes_every_cell_and_writes_the_notebook(kernel_env: dict[str, str], tmp_path: Path) -> None:
    nb = _notebook(tmp_path / "study.ipynb", "What is in the data?", "%%python\nrows = [1, 2, 3]\nlen(rows)", "%usage")
    out = tmp_path / "done.ipynb"
    kernel_env.pop("JPY_SESSION_NAME")
    result = _run("run", str(nb), "-o", str(out), "--model", "scripted", env=kernel_env)
    assert result.returncode == 0, result.stderr
    assert "[1/3] What is in the data?" in result.stderr and "[3/3] %usage" in result.stderr
    assert "You said: What is in the data?" in result.stdout  # the answer, in the terminal
    assert f"open it with: jupyter lab {out}" in result.stderr
    assert "TCP" not in result.stderr  # the kernel's transport warning is not the user's business
    executed = nbformat.read(out, as_version=4)
    assert "widgets" not in executed.metadata  # finished turns are bundles: no widget state to carry
    first = executed.cells[0].outputs[-1]["data"]
    assert shown_markdown(first).startswith("You said: What is in the data?")
    assert "application/vnd.agentcell.turn+json" in first
    assert executed.cells[1].outputs[0]["data"]["text/plain"] == "3"
    assert "input tokens" in executed.cells[2].outputs[0]["data"]["text/markdown"]
    conn = sqlite3.connect(kernel_env["AGENTCELL_DB"])
    path_key = f"notebook-path:{notebook_user()}\n{nb}"  # a notebook without an id: its user's, by its path
    mapped = conn.execute("SELECT value FROM kv WHERE key = ?", (path_key,)).fetchone()
    conn.close()
    assert mapped is not None  # the notebook's session is remembered by its path

    again = _run("run", str(nb), "-o", str(out), "--model", "scripted", env=kernel_env)
    assert again.returncode == 0
    conn = sqlite3.connect(kernel_env["AGENTCELL_DB"])
    remapped = conn.execute("SELECT value FROM kv WHERE key = ?", (path_key,)).fetchone()
    conn.close()
    assert remapped != mapped  # a headless re-run starts a fresh conversation


def test_run_prints_one_line_per_tool_call_as_the_turn_streams(kernel_env: dict[str, str], tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(
        json.dumps(
            [
                {"steps": [{"kind": "tool_call", "name": "python", "input": {"code": "print(6 * 7)"}}]},
                {"steps": [{"kind": "text", "text": "The answer is 42.", "chunk_size": 4}]},
            ]
        )
    )
    nb = _notebook(tmp_path / "tool.ipynb", "Compute six times seven.")
    kernel_env.pop("JPY_SESSION_NAME")
    result = _run("run", str(nb), "--model", f"scripted:{script}", env=kernel_env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "  ⚙ python print(6 * 7) — done\nThe answer is 42.\n"


def test_run_refuses_the_python_tool_it_cannot_ask_about_and_says_how_to_allow_it(
    kernel_env: dict[str, str], tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    script = tmp_path / "s.json"
    call = {"kind": "tool_call", "name": "python", "input": {"code": f"open({str(marker)!r}, 'w')"}}
    script.write_text(json.dumps([{"steps": [call]}, {"steps": [{"kind": "text", "text": "Not run."}]}]))
    nb = _notebook(tmp_path / "tool.ipynb", "Touch the marker.")
    kernel_env.pop("JPY_SESSION_NAME")
    del kernel_env["AGENTCELL_PYTHON_TOOL"]  # the default: the python tool asks, and nobody can answer here
    refused = _run("run", str(nb), "--model", f"scripted:{script}", env=kernel_env)
    assert refused.returncode == 0, refused.stderr
    first = refused.stdout.splitlines()[0]
    assert first.startswith("  ⚙ python open(") and first.endswith(
        "— refused: it needs your approval, and nobody can answer in this run (AGENTCELL_PYTHON_TOOL=allow lets "
        "the python tool run unasked)"
    ), refused.stdout
    assert not marker.exists()
    executed = nbformat.read(tmp_path / "tool.executed.ipynb", as_version=4)
    said = json.dumps(executed.cells[0].outputs[-1]["data"])
    assert "no notebook view could answer" in said and 'AgentCell.python_tool = \\"allow\\"' in said, said
    allowed = _run(
        "run", str(nb), "--model", f"scripted:{script}", env={**kernel_env, "AGENTCELL_PYTHON_TOOL": "allow"}
    )
    assert allowed.returncode == 0, allowed.stderr
    assert marker.exists(), "the user's AGENTCELL_PYTHON_TOOL=allow let it run unasked"


def test_run_reports_a_failing_cell_and_still_writes(kernel_env: dict[str, str], tmp_path: Path) -> None:
    nb = _notebook(tmp_path / "bad.ipynb", "%%python\n1 / 0", "never reached")
    result = _run("run", str(nb), "--model", "scripted", env=kernel_env)
    assert result.returncode == 1
    assert "ZeroDivisionError" in result.stderr
    assert (tmp_path / "bad.executed.ipynb").exists()
    missing = _run("run", str(tmp_path / "nope.ipynb"), env=kernel_env)
    assert missing.returncode == 2 and "no notebook at" in missing.stderr


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"{}", "missing a key: cells"),
        (b"print('a script, not a notebook')", "does not appear to be JSON"),
        (b"\xff\xfe", "can't decode"),
    ],
)
def test_run_refuses_an_unreadable_notebook_in_one_line(
    kernel_env: dict[str, str], tmp_path: Path, content: bytes, reason: str
) -> None:
    (tmp_path / "broken.ipynb").write_bytes(content)
    result = _run("run", str(tmp_path / "broken.ipynb"), env=kernel_env)
    assert result.returncode == 2
    assert "broken.ipynb is not a readable notebook (nbformat 4): " in result.stderr and reason in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "broken.executed.ipynb").exists()


def test_run_says_how_to_register_a_missing_kernelspec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    from agentcell.cli import main

    def missing(self: KernelSpecManager, name: str) -> None:
        raise NoSuchKernel(name)

    monkeypatch.setattr(KernelSpecManager, "get_kernel_spec", missing)
    nb = _notebook(tmp_path / "fine.ipynb", "hello")
    assert main(["run", str(nb)]) == 2
    assert "agentcell install --sys-prefix" in capsys.readouterr().err
    assert not (tmp_path / "fine.executed.ipynb").exists()


def test_install_writes_the_kernelspec(kernel_env: dict[str, str], tmp_path: Path) -> None:
    result = _run("install", "--prefix", str(tmp_path / "prefix"), env=kernel_env)
    assert result.returncode == 0, result.stderr
    spec = json.loads((tmp_path / "prefix/share/jupyter/kernels/agentcell/kernel.json").read_text())
    assert spec == kernel_json(sys.executable)
    assert spec["display_name"] == "Agent (agentcell)"


def test_the_wheel_kernelspec_is_registered_by_pip_install() -> None:
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("agentcell")
    assert spec.display_name == "Agent (agentcell)"
    assert spec.argv[1:3] == ["-m", "agentcell.kernel"]
    assert spec.resource_dir.startswith(sys.prefix) or os.environ.get("JUPYTER_PATH")


def test_the_kernel_runs_on_the_ipykernel_of_this_environment(kernel_env: dict[str, str]) -> None:
    import ipykernel

    from .conftest import execute, running_kernel

    with running_kernel(kernel_env) as (_, kc):
        shown = execute(kc, "%%python\nimport ipykernel\nipykernel.__version__")
    assert shown.displays[0]["text/plain"] == repr(ipykernel.__version__)


def test_html_flag_before_the_notebook_writes_a_page_beside_it(kernel_env: dict[str, str], tmp_path: Path) -> None:
    nb = _notebook(tmp_path / "page.ipynb", "Hello")
    done = _run("run", "--html", str(nb), env=kernel_env)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "page.executed.html").read_text().startswith("<!DOCTYPE html>")
    assert nbformat.read(nb, as_version=4).cells[0].outputs == []  # the notebook itself is untouched
