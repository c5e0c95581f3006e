"""The kernel as an ACP client against the ACP client SDK alone: a 20,000-delta reply of ``agentcell acp``.

Both sides drive the same agent, ``agentcell acp`` on a scripted reply of one character a delta, as a
subprocess. The baseline is the SDK's own client (``spawn_agent_process``), timed from sending
``session/prompt`` to its answer, with every ``agent_message_chunk`` received. The kernel: a real agentcell
kernel (jupyter_client) whose notebook said ``%agent acp agentcell``, timed from sending the prose cell's
``execute_request`` to its ``execute_reply``: the agent's chunks folded into events, stored, and rendered into
the cell (the turn widget, as a notebook gets it). Rounds alternate, so both see the same machine load.
Target (issue 35): the whole reply through the kernel within 1.10x of the SDK alone.

    python bench/acp_client.py [--deltas 20000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Run as `python bench/acp_client.py`, this file's folder comes first on sys.path and `bench/acp.py` would
# shadow the SDK's package `acp`.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from acp.schema import AgentMessageChunk, ClientCapabilities  # noqa: E402
from jupyter_client.manager import start_new_kernel  # noqa: E402

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block  # noqa: E402


def reply(deltas: int) -> dict[str, Any]:
    return {"steps": [{"kind": "text", "text": "".join(f"{i % 10}" for i in range(deltas)), "chunk_size": 1}]}


class _Chars:
    def __init__(self) -> None:
        self.chars = 0

    def on_connect(self, conn: Any) -> None:
        del conn

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if isinstance(update, AgentMessageChunk):
            self.chars += len(update.content.text)

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the bench asks for nothing")


async def sdk_round(conn: Any, session_id: str, chars: _Chars, deltas: int) -> float:
    chars.__init__()  # type: ignore[misc]
    started = time.perf_counter()
    await conn.prompt(session_id=session_id, prompt=[text_block("go")])
    took = time.perf_counter() - started
    assert chars.chars == deltas, chars.chars
    return took


def kernel_round(kc: Any, deltas: int) -> float:
    started = time.perf_counter()
    msg_id = kc.execute("go")
    while True:
        reply_ = kc.get_shell_msg(timeout=300)
        if reply_["parent_header"].get("msg_id") == msg_id:
            break
    took = time.perf_counter() - started
    assert reply_["content"]["status"] == "ok", reply_["content"]
    return took


async def run(tmp: Path, deltas: int, rounds: int) -> tuple[list[float], list[float]]:
    script = [{"steps": [{"kind": "text", "text": "ready"}]}, *[reply(deltas)] * rounds]
    (tmp / "sdk.json").write_text(json.dumps(script))
    (tmp / "kernel.json").write_text(json.dumps(script))
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    sdk_env = {**base, "AGENTCELL_DB": str(tmp / "sdk.db"), "AGENTCELL_MODEL": f"scripted:{tmp / 'sdk.json'}"}
    kernel_env = {**base, "AGENTCELL_DB": str(tmp / "kernel.db"), "AGENTCELL_MODEL": f"scripted:{tmp / 'kernel.json'}"}
    (tmp / "nb").mkdir()
    kernel_env["JPY_SESSION_NAME"] = str(tmp / "nb" / "bench.ipynb")
    km, kc = start_new_kernel(kernel_name="agentcell", env=kernel_env, cwd=str(tmp / "nb"), startup_timeout=60)
    chars = _Chars()
    sdk: list[float] = []
    kernel: list[float] = []
    try:
        kc.execute_interactive("%agent acp agentcell", timeout=60)
        kc.execute_interactive("ready?", timeout=120)  # starts the agent: its imports, the store
        async with spawn_agent_process(chars, sys.executable, "-m", "agentcell.cli", "acp", env=sdk_env) as (conn, _):
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
            session = await conn.new_session(cwd=str(tmp), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[text_block("ready?")])
            for _ in range(rounds):
                sdk.append(await sdk_round(conn, session.session_id, chars, deltas))
                kernel.append(await asyncio.to_thread(kernel_round, kc, deltas))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return sdk, kernel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        sdk, kernel = asyncio.run(run(Path(name), args.deltas, args.rounds))
    alone, through = statistics.median(sdk), statistics.median(kernel)
    ratio = through / alone
    print(f"deltas: {args.deltas:,}, median of {args.rounds} rounds")
    print(f"whole reply  SDK client alone {alone:7.3f} s   through the kernel {through:7.3f} s   "
          f"({ratio:.2f}x; target <= 1.10x: {'met' if ratio <= 1.10 else 'NOT met'})")  # fmt: skip
    print(f"rounds       SDK {', '.join(f'{t:.3f}' for t in sdk)}   kernel {', '.join(f'{t:.3f}' for t in kernel)}")


if __name__ == "__main__":
    main()
