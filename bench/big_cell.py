"""The IOPub bytes a large prose cell costs, by message type, against the cell's own size.

Each cell is a turn of the scripted model (a one-line answer) in a real agentcell kernel; every IOPub
message parented to the request is counted (its JSON content and buffers). The baseline is the cell's size:
before issue 21 the kernel sent it back three times (execute_input, the widget's items, the saved bundle).

    python bench/big_cell.py [--sizes 1,5]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from jupyter_client.manager import start_new_kernel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1,5", help="cell sizes in MB")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.json"
        script.write_text(json.dumps([{"steps": [{"kind": "text", "text": "ok"}]}] * (len(sizes) + 1)))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
        env.update(AGENTCELL_DB=f"{tmp}/k.db", AGENTCELL_MODEL=f"scripted:{script}", JPY_SESSION_NAME=f"{tmp}/n.ipynb")
        km, kc = start_new_kernel(kernel_name="agentcell", env=env, startup_timeout=60)
        try:
            kc.execute_interactive("warm up", timeout=60, output_hook=lambda _m: None)
            print("| cell | IOPub in all | execute_input | widget items | final bundle | widget code (comm_open) |")
            print("| --- | --- | --- | --- | --- | --- |")
            for megabytes in sizes:
                cell = "word " * (megabytes * 200_000)
                tally: Counter[str] = Counter()

                def count(message: dict[str, Any], tally: Counter[str] = tally) -> None:
                    size = len(json.dumps(message["content"])) + sum(len(b) for b in message.get("buffers") or ())
                    tally[message["msg_type"]] += size

                reply = kc.execute_interactive(cell, timeout=300, output_hook=count)
                assert reply["content"]["status"] == "ok"
                total = sum(tally.values())
                print(
                    f"| {len(cell) / 1e6:.0f} MB | {total / 1e6:.2f} MB ({total / len(cell):.3f}x the cell) "
                    f"| {tally['execute_input'] / 1e3:.1f} kB | {tally['comm_msg'] / 1e3:.1f} kB "
                    f"| {tally['update_display_data'] / 1e3:.1f} kB | {tally['comm_open'] / 1e6:.2f} MB |"
                )
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)


if __name__ == "__main__":
    main()
