"""The ``agentcell`` command."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    from . import Engine, ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedThinking
    from .usage import flat_pricing

    script = [
        ScriptedResponse(
            steps=[
                ScriptedThinking(thinking="The user wants a greeting."),
                ScriptedText(text="Hello! I am the scripted test double, not a model.", delay=0.01),
            ]
        )
    ]
    provider = ScriptedProvider(script, pricing=flat_pricing(3, 15))
    db = Path(args.db) if args.db else Path(tempfile.mkdtemp(prefix="agentcell-demo-")) / "demo.db"
    with Engine(db, providers={"scripted": provider}) as engine:
        agent = engine.agents.create(name="demo", model="scripted", system="Be brief.")
        session = engine.sessions.create(agent=agent.id, title="demo", budget="0.50")
        print(f"session {session.id} (agent {agent.name} v{agent.version}, budget $0.50) in {db}")
        print("> hello")
        result = session.send_sync("hello")
        print(result.text)
        print(
            f"stop: {result.stop_reason.type}; usage: {session.usage.input_tokens} in / "
            f"{session.usage.output_tokens} out, list cost ${session.usage.list_cost:.6f}"
        )
        print("events:", ", ".join(e.type for e in session.events()))
    with Engine(db) as engine:
        reopened = engine.sessions.get(session.id)
        print(
            f"reopened from the store: {len(reopened.events())} events, "
            f"list cost ${reopened.usage.list_cost:.6f}"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agentcell", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run one turn of the engine on the scripted provider")
    demo.add_argument("--db", help="database file (default: a temporary one)")
    demo.set_defaults(run=_demo)
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
