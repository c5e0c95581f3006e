"""Child of bench/store.py: follows a session from another process and prints ``<event id> <monotonic ns>``
for each event as it arrives (CLOCK_MONOTONIC is the same clock in every process on Linux)."""

from __future__ import annotations

import asyncio
import sys
import time

from agentcell import Engine


async def follow(db: str, session_id: str, count: int) -> None:
    with Engine(db) as engine:
        seen = 0
        print("ready", flush=True)
        async for event in engine.sessions.follow(session_id):
            print(f"{event.id} {time.monotonic_ns()}", flush=True)
            seen += 1
            if seen == count:
                return


if __name__ == "__main__":
    asyncio.run(follow(sys.argv[1], sys.argv[2], int(sys.argv[3])))
