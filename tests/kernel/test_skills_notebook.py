"""The skills gallery notebook runs live on the embedded local model through nbclient: the tiny model,
pushed with ``%tools force activate_skill``, activates the notebook's skill and answers from its
instructions; the skill's script runs from its read-only mount; ``/name`` finds it already active."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from ..skill_folders import stored_events

GALLERY = Path(__file__).parents[2] / "notebooks"

pytestmark = pytest.mark.slow


def _shown(cell: nbformat.NotebookNode) -> str:
    """What a cell printed: its streams, and the last Markdown it displayed (a turn's final transcript)."""
    streams = "".join(o["text"] for o in cell.outputs if o.output_type == "stream")
    markdown = [o["data"]["text/markdown"] for o in cell.outputs if "text/markdown" in o.get("data", {})]
    return streams + (markdown[-1] if markdown else "")


@pytest.mark.timeout(300)  # the tiny model reads long prompts: ~2.5 min on a shared 2-core machine
def test_the_skills_notebook_runs_on_the_local_model(kernel_env: dict[str, str], tmp_path: Path) -> None:
    folder = tmp_path / "gallery"
    folder.mkdir()
    shutil.copy(GALLERY / "skills.ipynb", folder)
    shutil.copy(GALLERY / "regions.csv", folder)
    shutil.copytree(GALLERY / "skills", folder / "skills")
    kernel_env.pop("AGENTCELL_MODEL")
    out = tmp_path / "skills.out.ipynb"
    command = [sys.executable, "-m", "agentcell.cli", "run", str(folder / "skills.ipynb"), "-o", str(out)]
    result = subprocess.run(
        [*command, "--model", "local:smollm2"],  # live, not from the recording
        check=False,
        capture_output=True,
        text=True,
        env=kernel_env,
        timeout=290,
    )
    assert result.returncode == 0, result.stderr
    cells = {c.source.splitlines()[0]: c for c in nbformat.read(out, as_version=4).cells if c.cell_type == "code"}
    assert not [o for c in cells.values() for o in c.outputs if o.output_type == "error"]

    offered = _shown(cells["%skills"])
    assert offered.startswith("no skills") and "  skills/csv-house-style  csv-house-style: Summarise a CSV" in offered
    assert "skill csv-house-style v1 attached" in _shown(cells["%skills add skills/csv-house-style"])

    turn = _shown(cells["%tools force activate_skill"])
    card, answer = turn.split("</skill_content>\n```\n\n</details>", 1)
    assert "📘 **skill csv-house-style** v1 — completed\n\nchosen by the model" in card
    assert "- `scripts/summarise.py`" in card and '<skill_content name="csv-house-style">' in card
    assert "House style:" in answer  # the model's own reply draws on the instructions it loaded

    ran = _shown(cells["%%python"])
    assert ran.startswith("House style: regions.csv, 4 rows, columns region, manager, sales\n")
    assert "- sales: total 446, mean 111.5, largest east (143)" in ran
    again = _shown(cells["/csv-house-style Which file did you summarise?"])
    assert "The skill csv-house-style is already active" in again
    assert _shown(cells["%skills remove csv-house-style"]).startswith("skill csv-house-style removed")

    activations = [e for e in stored_events(kernel_env["AGENTCELL_DB"]) if e["type"] == "session.skill_activated"]
    # `/csv-house-style` found it active: a reminder in its result, and no second activation
    assert [(e["name"], e["version"], e["requested_by"]) for e in activations] == [("csv-house-style", 1, "model")]
    mounted = folder / ".agentcell/skills/csv-house-style/v1"
    assert (mounted / "scripts/summarise.py").read_bytes() == (
        GALLERY / "skills/csv-house-style/scripts/summarise.py"
    ).read_bytes()
