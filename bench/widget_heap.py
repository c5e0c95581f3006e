"""The browser's JS heap after 100 turns in JupyterLab, and the websocket bytes a turn costs (issue 34).

Three notebooks run one after another in the same invocation, each in its own JupyterLab (default settings)
and browser context of the same headless Debian chromium:

- ``bare``: the baseline, a python3 kernel whose cells print the same sentences the turns answer;
- ``before``: the agentcell kernel and lab extension of the commit before issue 34's merge (each turn's
  widget carried the whole ES module and CSS). There is no setting that brings that behaviour back, so the
  kernel, the widget package and the lab extension come from a checkout of that commit (``--before-tree``,
  made with ``git worktree add`` and its bundle built if missing), on this environment's interpreter;
- ``after``: this checkout.

Each agentcell notebook selects the scripted provider, then runs TURNS one-sentence turns with Run All.
When the last cell has its reply and its widget says done, the page's garbage is collected
(``HeapProfiler.collectGarbage``) and ``Performance.getMetrics``' ``JSHeapUsedSize`` read; the same is read
once the notebook is open and idle, before the run. Every websocket frame the page receives and sends during
the run is counted.

    python bench/widget_heap.py [--turns 100] [--runs 1] [--before-tree /tmp/pre34]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import Browser, Page, WebSocket, expect, sync_playwright  # noqa: E402
from tests.browser.lab import (  # noqa: E402 - the browser tests' JupyterLab harness
    CHROMIUM,
    CHROMIUM_ARGS,
    Lab,
    open_notebook,
    run_lab,
    turn,
    wait_cell_done,
    write_notebook,
)

BEFORE = "c0bb19a^1"
"""Main just before 'Merge branch i34-widget' (c0bb19a): every turn's widget carried the views and CSS."""
VARIANTS = ("bare", "before", "after")


@dataclass
class Run:
    variant: str
    heap_idle: int
    heap_after: int
    ws_received: int
    ws_sent: int
    seconds: float


def prepare_before(tree: Path) -> None:
    """A checkout of BEFORE with its widget bundle and lab extension built (node_modules borrowed from this
    checkout: the lockfile did not change in between)."""
    if not tree.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), BEFORE], check=True)
    js = tree / "widgets" / "js"
    if not (js / "node_modules").exists():
        (js / "node_modules").symlink_to(ROOT / "widgets" / "js" / "node_modules")
    if not (tree / "widgets" / "agentcell_widgets" / "labextension" / "package.json").exists():
        subprocess.run(["npm", "run", "build"], cwd=js, check=True, capture_output=True)


def before_env(tree: Path, base: Path) -> dict[str, str]:
    """The old tree's packages ahead of this checkout's editable install (a path .pth, so PYTHONPATH wins),
    and its lab extension ahead of the installed one (JUPYTER_PATH is searched first; the first found wins)."""
    extensions = base / "jupyter-path" / "labextensions"
    extensions.mkdir(parents=True)
    (extensions / "agentcell-widgets").symlink_to(tree / "widgets" / "agentcell_widgets" / "labextension")
    env = {"PYTHONPATH": f"{tree / 'kernel'}:{tree / 'widgets'}", "JUPYTER_PATH": str(base / "jupyter-path")}
    where = subprocess.run(
        [sys.executable, "-c", "import agentcell as a, agentcell_widgets as w; print(a.__file__, w.__file__)"],
        env={**os.environ, **env},
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert all(path.startswith(str(tree)) for path in where.split()), where
    return env


def answer(n: int) -> str:
    return f"Answer {n}: forty-two, and the reason in one short sentence."


def notebook(lab: Lab, variant: str, turns: int) -> int:
    """Writes the variant's notebook; returns the index of its last cell."""
    if variant == "bare":
        write_notebook(lab, "heap.ipynb", [f"print({answer(n)!r})" for n in range(turns)], kernel="python3")
        return turns - 1
    script = lab.root / "heap.script.json"
    script.write_text(json.dumps([{"steps": [{"kind": "text", "text": answer(n)}]} for n in range(turns)]))
    write_notebook(lab, "heap.ipynb", [f"%model scripted:{script}", *(f"Question {n}?" for n in range(turns))])
    return turns


def heap(page: Page) -> int:
    session = page.context.new_cdp_session(page)
    session.send("Performance.enable")
    for _ in range(2):  # a second pass collects what the first one's finalizers released
        session.send("HeapProfiler.collectGarbage")
    metrics = {m["name"]: m["value"] for m in session.send("Performance.getMetrics")["metrics"]}
    session.detach()
    return int(metrics["JSHeapUsedSize"])


def measure(browser: Browser, variant: str, turns: int, before_tree: Path) -> Run:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "data").mkdir()
        env = {"AGENTCELL_DB": str(base / "agentcell.db"), "JUPYTER_DATA_DIR": str(base / "data")}
        if variant == "before":
            env |= before_env(before_tree, base)
        with run_lab(base, env=env, defaults=True) as lab:
            last = notebook(lab, variant, turns)
            context = browser.new_context(viewport={"width": 1200, "height": 1000})
            page = context.new_page()
            counted = {"received": 0, "sent": 0}

            def watch(ws: WebSocket) -> None:
                def count(key: str, payload: str | bytes) -> None:
                    counted[key] += len(payload.encode() if isinstance(payload, str) else payload)

                ws.on("framereceived", lambda p: count("received", p))
                ws.on("framesent", lambda p: count("sent", p))

            page.on("websocket", watch)
            open_notebook(page, lab, "heap.ipynb")
            heap_idle = heap(page)
            counted |= {"received": 0, "sent": 0}
            started = time.monotonic()
            page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
            page.locator(".lm-Menu-item[data-command='runmenu:run-all']").click()
            wait_cell_done(page, last, timeout=1_800_000)
            done = page.locator(".jp-Notebook .jp-Cell").nth(last)
            if variant == "bare":
                expect(done.locator(".jp-OutputArea-output")).to_contain_text(answer(turns - 1))
            else:
                expect(turn(page, last).locator(".ac-turn-status")).to_have_text("done", timeout=60_000)
                expect(turn(page, last).locator(".ac-message")).to_contain_text(answer(turns - 1))
            seconds = time.monotonic() - started
            run = Run(variant, heap_idle, heap(page), counted["received"], counted["sent"], seconds)
            context.close()
            return run


def mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--before-tree", type=Path, default=Path("/tmp/pre34"))
    args = parser.parse_args()
    prepare_before(args.before_tree)
    runs: list[Run] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        for _ in range(args.runs):
            for variant in VARIANTS:
                runs.append(measure(browser, variant, args.turns, args.before_tree))
                r = runs[-1]
                received, sent = r.ws_received // args.turns, r.ws_sent // args.turns
                print(
                    f"{r.variant:7} heap idle {mb(r.heap_idle)}, after {args.turns} turns {mb(r.heap_after)}; "
                    f"websocket per turn received {received:,} B, sent {sent:,} B; {r.seconds:.0f} s",
                    flush=True,
                )
        browser.close()
    for i in range(args.runs):
        bare, *rest = runs[3 * i : 3 * i + 3]
        for r in rest:
            print(
                f"run {i + 1} {r.variant}: heap {r.heap_after / bare.heap_after:.2f}x bare, "
                f"websocket received {r.ws_received / max(bare.ws_received, 1):.1f}x bare"
            )


if __name__ == "__main__":
    main()
