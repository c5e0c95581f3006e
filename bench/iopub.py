"""IOPub traffic and wall time of one 20,000-delta scripted turn in the agentcell kernel.

Targets (issue 5): at most ~30 IOPub messages per second of streaming plus a constant, and the turn's wall
time within 1.10x of consuming the same stream without a kernel (the engine alone, measured in this run).

    python bench/iopub.py [--deltas 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path

from jupyter_client.manager import start_new_kernel

from agentcell import Engine, ScriptedProvider, ScriptedResponse


def script(deltas: int, delay: float) -> list[dict[str, object]]:
    # A model-like pace: a short wait before each one-character delta.
    text = "".join(f"{i % 10}" for i in range(deltas))
    return [{"steps": [{"kind": "text", "text": text, "chunk_size": 1, "delay": delay}]}]


async def engine_only(db: Path, responses: list[dict[str, object]]) -> float:
    provider = ScriptedProvider([ScriptedResponse.model_validate(r) for r in responses])
    engine = Engine(db, providers={"scripted": provider})
    session = engine.sessions.create(agent=engine.agents.create(name="b", model="scripted").id)
    started = time.perf_counter()
    count = 0
    async for _item in session.send("go"):
        count += 1
    elapsed = time.perf_counter() - started
    await engine.aclose()
    return elapsed


def in_kernel(tmp: str, model: str) -> tuple[float, int, float, int]:
    env = {**os.environ, "AGENTCELL_DB": f"{tmp}/k.db", "AGENTCELL_MODEL": model}
    km, kc = start_new_kernel(kernel_name="agentcell", env=env, startup_timeout=60)
    try:
        kc.execute_interactive("warm up", timeout=60, output_hook=lambda _m: None)  # load the engine first
        times: list[float] = []
        started = time.perf_counter()
        reply = kc.execute_interactive("go", timeout=300, output_hook=lambda _m: times.append(time.perf_counter()))
        wall = time.perf_counter() - started
        assert reply["content"]["status"] == "ok"
        streaming = times[-1] - times[0] if len(times) > 1 else 0.0
        return wall, len(times), streaming, 0
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--delay", type=float, default=0.0002, help="seconds before each delta")
    args = parser.parse_args()
    deltas = args.deltas
    responses = script(deltas, args.delay)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "script.json"
        # The kernel's first turn ("warm up") takes the first response; give it a short one.
        path.write_text(json.dumps([{"steps": [{"kind": "text", "text": "ready"}]}, *responses]))
        baseline = min(asyncio.run(engine_only(Path(tmp) / f"e{i}.db", responses)) for i in range(2))
        wall, messages, streaming, _ = in_kernel(tmp, f"scripted:{path}")
    print(f"deltas:                 {deltas:,}")
    print(f"engine alone:           {baseline:.2f} s")
    print(f"in the kernel:          {wall:.2f} s   ({wall / baseline:.2f}x the engine alone; target <= 1.10x)")
    print(f"IOPub messages:         {messages} over {streaming:.2f} s of streaming "
          f"({messages / max(streaming, 1e-9):.1f}/s; target <= 30/s + a constant)")  # fmt: skip


if __name__ == "__main__":
    main()
