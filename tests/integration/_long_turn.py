"""Child process for the crash test: runs a long scripted turn and prints each buffered event's id once it
is stored, so the parent knows exactly what was committed before it kills this process."""

from __future__ import annotations

import sys

from agentcell import Engine, ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedToolCall
from agentcell.tools.simple import SimpleTools


def main(db: str) -> None:
    script = [
        ScriptedResponse(
            steps=[
                ScriptedText(text=f"step {n} " * 20, chunk_size=7, delay=0.002),
                ScriptedToolCall(name="tick"),
            ]
        )
        for n in range(500)
    ]
    tools = SimpleTools()
    tools.add(lambda: "tock", name="tick")
    engine = Engine(db, providers={"scripted": ScriptedProvider(script)}, tools=tools)
    agent = engine.agents.create(name="crash", model="scripted")
    session = engine.sessions.create(agent=agent.id, max_turns=1000)
    print(f"session {session.id}", flush=True)

    def report(item: object) -> None:
        if not getattr(item, "type", "event_").startswith("event_"):
            print(f"event {item.id}", flush=True)  # type: ignore[attr-defined]

    session.subscribe(report)
    session.send_sync("run for a long time")


if __name__ == "__main__":
    main(sys.argv[1])
