"""IOPub bytes per turn through the real kernel (issue 34): what a short turn sends, and whether it grows.

Runs a warm-up turn, then TURNS short scripted turns (one sentence each), reading every IOPub message of each
cell, the widget's comm messages included, and counting its bytes on the wire (the four JSON frames and any
binary buffers). A page without the lab extension also gets the views once (and KaTeX once, if a reply has
math): those one-time bytes are the sizes of the parts the kernel would send, printed apart.

    python bench/iopub_bytes.py [--turns 10]

Run with another checkout's interpreter (its kernel is the one its environment registered) for a before/after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

from jupyter_client.manager import start_new_kernel


def wire_bytes(msg: dict[str, Any]) -> int:
    frames = (msg["header"], msg["parent_header"], msg["metadata"], msg["content"])
    return sum(len(json.dumps(f, default=str, separators=(",", ":")).encode()) for f in frames) + sum(
        len(b) for b in msg.get("buffers", [])
    )


def measure(turns: int) -> list[int]:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.json"
        answers = [{"steps": [{"kind": "text", "text": f"Answer {i}: forty-two."}]} for i in range(turns + 1)]
        script.write_text(json.dumps(answers))
        env = {**os.environ, "AGENTCELL_DB": f"{tmp}/k.db", "AGENTCELL_MODEL": f"scripted:{script}"}
        km, kc = start_new_kernel(kernel_name="agentcell", env=env, startup_timeout=60)
        try:
            sizes: list[int] = []
            for i in range(turns + 1):
                total = 0

                def count(msg: dict[str, Any]) -> None:
                    nonlocal total
                    total += wire_bytes(msg)

                reply = kc.execute_interactive(f"Question {i}?", timeout=60, output_hook=count)
                assert reply["content"]["status"] == "ok"
                # Comm messages after the reply (a closed widget's last words) are read with the next cell's.
                sizes.append(total)
            return sizes[1:]  # the warm-up loads the engine
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)


def once_per_page() -> dict[str, int]:
    try:
        from agentcell_widgets import CODE_PARTS, code_part
    except ImportError:  # a checkout from before issue 34: the code rode with every turn
        return {}
    return {part: len(code_part(part) or b"") for part in CODE_PARTS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=10)
    args = parser.parse_args()
    sizes = measure(args.turns)
    print(f"turns:                  {len(sizes)}")
    print(f"IOPub bytes per turn:   median {statistics.median(sizes):,.0f}, min {min(sizes):,}, max {max(sizes):,}")
    print(f"growth first to last:   {sizes[-1] - sizes[0]:+,} bytes")
    for part, size in once_per_page().items():
        print(f"once per page ({part}):  {size:,} bytes, only where the lab extension does not lend it")


if __name__ == "__main__":
    main()
