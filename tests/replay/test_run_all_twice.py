"""Run All, then Run All again in the same kernel, on every gallery notebook with no key: both runs replay
from the notebook's recording (nothing goes live, nothing is missed) and show the same turns.

This is what a user does on Binder: the second Run All re-runs every cell under its own id, so each turn
replaces its earlier one, and the replayed spend of the turns it replaces leaves the session's ledger (no
money was spent on them), so the budget and the costs read as in the first run.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agentcell.kernel.headless import CellIdNotebookClient

from .gallery_outputs import GALLERY, TURN_MIMETYPE, normalized

pytestmark = pytest.mark.slow

NOTEBOOKS = sorted(p.name for p in GALLERY.glob("*.ipynb") if not p.name.endswith(".executed.ipynb"))
_AGENT_VERSION = re.compile(r"\(agent v\d+\)|\"agent_version\": \d+")
_STATUS = re.compile(r"\((\d+) requests, (\d+) replayed\); sent live: (\d+); not recorded: (\d+)")


def test_every_gallery_notebook_is_covered() -> None:
    assert len(NOTEBOOKS) >= 8 and "budget_and_cost.ipynb" in NOTEBOOKS and "quickstart.ipynb" in NOTEBOOKS


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_run_all_twice_replays_twice_and_shows_the_same_turns(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "notebooks"
    shutil.copytree(GALLERY, folder, ignore=shutil.ignore_patterns("*.executed.ipynb"))
    for key in list(os.environ):
        if key.startswith(("ANTHROPIC_", "OPENAI_", "AGENTCELL_", "JPY_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("AGENTCELL_DB", str(tmp_path / "agentcell.db"))
    monkeypatch.setenv("JPY_SESSION_NAME", str(folder / name))  # as the server tells the kernel its notebook
    nb = nbformat.read(folder / name, as_version=4)
    runs, status = asyncio.run(_run_all_twice(nb, folder))

    requests, replayed, live, missed = (int(n) for n in _STATUS.search(status).groups())  # type: ignore[union-attr]
    assert (live, missed) == (0, 0), status
    sources = [cell.source for cell in nb.cells]
    workflows = [i for i, source in enumerate(sources) if source.startswith("%%workflow")]
    # A workflow's journaled steps are reused when the same plan runs again in the session (the notebook
    # says so): the second run sends its workflows nothing, from the recording or live.
    assert replayed == (1 if workflows else 2) * requests > 0, status
    first, second = (_seen(run) for run in runs)
    assert len(first) == len(second)
    for index, (was, now) in enumerate(zip(first, second, strict=True)):
        if sources[index].startswith(("%threads", "%workflows")):
            # The session's threads and runs: the second run's are listed beside the first's.
            was_lines, now_lines = _lines(was), _lines(now)
            assert set(was_lines[1:]) <= set(now_lines[1:]) and len(now_lines) > len(was_lines), sources[index]
        elif workflows and sources[index].startswith("%usage"):
            # The first run's replayed spend left with its turns, and reused steps spend nothing.
            assert re.search(r"input tokens\s+0\n", _text(now)) and re.search(r"input tokens\s+[1-9]", _text(was))
        elif index in workflows:
            assert any("0 step items ran" in line for line in _lines(now)), sources[index]
            assert _workflow_output(now) == _workflow_output(was) != [], sources[index]
        else:
            assert was == now, sources[index]
    turns = [o for cell in runs[1]["cells"] for o in cell.get("outputs", []) if TURN_MIMETYPE in o.get("data", {})]
    assert turns and all(_replayed(turn) for turn in turns), name
    # The first run is the notebook as committed (a fresh replay by `agentcell run`).
    committed = json.loads((GALLERY / name).read_text(encoding="utf-8"))
    assert _seen(committed) == first


async def _run_all_twice(nb: Any, folder: Path) -> tuple[list[Any], str]:
    client = CellIdNotebookClient(
        nb, kernel_name="agentcell", timeout=300, resources={"metadata": {"path": str(folder)}}
    )
    runs = []
    async with client.async_setup_kernel():
        for _ in range(2):
            for index, cell in enumerate(nb.cells):
                if cell.cell_type == "code":
                    # nbclient keeps the indices of a re-run cell's cleared outputs under their display ids
                    # (and fails when an update names one); JupyterLab drops them with the outputs.
                    for cells in client._display_id_map.values():
                        cells.pop(index, None)
                    await client.async_execute_cell(cell, index)
            runs.append(copy.deepcopy(nb))
        nb.cells.append(nbformat.v4.new_code_cell("%replay status"))
        await client.async_execute_cell(nb.cells[-1], len(nb.cells) - 1)
    return runs, "".join(o.get("text", "") for o in nb.cells[-1].outputs)


def _seen(nb: Any) -> list[list[Any]]:
    """The outputs as the notebook shows them. Left out: the agent's version counter (each `%model` or
    `%tools` of the second run makes a new version, as any change does) and, in a re-run turn's saved
    log, what precedes its opening (the turns it replaced leaving the conversation, and the ledger without
    their replayed spend): the second run's own bookkeeping, not its turns."""
    cells = normalized({"cells": [_without_rerun_bookkeeping(cell) for cell in nb["cells"]]})
    return json.loads(
        _AGENT_VERSION.sub(lambda m: "(agent v_)" if m[0][0] == "(" else '"agent_version": 0', json.dumps(cells))
    )


def _without_rerun_bookkeeping(cell: Any) -> Any:
    cell = copy.deepcopy(dict(cell))
    cell["outputs"] = [dict(o) for o in cell.get("outputs", [])]
    for output in cell["outputs"]:
        bundle = output.get("data", {}).get(TURN_MIMETYPE)
        if bundle is None:
            continue
        events = bundle["events"]
        opening = next((i for i, e in enumerate(events) if e.get("type", "").startswith("user.")), 0)
        output["data"] = {**output["data"], TURN_MIMETYPE: {**bundle, "events": events[opening:]}}
    return cell


def _lines(outputs: list[dict[str, Any]]) -> list[str]:
    """The text a cell's outputs show (its plain-text views and streams), line by line."""
    texts = [o["text"] or o["data"].get("text/plain", "") for o in outputs]
    return "\n".join(t for t in texts if isinstance(t, str)).splitlines()


def _text(outputs: list[dict[str, Any]]) -> str:
    return "\n".join(_lines(outputs)) + "\n"


def _workflow_output(outputs: list[dict[str, Any]]) -> list[str]:
    return [line for line in _lines(outputs) if line.startswith("output:")]


def _replayed(output: dict[str, Any]) -> bool:
    sources = {
        e.get("source") for e in output["data"][TURN_MIMETYPE]["events"] if e["type"] == "span.model_request_end"
    }
    return sources <= {"replay"}
