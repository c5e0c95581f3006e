"""The gallery's committed outputs: every notebook in ``notebooks/`` replayed from its recording by
``agentcell run``, so GitHub and nbviewer show the conversations before anyone runs them.

Regenerate after changing a notebook, its recording or the renderers::

    .venv/bin/python tests/replay/gallery_outputs.py

It replays copies of the notebooks in a scratch folder (tools write there, not into the repository) with no
key in the environment, and writes each executed notebook back over the original. Cell timing metadata is
dropped: it changes on every run and is no output. :func:`normalized` is what the test compares: a run's
outputs without what every run mints anew (event and session ids, timestamps, the scratch folder's path,
``%usage``'s clock times, a workflow run's durations), with consecutive stream outputs joined (how a
print's text is split into messages depends on when the kernel flushes).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GALLERY = ROOT / "notebooks"
TURN_MIMETYPE = "application/vnd.agentcell.turn+json"
# Not \b at the start: an id can follow an underscore (a skill's "user_activation_<event id>" call id).
_ID = re.compile(r"(?<![a-z0-9])[a-z]{4,5}_[0-9A-HJKMNP-TV-Z]{26}\b")
_CLOCK = re.compile(r"(active time|session age)(\W+)\d+(\.\d+)? s")
# A workflow run's durations (its head line and each step's row): wall-clock time of this replay.
_DURATION = re.compile(r"(?<![\w.])(\d+ ms|\d+\.\d s|\d+ min \d+ s)(?= ·| \||</td>|  |$)", re.MULTILINE)
_VOLATILE = ("id", "created_at", "session_id", "processed_at", "completed_at", "updated_at")


def replay(source: Path, scratch: Path) -> dict[str, Path]:
    """Replay every notebook of ``source`` in a copy under ``scratch``; the executed notebooks by name."""
    folder = scratch / "notebooks"
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("*.executed.ipynb"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "AGENTCELL_", "JPY_"))}
    env["AGENTCELL_DB"] = str(scratch / "agentcell.db")
    executed: dict[str, Path] = {}
    for notebook in sorted(folder.glob("*.ipynb")):
        out = scratch / f"{notebook.stem}.out.ipynb"
        command = [sys.executable, "-m", "agentcell.cli", "run", str(notebook), "-o", str(out)]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"replaying {notebook.name} failed:\n{done.stderr[-3000:]}")
        executed[notebook.name] = out
    return executed


def without_timing(nb: dict[str, Any]) -> dict[str, Any]:
    for cell in nb["cells"]:
        cell.get("metadata", {}).pop("execution", None)
    return nb


def _blind(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _blind(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_blind(v) for v in value]
    if isinstance(value, str):
        text = _DURATION.sub("<duration>", _CLOCK.sub(r"\1\2<clock> s", _ID.sub("<id>", value)))
        return re.sub(r"(/[^\s\"'<>]*)?/notebooks/", "<notebooks>/", text)
    return value


def normalized(nb: dict[str, Any]) -> list[list[Any]]:
    """Each cell's outputs as a replay must reproduce them (see the module docstring)."""
    cells = []
    for cell in nb["cells"]:
        outputs = []
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            text = output.get("text")
            joined = "".join(text) if isinstance(text, list) else text
            previous = outputs[-1] if outputs else None
            if (
                output["output_type"] == "stream"
                and previous
                and previous["type"] == "stream"
                and (previous["name"] == output.get("name"))
            ):  # one print's text may arrive in one stream message or two, as the kernel flushes it
                previous["text"] = _blind(f"{previous['text']}{joined}")
                continue
            outputs.append(
                {
                    "type": output["output_type"],
                    "name": output.get("name"),
                    "text": _blind(joined),
                    "data": {
                        mime: _blind("".join(v) if isinstance(v, list) else v) for mime, v in sorted(data.items())
                    },
                }
            )
        cells.append(outputs)
    return cells


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        for name, executed in replay(GALLERY, Path(scratch)).items():
            nb = without_timing(json.loads(executed.read_text(encoding="utf-8")))
            (GALLERY / name).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            print(f"wrote {GALLERY / name}")


if __name__ == "__main__":
    main()
