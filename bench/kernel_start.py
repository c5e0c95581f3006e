"""Kernel cold start to a first executed cell: agentcell vs plain ipykernel, alternating, in one run.

Target (issue 5): agentcell <= 1.3x the plain ipykernel (heavy modules load lazily).

    python bench/kernel_start.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from jupyter_client.manager import start_new_kernel


def first_cell(kernel_name: str, code: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    km, kc = start_new_kernel(kernel_name=kernel_name, env=env, startup_timeout=60)
    try:
        reply = kc.execute_interactive(code, timeout=60, output_hook=lambda _msg: None)
        assert reply["content"]["status"] == "ok", reply["content"]
        return time.perf_counter() - started
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "AGENTCELL_DB": f"{tmp}/bench.db", "AGENTCELL_MODEL": "scripted"}
        times: dict[str, list[float]] = {"python3": [], "agentcell": [], "agentcell prose": []}
        first_cell("python3", "1", env)  # warm the OS file cache for both
        first_cell("agentcell", "%%python\n1", env)
        for _ in range(rounds):
            times["python3"].append(first_cell("python3", "1", env))
            times["agentcell"].append(first_cell("agentcell", "%%python\n1", env))
            times["agentcell prose"].append(first_cell("agentcell", "hello", env))
    base = statistics.median(times["python3"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:16} median {median * 1000:7.0f} ms  ({median / base:.2f}x python3)  n={len(values)}")
    print("target: agentcell <= 1.30x python3 for a first Python cell")


if __name__ == "__main__":
    main()
