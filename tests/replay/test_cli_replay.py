"""`agentcell run`: replays a notebook's recording by default, re-records with --record, runs live with
--model, reports cells that are not recorded, and writes HTML with widget state and static fallbacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from ..kernel.conftest import write_script
from ._transcript import transcript, turn_events

pytestmark = pytest.mark.slow

SCRIPT = [
    {"steps": [{"kind": "text", "text": "About 2.1 million."}]},
    {"steps": [{"kind": "thinking", "thinking": "Smaller."}, {"kind": "text", "text": "About 520,000."}]},
]
WIDGET = """%%python
from comm import create_comm
from IPython.display import display
state = {"_model_name": "HTMLModel", "_model_module": "@jupyter-widgets/controls", "_model_module_version": "2.0.0",
         "value": "live view"}
model = create_comm(target_name="jupyter.widget", data={"state": state, "buffer_paths": []},
                    metadata={"version": "2.1.0"})
display({"application/vnd.jupyter.widget-view+json": {"model_id": model.comm_id, "version_major": 2,
         "version_minor": 1}, "text/html": "<p>STATIC FALLBACK</p>", "text/plain": "fallback"}, raw=True)
"""


def notebook(path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "agentcell", "display_name": "Agent (agentcell)", "language": "markdown"}
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, path)
    return path


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "agentcell.cli", "run", *args]
    return subprocess.run(command, check=False, capture_output=True, text=True, env=env, timeout=120)


def transcripts(path: Path) -> list[list[dict[str, object]]]:
    executed = nbformat.read(path, as_version=4)
    return [transcript(events) for cell in executed.cells for events in turn_events(cell)]


def test_run_replays_a_recording_by_default_and_reports_what_is_not_recorded(
    kernel_env: dict[str, str], tmp_path: Path
) -> None:
    nb = notebook(tmp_path / "study.ipynb", "What is the population of Paris?", "And of Lyon?")
    script = tmp_path / "script.json"
    recorded = run(
        str(nb), "--record", "--model", write_script(script, SCRIPT), "-o", str(tmp_path / "a.ipynb"), env=kernel_env
    )
    assert recorded.returncode == 0, recorded.stderr
    assert f"recorded into {tmp_path / 'study.agentcell.jsonl'}" in recorded.stderr
    script.unlink()  # nothing can answer live any more

    kernel_env.pop("AGENTCELL_MODEL")  # the model comes from the recording
    replayed = run(str(nb), "-o", str(tmp_path / "b.ipynb"), env=kernel_env)
    assert replayed.returncode == 0, replayed.stderr
    assert f"replayed from {tmp_path / 'study.agentcell.jsonl'}" in replayed.stderr
    assert transcripts(tmp_path / "b.ipynb") == transcripts(tmp_path / "a.ipynb")
    assert "About 520,000." in str(transcripts(tmp_path / "b.ipynb")[1])

    edited = nb.read_text().replace("And of Lyon?", "And of Marseille?")
    nb.write_text(edited)
    missed = run(str(nb), "-o", str(tmp_path / "c.ipynb"), env=kernel_env)
    assert missed.returncode == 1
    assert "cell 2 of 2 (And of Marseille?) failed, so the run stopped there\n" in missed.stderr
    assert "not everything was in the recording:\n  not recorded: cell [2] (id " in missed.stderr
    assert missed.stderr.count("“And of Marseille?”: study.agentcell.jsonl has no answer") == 1

    live = run(str(nb), "--model", "scripted", "-o", str(tmp_path / "d.ipynb"), env=kernel_env)
    assert live.returncode == 0, live.stderr
    assert "You said: And of Marseille?" in str(transcripts(tmp_path / "d.ipynb")[1])


@pytest.mark.timeout(180)  # three `agentcell run`s, each a kernel
def test_a_recording_follows_its_notebook_when_it_is_renamed_and_is_copied_with_a_duplicate(
    kernel_env: dict[str, str], tmp_path: Path
) -> None:
    nb = notebook(tmp_path / "study.ipynb", "What is the population of Paris?")
    saved = nbformat.read(nb, as_version=4)
    saved.metadata["agentcell"] = {"notebook_id": "0f5c2a9e-1d1b-4c55-9a53-7d2b1c0e8f11"}  # as the extension keeps it
    nbformat.write(saved, nb)
    script = tmp_path / "script.json"
    recorded = run(str(nb), "--record", "--model", write_script(script, SCRIPT[:1]), "-o", str(nb), env=kernel_env)
    assert recorded.returncode == 0, recorded.stderr
    script.unlink()
    kernel_env.pop("AGENTCELL_MODEL")

    renamed = nb.rename(tmp_path / "paris.ipynb")  # the recording stays behind, under the old name
    replayed = run(str(renamed), "-o", str(renamed), env=kernel_env)
    assert replayed.returncode == 0, replayed.stderr
    assert f"replayed from {tmp_path / 'paris.agentcell.jsonl'}" in replayed.stderr
    assert not (tmp_path / "study.agentcell.jsonl").exists()
    assert "About 2.1 million." in str(transcripts(renamed))

    duplicate = tmp_path / "paris-copy.ipynb"  # JupyterLab's Duplicate: the same metadata, so the same id
    duplicate.write_bytes(renamed.read_bytes())
    again = run(str(duplicate), "-o", str(duplicate), env=kernel_env)
    assert again.returncode == 0, again.stderr
    assert f"replayed from {tmp_path / 'paris-copy.agentcell.jsonl'}" in again.stderr
    assert (tmp_path / "paris.agentcell.jsonl").read_bytes() == (tmp_path / "paris-copy.agentcell.jsonl").read_bytes()


def test_run_writes_html_with_widget_state_and_static_fallbacks(kernel_env: dict[str, str], tmp_path: Path) -> None:
    nb = notebook(tmp_path / "page.ipynb", WIDGET, "Hello there")
    result = run(str(nb), "--html", env=kernel_env)
    assert result.returncode == 0, result.stderr
    html = (tmp_path / "page.executed.html").read_text()
    assert '<script type="application/vnd.jupyter.widget-state+json">' in html
    assert '"value": "live view"' in html  # the widget's saved state
    assert '<script type="application/vnd.jupyter.widget-view+json">' in html
    assert "<p>STATIC FALLBACK</p>" in html  # shown too, for a page whose widgets cannot load
    assert "You said: Hello there" in html  # the turn's static fallback
