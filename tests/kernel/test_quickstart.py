"""The quickstart runs headless through nbclient on the embedded local model, with no key, under settings
that change llama.cpp's arithmetic the way another CPU does (threads, batch sizes): each must finish with
a real answer and the python tool's result on the notebook's data."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

QUICKSTART = Path(__file__).parents[2] / "notebooks" / "quickstart.ipynb"

pytestmark = pytest.mark.slow


def _run_quickstart(kernel_env: dict[str, str], out: Path, *, threads: int, batch: int) -> nbformat.NotebookNode:
    # Live on the local model (`--model`), not from the notebook's recording.
    kernel_env.pop("AGENTCELL_MODEL")
    env = kernel_env | {"AGENTCELL_LOCAL_THREADS": str(threads), "AGENTCELL_LOCAL_BATCH": str(batch)}
    result = subprocess.run(
        [sys.executable, "-m", "agentcell.cli", "run", str(QUICKSTART), "-o", str(out), "--model", "local:smollm2"],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=580,
    )
    # On failure, say what the model produced: agentcell run prints every turn as it streams.
    assert result.returncode == 0, f"agentcell run failed; what it printed:\n{result.stderr}"
    return nbformat.read(out, as_version=4)


def _assert_quickstart_worked(nb: nbformat.NotebookNode) -> None:
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.outputs for c in code)
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    assert "local:smollm2" in code[0].outputs[0]["text"]
    answer = code[1].outputs[-1]["data"]["text/markdown"]
    assert len(answer.split("<sub>")[0].strip()) > 20, f"no real answer; the model said: {answer}"
    tool_turn = code[3].outputs[-1]["data"]["text/markdown"]
    assert "🔧 **python** — completed" in tool_turn and "temperatures" in tool_turn, f"the turn was: {tool_turn}"
    # The agent's code ran on the notebook's own data: the mean of its five readings, as a value or printed.
    card_output = tool_turn.split("output:", 1)[-1].split("```", 2)[1]
    assert "13.5" in card_output, f"the python call did not compute the mean; the turn was: {tool_turn}"
    assert "list cost | \\$0" in code[4].outputs[0]["data"]["text/markdown"]


# Each setting is a test of its own: one that passes does not hide another that fails.
ARITHMETIC = [
    pytest.param(1, 512, id="one-thread-batch-512"),
    pytest.param(2, 512, id="two-threads-batch-512"),
    pytest.param(1, 8, id="one-thread-batch-8"),
    pytest.param(2, 64, id="two-threads-batch-64"),
]


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("threads", "batch"), ARITHMETIC)
def test_the_quickstart_on_the_local_model(
    kernel_env: dict[str, str], tmp_path: Path, threads: int, batch: int
) -> None:
    _assert_quickstart_worked(_run_quickstart(kernel_env, tmp_path / "out.ipynb", threads=threads, batch=batch))


@pytest.mark.timeout(300)
def test_a_call_that_cannot_complete_stops_the_run_saying_what_the_model_wrote(
    kernel_env: dict[str, str], tmp_path: Path
) -> None:
    # Three tokens hold no call at all: the closing path cannot help, and the error must show the attempt.
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "agentcell", "display_name": "Agent (agentcell)", "language": "markdown"}
    nb.cells = [
        nbformat.v4.new_code_cell("%model local:smollm2 max_tokens=3"),
        nbformat.v4.new_code_cell("%tools force python\nUse python to compute 6 * 7"),
    ]
    path = tmp_path / "tiny_budget.ipynb"
    nbformat.write(nb, path)
    kernel_env.pop("AGENTCELL_MODEL")
    result = subprocess.run(
        [sys.executable, "-m", "agentcell.cli", "run", str(path)],
        check=False,
        capture_output=True,
        text=True,
        env=kernel_env,
        timeout=280,
    )
    assert result.returncode == 1
    said = result.stderr.split("so the run stopped there", 1)[1]
    assert "TurnError" in said and "did not complete within max_tokens=3" in said
    assert "it wrote '{" in said  # the model's partial call, as produced
