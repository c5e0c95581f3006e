"""The turn widget under a 20,000-delta turn in a real JupyterLab and Chromium (issue 6).

Measures, for one scripted turn of one-character deltas at a model-like pace:
* the text the widget shows at the end is complete and identical to what the model sent;
* the IOPub messages of the turn as the browser received them (the kernel websocket's frames, from the
  cell's ``execute_input`` to its ``idle``), against the target of at most 30 per second of streaming
  plus a constant;
* main-thread long tasks (``PerformanceObserver`` "longtask"), against the target of none over 200 ms.

    python bench/render.py [--deltas 20000] [--delay 0.0002]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import expect, sync_playwright  # noqa: E402
from tests.browser.lab import (  # noqa: E402 - the browser tests' JupyterLab harness
    CHROMIUM,
    CHROMIUM_ARGS,
    open_notebook,
    run_cell,
    run_lab,
    turn,
    wait_cell_done,
    write_notebook,
)

LONGTASKS = """
window.__longtasks = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) window.__longtasks.push([entry.startTime, entry.duration]);
}).observe({ type: "longtask", buffered: true });
"""


def parse_frame(payload: str | bytes) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
    """(channel, header, parent_header) of a kernel websocket frame (JSON, or the v1 binary protocol)."""
    if isinstance(payload, str):
        msg = json.loads(payload)
        return msg.get("channel", ""), msg.get("header", {}), msg.get("parent_header", {})
    count = int.from_bytes(payload[:8], "little")
    offsets = [int.from_bytes(payload[8 * (i + 1) : 8 * (i + 2)], "little") for i in range(count)]
    if len(offsets) < 4:
        return None
    channel = payload[offsets[0] : offsets[1]].decode()
    header = json.loads(payload[offsets[1] : offsets[2]])
    parent = json.loads(payload[offsets[2] : offsets[3]])
    return channel, header, parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--delay", type=float, default=0.0002)
    args = parser.parse_args()
    text = "".join(str(i % 10) for i in range(args.deltas))

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        base = Path(tmp)
        env = {"AGENTCELL_DB": str(base / "k.db"), "AGENTCELL_MODEL": "scripted", "JUPYTER_DATA_DIR": str(base)}
        with run_lab(base, env=env) as lab:
            script = base / "root" / "bench.json"
            long_turn = {"steps": [{"kind": "text", "text": text, "chunk_size": 1, "delay": args.delay}]}
            script.write_text(json.dumps([{"steps": [{"kind": "text", "text": "warm"}]}, long_turn]))
            write_notebook(lab, "bench.ipynb", [f"%model scripted:{script}", "warm up", "go"])
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1200, "height": 1000})
            page.add_init_script(LONGTASKS)
            frames: list[tuple[float, str, str, str]] = []

            def watch(ws: Any) -> None:
                def received(payload: str | bytes) -> None:
                    parsed = parse_frame(payload)
                    if parsed is not None:
                        channel, header, parent = parsed
                        frames.append(
                            (time.perf_counter(), channel, header.get("msg_type", ""), parent.get("msg_id", ""))
                        )

                ws.on("framereceived", received)

            page.on("websocket", watch)
            open_notebook(page, lab, "bench.ipynb")
            run_cell(page, 0)
            wait_cell_done(page, 0)
            run_cell(page, 1)  # the first turn loads the engine and the widget's ESM
            wait_cell_done(page, 1)
            turn_start: float = page.evaluate("() => performance.now()")
            run_cell(page, 2)
            wait_cell_done(page, 2, timeout=600_000)
            view = turn(page, 2)
            expect(view.locator(".ac-turn-status")).to_have_text("done: end_turn")
            # The reply's own text: a long one also has its "Show more (N words)" button in .ac-message.
            shown = view.locator(".ac-message").evaluate("el => el.firstElementChild.innerText").strip()
            turn_end: float = page.evaluate("() => performance.now()")
            every: list[list[float]] = page.evaluate("() => window.__longtasks")
            longtasks = [d for start, d in every if turn_start <= start <= turn_end]
            browser.close()

    report(
        deltas=args.deltas,
        equal=shown == text,
        shown=len(shown),
        turn_frames=_turn_frames(frames),
        longtasks=longtasks,
        every=every,
    )


def report(
    *,
    deltas: int,
    equal: bool,
    shown: int,
    turn_frames: list[tuple[float, str, str, str]],
    longtasks: list[float],
    every: list[list[float]],
) -> None:
    seconds = turn_frames[-1][0] - turn_frames[0][0]
    iopub = [f for f in turn_frames if f[1] == "iopub"]
    kinds: dict[str, int] = {}
    for f in iopub:
        kinds[f[2]] = kinds.get(f[2], 0) + 1
    print(f"deltas                    {deltas:,}")
    print(f"text complete and equal   {equal} ({shown:,} of {deltas:,} characters)")
    print(f"turn in the browser       {seconds:.2f} s")
    print(f"IOPub messages received   {len(iopub)} ({len(iopub) / seconds:.1f}/s)")
    print(f"  by type                 {kinds}")
    print(f"long tasks during turn    {len(longtasks)}, longest {max(longtasks, default=0):.0f} ms")
    print(f"  whole page (Lab start)  {len(every)}, longest {max((d for _, d in every), default=0):.0f} ms")


def _turn_frames(frames: list[tuple[float, str, str, str]]) -> list[tuple[float, str, str, str]]:
    """Frames from the last cell's execute_input to its idle status, widget messages included."""
    inputs = [i for i, f in enumerate(frames) if f[2] == "execute_input"]
    first = inputs[-1]
    parent = frames[first][3]
    last = max(i for i, f in enumerate(frames) if f[2] == "status" and f[3] == parent)
    return frames[first : last + 1]


if __name__ == "__main__":
    main()
