"""A 20-turn notebook saved by JupyterLab (default settings): its bytes on disk against its turns'
transcript bytes (issue 15, target at most 3x).

The notebook is run in a real JupyterLab in headless Chromium on the scripted provider: each turn calls the
python tool once and answers in a sentence, so every turn carries a tool card, text, usage and cost. After
the last cell it is saved (Ctrl+S) and read from disk. The baseline, measured in the same run, is the
transcript: each turn's durable events as the kernel logged them, serialized compactly (the bytes the
event store holds for those turns). The ratio is the saved file's size over the transcripts' total;
the saved file also carries the turns' HTML, Markdown and plain-text fallbacks for other viewers.

    python bench/notebook_size.py [--turns 20]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402
from tests.browser.lab import (  # noqa: E402 - the browser tests' JupyterLab harness
    CHROMIUM,
    CHROMIUM_ARGS,
    open_notebook,
    run_cell,
    run_lab,
    save,
    wait_cell_done,
    write_notebook,
)
from tests.widgets.conftest import python_turns  # noqa: E402 - the same turns as the nbclient size test

TURN_MIMETYPE = "application/vnd.agentcell.turn+json"


def measure(turns: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "data").mkdir()
        env = {
            "AGENTCELL_DB": str(base / "agentcell.db"),
            "JUPYTER_DATA_DIR": str(base / "data"),
            "AGENTCELL_PYTHON_TOOL": "allow",  # the turns' python calls run unasked, as in the nbclient test
        }
        with run_lab(base, env=env, defaults=True) as lab, sync_playwright() as playwright:
            script_path = lab.root / "size.script.json"
            script_path.write_text(json.dumps(python_turns(turns)))
            cells = [f"%model scripted:{script_path}"] + [f"Sum the first {n + 10} numbers." for n in range(turns)]
            path = write_notebook(lab, "size.ipynb", cells)
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1200, "height": 1000})
            open_notebook(page, lab, "size.ipynb")
            for index in range(len(cells)):
                run_cell(page, index)
                wait_cell_done(page, index)
            save(page)
            browser.close()
            saved = path.read_bytes()
    nb = json.loads(saved)
    outputs = [o for c in nb["cells"] for o in c.get("outputs", [])]
    bundles = [o["data"][TURN_MIMETYPE] for o in outputs if TURN_MIMETYPE in o.get("data", {})]
    assert len(bundles) == turns, f"{len(bundles)} turn outputs for {turns} turns"
    transcript = sum(len(json.dumps(b["events"], separators=(",", ":")).encode()) for b in bundles)
    return {
        "turns": turns,
        "file_bytes": len(saved),
        "transcript_bytes": transcript,
        "ratio": len(saved) / transcript,
        "widget_state": "widgets" in nb["metadata"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=20)
    figures = measure(parser.parse_args().turns)
    print(json.dumps(figures, indent=2))
    print(
        f"saved notebook {figures['file_bytes']:,} B / transcripts {figures['transcript_bytes']:,} B"
        f" = {figures['ratio']:.2f}x (target at most 3x)"
    )


if __name__ == "__main__":
    main()
