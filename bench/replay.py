"""Replaying a 20-turn notebook end to end through nbclient, against plain ipykernel running 20 trivial cells.

Target (issue 7): the replay takes <= 5 s on the project's machine. Both runs are timed the same way, from
the start of a fresh kernel to the end of the last cell (nbclient's ``execute``); the baseline runs in the
same process, alternating with the replay.

The notebook is recorded first (not timed) on the embedded local model, 20 short questions; the replays
then answer every turn from the recording, and each run checks that none went live or missed.

    python bench/replay.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

TURNS = 20
TURN_MIMETYPE = "application/vnd.agentcell.turn+json"


def notebook(kernel: str, sources: list[str]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": kernel, "display_name": kernel, "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    return nb


def execute(path: Path, kernel: str) -> tuple[float, nbformat.NotebookNode]:
    nb = nbformat.read(path, as_version=4)
    os.environ["JPY_SESSION_NAME"] = str(path)  # as a Jupyter server tells the kernel
    started = time.perf_counter()
    NotebookClient(nb, kernel_name=kernel, timeout=120, resources={"metadata": {"path": str(path.parent)}}).execute()
    return time.perf_counter() - started, nb


def turns_replayed(nb: nbformat.NotebookNode) -> int:
    """The turns that ended without an error (a miss would be a ``session.error``)."""
    done = 0
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            events = output.get("data", {}).get(TURN_MIMETYPE, {}).get("events", [])
            if events and not any(e["type"] == "session.error" for e in events):
                done += 1
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ.update(AGENTCELL_DB=str(folder / "bench.db"), AGENTCELL_REPLAY="replay")
        for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AGENTCELL_MODEL"):
            os.environ.pop(name, None)
        agent = folder / "twenty.ipynb"
        questions = [f"In three words: what is {n} + {n}?" for n in range(1, TURNS + 1)]
        nbformat.write(notebook("agentcell", ["%model local:smollm2 max_tokens=16 temperature=0", *questions]), agent)
        plain = folder / "plain.ipynb"
        nbformat.write(notebook("python3", [f"{n} + {n}" for n in range(1, TURNS + 1)]), plain)

        print(f"recording {TURNS} turns on local:smollm2 (not timed)…", flush=True)
        command = [sys.executable, "-m", "agentcell.cli", "run", str(agent), "--record", "-o", str(folder / "r.ipynb")]
        subprocess.run(command, check=True, capture_output=True)

        times: dict[str, list[float]] = {"python3, 20 trivial cells": [], f"agentcell, {TURNS} replayed turns": []}
        execute(plain, "python3")  # warm the OS file cache for both
        execute(agent, "agentcell")
        for _ in range(rounds):
            times["python3, 20 trivial cells"].append(execute(plain, "python3")[0])
            elapsed, nb = execute(agent, "agentcell")
            assert turns_replayed(nb) == TURNS, "a turn did not replay"
            times[f"agentcell, {TURNS} replayed turns"].append(elapsed)
    base = statistics.median(times["python3, 20 trivial cells"])
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"{name:30} median {median:6.2f} s  ({median / base:.2f}x)  runs: {', '.join(f'{v:.2f}' for v in values)}"
        )
    print("target: the replay <= 5 s")


if __name__ == "__main__":
    main()
