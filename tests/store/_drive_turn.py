"""A writer in a process of its own: one scripted turn of 2,000 text deltas and 20 tool calls.

It prints ``session ID``, waits for a line on stdin, runs the turn, prints ``stop REASON`` and exits.
"""

from __future__ import annotations

import sys

from agentcell import Engine, ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedToolCall
from agentcell.tools.simple import SimpleTools

RESPONSES = 20
DELTAS_EACH = 100


def main(db: str) -> None:
    script = [
        ScriptedResponse(
            steps=[
                ScriptedText(text="x" * DELTAS_EACH, chunk_size=1, delay=0.002),
                ScriptedToolCall(name="tick", input={}),
            ]
        )
        for _ in range(RESPONSES)
    ] + [ScriptedResponse(steps=[ScriptedText(text="done")])]
    tools = SimpleTools()
    tools.add(lambda: "tock", name="tick")
    with Engine(db, providers={"scripted": ScriptedProvider(script)}, tools=tools) as engine:
        session = engine.sessions.create(agent=engine.agents.create(name="writer", model="scripted").id)
        print(f"session {session.id}", flush=True)
        sys.stdin.readline()
        result = session.send_sync("work through it")
        print(f"stop {result.stop_reason.type}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
