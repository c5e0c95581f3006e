"""Event store: append rate and reopen time of a 100,000-event session.

Targets (issue 2): ≥ 20,000 events/s appended, reopen ≤ 1 s. Baseline, measured in the same run: raw
sqlite3 inserting the same pre-serialized rows with the same pragmas and schema, one commit per event —
the ceiling for a durable per-event append in Python.

    python bench/store.py [--events 100000]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from agentcell import Engine
from agentcell import events as ev
from agentcell.ids import new_id
from agentcell.store.sqlite import _SCHEMA
from agentcell.usage import Usage


def make_events(session_id: str, count: int) -> list[ev.Event]:
    """A realistic mix: messages, tool uses/results, spans and usage snapshots."""
    out: list[ev.Event] = []
    usage = Usage()
    for i in range(count):
        base = {"id": new_id("sevt"), "created_at": datetime.now(UTC), "session_id": session_id}
        kind = i % 5
        if kind == 0:
            out.append(ev.AgentMessage(**base, content=[ev.TextBlock(text=f"answer {i} " * 12)]))
        elif kind == 1:
            out.append(ev.AgentToolUse(**base, call_id=f"toolu_{i}", name="python", input={"code": f"x = {i}"}))
        elif kind == 2:
            out.append(ev.AgentToolResult(**base, tool_use_id=f"sevt_{i}", content=[ev.TextBlock(text=str(i))]))
        elif kind == 3:
            out.append(ev.SpanModelRequestEnd(**base, model_request_start_id="s", model_usage=Usage(input_tokens=i)))
        else:
            usage = usage + Usage(input_tokens=100, output_tokens=10, list_cost=Decimal("0.00045"))
            out.append(ev.SessionUsageEvent(**base, usage=usage))
    return out


def raw_baseline(path: Path, rows: list[tuple[str, str, str, str]]) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    for statement in _SCHEMA.split(";\n"):
        if statement.strip():
            conn.execute(statement)
    started = time.perf_counter()
    for row in rows:
        conn.execute("INSERT INTO events (id, session_id, type, body) VALUES (?, ?, ?, ?)", row)
    elapsed = time.perf_counter() - started
    conn.close()
    return len(rows) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    count = parser.parse_args().events

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        engine = Engine(db)
        agent = engine.agents.create(name="bench", model="scripted")
        session = engine.sessions.create(agent=agent.id, budget="100")
        events = make_events(session.id, count)

        started = time.perf_counter()
        for event in events:
            engine.store.append(event)
        ours = count / (time.perf_counter() - started)
        engine.close()

        rows = [(e.id, e.session_id, e.type, e.model_dump_json()) for e in make_events("sesn_raw", count)]
        raw = raw_baseline(Path(tmp) / "raw.db", rows)

        started = time.perf_counter()
        reopened_engine = Engine(db)
        reopened = reopened_engine.sessions.get(session.id)
        usage, stats, agent_version = reopened.usage, reopened.stats, reopened.agent.version
        reopen = time.perf_counter() - started

        started = time.perf_counter()
        messages = reopened.history().messages()
        history = time.perf_counter() - started
        reopened_engine.close()

    print(f"events appended:      {count:,}")
    print(f"append rate (ours):   {ours:,.0f} events/s   target >= 20,000")
    print(f"append rate (raw):    {raw:,.0f} events/s   (sqlite3, same pragmas, pre-serialized rows)")
    print(f"ratio ours / raw:     {ours / raw:.2f}x")
    print(
        f"reopen session:       {reopen * 1000:.1f} ms   target <= 1000 ms "
        f"(open + get + usage ${usage.list_cost} + stats {stats.active_seconds:.0f}s "
        f"+ agent v{agent_version})"
    )
    print(
        f"rebuild full history: {history * 1000:.1f} ms   ({len(messages):,} messages from {count:,} events; "
        "done lazily on the first send, not on reopen)"
    )


if __name__ == "__main__":
    main()
