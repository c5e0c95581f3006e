"""Binder's build and launch, reproduced without Docker: every gallery notebook runs with no key and no
reachable provider, and every turn gives the recorded transcript.

Like repo2docker, the test copies the repository, makes a fresh virtual environment, runs
``pip install -r binder/requirements.txt`` from the copy's root and then ``binder/postBuild``. (Unlike it, pip
keeps its cache: llama-cpp-python compiles from source once, and its wheel is reused.) Each notebook is then
executed through nbclient on the installed kernel, with no API key in the environment and every provider URL
pointing at a closed port, in a fresh database: what Binder's JupyterLab does.

"The same transcript" (see ``_transcript.py``): for every cell, the model responses of its turn (content
blocks, usage, list cost, stop reason) equal the recorded responses of that cell, in order; every request
was answered from the recording (``%replay status``: nothing live, nothing missed), which also means that
everything the model was sent, tool results included, matched the recording.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

from ._transcript import model_responses, recorded_responses, turn_events

REPO = Path(__file__).parents[2]

pytestmark = pytest.mark.slow


def _unordered(by_cell: dict[int | None, list[dict[str, Any]]]) -> dict[int | None, list[str]]:
    return {cell: sorted(json.dumps(r, sort_keys=True) for r in responses) for cell, responses in by_cell.items()}


def _copy_repository(destination: Path) -> None:
    """The files git knows of (tracked, or new and not ignored), as repo2docker copies a repository."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # nothing listens there once the socket is closed


def _sh(command: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> None:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


@pytest.mark.timeout(900)
def test_binder_build_then_every_notebook_replays_its_recording_with_no_key(tmp_path: Path) -> None:
    repo, venv, out = tmp_path / "repo", tmp_path / "venv", tmp_path / "executed"
    for folder in (repo, out, tmp_path / "jupyter"):
        folder.mkdir()
    _copy_repository(repo)
    notebooks = sorted((repo / "notebooks").glob("*.ipynb"))
    gallery = (
        "quickstart",
        "tools_and_approvals",
        "budget_and_cost",
        "outcomes",
        "threads",
        "mcp",
        "skills",
        "workflows",
    )
    assert {p.name for p in notebooks} >= {f"{name}.ipynb" for name in gallery}

    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "AGENTCELL_", "JUPYTER", "JPY_"))
    }
    base.pop("VIRTUAL_ENV", None)
    base.pop("PYTHONPATH", None)
    env = {
        **base,
        "PATH": f"{venv / 'bin'}:{base.get('PATH', '/usr/bin:/bin')}",
        "CMAKE_ARGS": "-DGGML_NATIVE=OFF",  # a portable build, as `make` does (and so the same cached wheel)
        "JUPYTER_DATA_DIR": str(tmp_path / "jupyter"),  # no kernelspec of the developer's in the way
    }
    _sh([sys.executable, "-m", "venv", str(venv)], cwd=repo, env=env, timeout=120)
    _sh([str(venv / "bin/pip"), "install", "--quiet", "-r", "binder/requirements.txt"], cwd=repo, env=env, timeout=720)
    _sh(["bash", "binder/postBuild"], cwd=repo, env=env, timeout=120)
    assert (venv / "share/jupyter/kernels/agentcell/kernel.json").is_file()

    closed = f"http://127.0.0.1:{_closed_port()}"
    launch = {
        **env,
        "ANTHROPIC_BASE_URL": closed,
        "OPENAI_BASE_URL": f"{closed}/v1",
        "AGENTCELL_DB": str(tmp_path / "binder.db"),
    }
    runner = repo / "tests/replay/_execute_notebooks.py"
    _sh([str(venv / "bin/python"), str(runner), str(out), *map(str, notebooks)], cwd=repo, env=launch, timeout=600)

    for path in notebooks:
        executed = nbformat.read(out / path.name, as_version=4)
        code = [c for c in executed.cells if c.cell_type == "code"]
        errors = [o for c in code for o in c.outputs if o.output_type == "error"]
        assert not errors, f"{path.name}: {errors}"
        recorded = recorded_responses(path.with_name(f"{path.stem}.agentcell.jsonl"))
        replayed = {c.execution_count: [r for t in turn_events(c) for r in model_responses(t)] for c in code}
        replayed = {number: responses for number, responses in replayed.items() if responses}
        # A thread's requests run beside its coordinator's, so which of two such requests ends first (and
        # comes first in the recording or in the cell) is a race: compare each cell's responses as a set.
        assert _unordered(replayed) == _unordered(recorded), path.name
        status = code[-1].outputs[0]["text"]
        total = sum(len(r) for r in recorded.values())
        assert f"replay mode: auto; recording: {path.with_name(path.stem + '.agentcell.jsonl')}" in status
        assert f"({total} requests, {total} replayed); sent live: 0; not recorded: 0" in status, status
