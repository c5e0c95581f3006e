"""The quickstart runs headless through nbclient on the embedded local model, with no key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

QUICKSTART = Path(__file__).parents[2] / "notebooks" / "quickstart.ipynb"

pytestmark = pytest.mark.slow


@pytest.mark.timeout(180)
def test_the_quickstart_runs_on_the_local_model(kernel_env: dict[str, str], tmp_path: Path) -> None:
    # Live on the local model (`--model`), not from the notebook's recording.
    kernel_env.pop("AGENTCELL_MODEL")
    out = tmp_path / "quickstart.out.ipynb"
    result = subprocess.run(
        [sys.executable, "-m", "agentcell.cli", "run", str(QUICKSTART), "-o", str(out), "--model", "local:smollm2"],
        check=False,
        capture_output=True,
        text=True,
        env=kernel_env,
        timeout=170,
    )
    assert result.returncode == 0, result.stderr
    nb = nbformat.read(out, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.outputs for c in code)
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    assert "local:smollm2" in code[0].outputs[0]["text"]
    answer = code[1].outputs[-1]["data"]["text/markdown"]
    assert len(answer.split("<sub>")[0].strip()) > 20  # a real answer from the model
    tool_turn = code[3].outputs[-1]["data"]["text/markdown"]
    assert "🔧 **python** — completed" in tool_turn and "temperatures" in tool_turn
    assert "Out: 13.5" in tool_turn  # the agent's code ran on the notebook's own data
    assert "list cost | \\$0" in code[4].outputs[0]["data"]["text/markdown"]
