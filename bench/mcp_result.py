"""A large MCP tool result over stdio: the time it takes and the memory it costs the kernel's process.

Baseline (same run): the MCP SDK's own stdio transport, whose reader re-joins and re-splits the unfinished
line on every chunk (quadratic in the message). Ours: ``McpConnection`` through the relay
(``tools/mcp_relay.py``), which shortens a message above the cap (1 MB) on the way. Each measurement runs
in a fresh process after a warm-up call (imports, the server's start), so the peak RSS it reports is the
call's own.

    python bench/mcp_result.py [--sizes 2,5,10] [--ours 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SERVER = Path(__file__).resolve().parent.parent / "tests" / "hardening" / "huge_mcp_server.py"


def _peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


async def _sdk(megabytes: int) -> tuple[float, int, int]:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async with Client(stdio_client(StdioServerParameters(command=sys.executable, args=[str(SERVER)]))) as client:
        await client.call_tool("huge", {"megabytes": 0})
        before = _peak()
        started = time.perf_counter()
        result = await client.call_tool("huge", {"megabytes": megabytes})
        elapsed = time.perf_counter() - started
        text = "".join(getattr(block, "text", "") for block in result.content)
        return elapsed, _peak() - before, len(text)


async def _ours(megabytes: int) -> tuple[float, int, int]:
    from agentcell.records.agent import McpServer
    from agentcell.tools.mcp import McpConnection

    with tempfile.TemporaryDirectory() as tmp:
        connection = McpConnection(McpServer(name="huge", command=[sys.executable, str(SERVER)]), cwd=Path(tmp))
        await connection.start()
        try:
            await connection.call("huge", {"megabytes": 0})
            before = _peak()
            started = time.perf_counter()
            result = await connection.call("huge", {"megabytes": megabytes})
            elapsed = time.perf_counter() - started
            return elapsed, _peak() - before, len(result.text_content)
        finally:
            await connection.stop()


def _measure(which: str, megabytes: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--one", which, str(megabytes)], capture_output=True, text=True, check=True
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="2,5,10", help="megabytes measured both ways")
    parser.add_argument("--ours", default="50", help="megabytes measured through the relay only")
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        which, megabytes = args.one[0], int(args.one[1])
        elapsed, peak, chars = asyncio.run((_sdk if which == "sdk" else _ours)(megabytes))
        print(json.dumps({"seconds": elapsed, "peak": peak, "chars": chars}))
        return
    print("| result | SDK transport | ours (relay, 1 MB cap) | time ratio ours / SDK |")
    print("| --- | --- | --- | --- |")
    for megabytes in [int(s) for s in args.sizes.split(",") if s]:
        sdk, ours = _measure("sdk", megabytes), _measure("ours", megabytes)
        print(
            f"| {megabytes} MB | {sdk['seconds']:.2f} s, +{sdk['peak'] / 2**20:.0f} MB peak RSS "
            f"| {ours['seconds']:.2f} s, +{ours['peak'] / 2**20:.0f} MB peak RSS, {ours['chars']:,} chars kept "
            f"| {ours['seconds'] / sdk['seconds']:.3f}x |"
        )
    for megabytes in [int(s) for s in args.ours.split(",") if s]:
        ours = _measure("ours", megabytes)
        print(
            f"| {megabytes} MB | (not run: minutes) | {ours['seconds']:.2f} s, +{ours['peak'] / 2**20:.0f} MB "
            f"peak RSS, {ours['chars']:,} chars kept | |"
        )


if __name__ == "__main__":
    main()
