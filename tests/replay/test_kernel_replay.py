"""Record and replay in a real agentcell kernel: the mode it starts in, the magics, a notebook recorded and
then replayed after a restart with no provider at all, and the cell named when a request is not recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ..kernel.conftest import execute, running_kernel, write_script
from ._transcript import TURN_MIMETYPE, transcript

pytestmark = pytest.mark.slow

QUESTIONS = ["What is the population of Paris?", "And of Lyon?"]
SCRIPT = [
    {"steps": [{"kind": "thinking", "thinking": "I know this."}, {"kind": "text", "text": "About 2.1 million."}]},
    {"steps": [{"kind": "text", "text": "About 520,000."}]},
]


def turn(kc: Any, code: str, *, status: str = "ok") -> list[dict[str, Any]]:
    """Run a prose cell; the durable events of its turn, as its final display carries them."""
    run = execute(kc, code)
    assert run.status == status, run.reply
    return list(run.displays[-1][TURN_MIMETYPE]["events"])


def record_notebook(kernel_env: dict[str, str], tmp_path: Path) -> list[list[dict[str, Any]]]:
    script = tmp_path / "script.json"
    env = {**kernel_env, "AGENTCELL_MODEL": write_script(script, SCRIPT), "AGENTCELL_REPLAY": "record"}
    with running_kernel(env, cwd=tmp_path) as (_, kc):
        turns = [turn(kc, q) for q in QUESTIONS]
    script.unlink()  # from now on nothing could answer live
    return turns


def test_a_recorded_notebook_replays_after_a_restart_with_no_provider(
    kernel_env: dict[str, str], tmp_path: Path
) -> None:
    recorded = record_notebook(kernel_env, tmp_path)
    lines = (tmp_path / "notebook.agentcell.jsonl").read_text().splitlines()
    assert [json.loads(line)["cell"] for line in lines[1:]] == [{"number": 1, "id": None}, {"number": 2, "id": None}]

    kernel_env.pop("AGENTCELL_MODEL")  # a replayed notebook takes the model it was recorded with
    with running_kernel(kernel_env, cwd=tmp_path) as (_, kc):  # no key, a recording: auto
        assert "replay mode: auto" in execute(kc, "%replay status").stdout
        replayed = [turn(kc, q) for q in QUESTIONS]  # cells [2] and [3] now: cell numbers do not matter
        status = execute(kc, "%replay status").stdout
    assert [transcript(t) for t in replayed] == [transcript(t) for t in recorded]
    assert "(2 requests, 2 replayed); sent live: 0; not recorded: 0" in status
    # The restart began a new conversation, as a replay must; the recorded one stays in the store.
    assert recorded[0][0]["session_id"] != replayed[0][0]["session_id"]


def test_a_moved_notebook_brings_its_recording_along(kernel_env: dict[str, str], tmp_path: Path) -> None:
    metadata = {"agentcell": {"notebook_id": "6a1d4f0e-9b7c-4e1a-8f3d-2c5b7a9e0d14"}}
    (tmp_path / "notebook.ipynb").write_text(
        json.dumps({"cells": [], "metadata": metadata, "nbformat": 4, "nbformat_minor": 5})
    )
    recorded = record_notebook(kernel_env, tmp_path)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    moved = (tmp_path / "notebook.ipynb").rename(elsewhere / "paris.ipynb")  # the recording stays behind
    kernel_env.pop("AGENTCELL_MODEL")
    kernel_env["JPY_SESSION_NAME"] = str(moved)
    with running_kernel(kernel_env, cwd=elsewhere) as (_, kc):  # no key, and now a recording: auto
        assert "replay mode: auto" in execute(kc, "%replay status").stdout
        replayed = [turn(kc, q) for q in QUESTIONS]

    def said(turns: list[list[dict[str, Any]]]) -> list[Any]:  # the model's id names the folder it is run from
        return [[e["content"] for e in t if e["type"] == "agent.message"] for t in turns]

    assert said(replayed) == said(recorded) and "About 520,000." in str(said(replayed))
    assert (elsewhere / "paris.agentcell.jsonl").is_file()
    assert not (tmp_path / "notebook.agentcell.jsonl").exists()


def test_a_request_that_was_not_recorded_names_its_cell(kernel_env: dict[str, str], tmp_path: Path) -> None:
    record_notebook(kernel_env, tmp_path)
    kernel_env["AGENTCELL_REPLAY"] = "replay"
    kernel_env.pop("AGENTCELL_MODEL")
    with running_kernel(kernel_env, cwd=tmp_path) as (_, kc):
        assert turn(kc, QUESTIONS[0])[-1]["stop_reason"]["type"] == "end_turn"
        kc.session.metadata = {"cellId": "7f3c-edited"}  # as JupyterLab sends it with every execution
        events = turn(kc, "And of Marseille?", status="error")  # a turn that failed fails its cell
    [error] = [e["error"]["message"] for e in events if e["type"] == "session.error"]
    assert error.startswith("not recorded: cell [2] (id 7f3c-edited) “And of Marseille?”: notebook.agentcell.jsonl")
    assert "cell [2] “And of Lyon?”" in error  # the recorded cell it differs from
    assert not [e for e in events if e["type"] == "agent.message"]


def test_the_replay_magics(kernel_env: dict[str, str], tmp_path: Path) -> None:
    kernel_env["AGENTCELL_MODEL"] = write_script(tmp_path / "script.json", SCRIPT[:1])
    with running_kernel(kernel_env, cwd=tmp_path) as (_, kc):
        assert "replay mode: off" in execute(kc, "%replay status").stdout  # no recording yet
        assert "recording into notebook.agentcell.jsonl (new session" in execute(kc, "%record").stdout
        assert "About 2.1 million." in str(turn(kc, QUESTIONS[0]))
        shown = execute(kc, "%replay").stdout
        assert "replay mode replay: 1 recorded requests in notebook.agentcell.jsonl (new session" in shown
        assert "About 2.1 million." in str(turn(kc, QUESTIONS[0]))  # the script is spent: this is the recording
        assert "replay off" in execute(kc, "%replay off").stdout
        assert "You said: What is the population of Paris?" in str(turn(kc, QUESTIONS[0]))  # live: the echo
        assert "replay mode auto" in execute(kc, "%replay auto").stdout
        assert "%replay [auto | off | status]" in execute(kc, "%replay --help").stdout
        assert execute(kc, "%replay sometimes").status == "error"
    kernel_env.pop("JPY_SESSION_NAME")
    with running_kernel(kernel_env, cwd=tmp_path) as (_, kc):
        failed = execute(kc, "%record")
    assert failed.status == "error" and "runs no notebook" in failed.reply["evalue"]


def test_running_all_cells_twice_replays_twice_and_identically(kernel_env: dict[str, str], tmp_path: Path) -> None:
    recorded = record_notebook(kernel_env, tmp_path)
    kernel_env.pop("AGENTCELL_MODEL")
    cells = [("cell-paris", QUESTIONS[0]), ("cell-lyon", QUESTIONS[1])]
    with running_kernel(kernel_env, cwd=tmp_path) as (_, kc):  # no key, a recording: auto
        runs = []
        for _ in range(2):  # Run All, then Run All again: each cell re-runs under its own id
            runs.append([_turn_in_cell(kc, cell, question) for cell, question in cells])
        status = execute(kc, "%replay status").stdout

    def answers(turns: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
        return [[e for e in transcript(t) if e["type"].startswith("agent.")] for t in turns]

    assert answers(runs[0]) == answers(runs[1]) == answers(recorded)
    # Each turn says it was replayed (the turn bundle keeps it, so a saved notebook does too).
    assert all(
        [e.get("source") for e in t if e["type"] == "span.model_request_end"] == ["replay"] for run in runs for t in run
    )
    assert all(e.get("source") is None for t in recorded for e in t if e["type"] == "span.model_request_end")
    # Nothing went live (nothing could: the script is gone), nothing was missed.
    assert "(2 requests, 4 replayed); sent live: 0; not recorded: 0" in status


def _turn_in_cell(kc: Any, cell_id: str, code: str) -> list[dict[str, Any]]:
    run = execute(kc, code, cell_id=cell_id)
    assert run.status == "ok", run.reply
    return list(run.displays[-1][TURN_MIMETYPE]["events"])
