"""Event store: append rate, reopen time of a 100,000-event session, commit → follower latency.

SQLite (issue 2): ≥ 20,000 events/s appended, reopen ≤ 1 s. Baseline, measured in the same run: raw
sqlite3 inserting the same pre-serialized rows with the same pragmas and schema, one commit per event —
the ceiling for a durable per-event append in Python.

PostgreSQL (issue 23), on a throwaway server of Debian's PostgreSQL started here (as durable as a real
one: fsync on; and again with fsync off, which shows our own overhead more): append rate ≥ 0.8x raw
psycopg inserting the same pre-serialized rows into the same table, one autocommitted INSERT each;
reopen of a 100,000-event session ≤ 1 s; commit → follower latency (a follower in another process,
woken by LISTEN/NOTIFY; on SQLite it polls) p50 ≤ 20 ms on loopback.

    python bench/store.py [--events 100000] [--pg-events 20000] [--latency-events 300]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentcell import Engine
from agentcell import events as ev
from agentcell.ids import new_id
from agentcell.store.base import EventRow
from agentcell.store.sqlite import _SCHEMA
from agentcell.usage import Usage

FOLLOWER = Path(__file__).with_name("_follower.py")


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


def sqlite_figures(count: int, latency_events: int) -> None:
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

        reopen, history, usage, stats, agent_version, messages = reopen_figures(str(db), session.id)
        latency = follower_latency(str(db), latency_events)

    print("== SQLite")
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
        f"rebuild full history: {history * 1000:.1f} ms   ({messages:,} messages from {count:,} events; "
        "done lazily on the first send, not on reopen)"
    )
    print(f"commit -> follower:   {latency}   (another process polling the file every 50 ms)")


def reopen_figures(db: str, session_id: str) -> tuple[float, float, Usage, object, int, int]:
    started = time.perf_counter()
    engine = Engine(db)
    reopened = engine.sessions.get(session_id)
    usage, stats, agent_version = reopened.usage, reopened.stats, reopened.agent.version
    reopen = time.perf_counter() - started
    started = time.perf_counter()
    messages = reopened.history().messages()
    history = time.perf_counter() - started
    engine.close()
    return reopen, history, usage, stats, agent_version, len(messages)


def follower_latency(db: str, count: int) -> str:
    """Append ``count`` events a few ms apart; a follower in another process notes when each arrives."""
    with Engine(db) as engine:
        session = engine.sessions.create(agent=engine.agents.create(name="latency", model="scripted").id)
        follower = subprocess.Popen(
            [sys.executable, str(FOLLOWER), db, session.id, str(count)], stdout=subprocess.PIPE, text=True
        )
        assert follower.stdout is not None
        assert follower.stdout.readline().strip() == "ready"
        time.sleep(1.0)  # let it connect and start listening before the first commit
        committed: dict[str, int] = {}
        for event in make_events(session.id, count):
            time.sleep(random.uniform(0.002, 0.01))
            engine.store.append(event)
            committed[event.id] = time.monotonic_ns()
        arrived = dict(line.split() for line in follower.stdout)
        follower.wait(timeout=60)
    lags = sorted((int(arrived[i]) - t) / 1e6 for i, t in committed.items())
    p50, p99 = statistics.median(lags), lags[int(len(lags) * 0.99) - 1]
    return f"p50 {p50:.1f} ms, p99 {p99:.1f} ms over {len(lags)} events"


def pg_raw_baseline(conn: Any, rows: list[EventRow], session_id: str, first: int) -> float:
    """Seconds to insert ``rows`` with raw psycopg, one autocommitted INSERT each, seq and position given."""
    started = time.perf_counter()
    for seq, row in enumerate(rows, start=first + 1):
        conn.execute(
            "INSERT INTO agentcell.events (session_id, seq, position, id, type, body) VALUES (%s, %s, %s, %s, %s, %s)",
            (session_id, seq, 10**12 + seq, row.id, row.type, row.body),
        )
    return time.perf_counter() - started


def postgres_figures(count: int, pg_events: int, latency_events: int) -> None:
    import psycopg

    from agentcell.store.pg_scratch import ScratchPostgres, find_pg_bin

    try:
        find_pg_bin()
    except Exception as exc:
        print(f"== PostgreSQL: not measured ({exc})")
        return
    for fsync in (True, False):
        server = ScratchPostgres(fsync=fsync).start()
        try:
            url = server.create_database("bench")
            engine = Engine(url)
            agent = engine.agents.create(name="bench", model="scripted")
            session = engine.sessions.create(agent=agent.id, budget="100")
            events = make_events(session.id, pg_events)
            raw_rows = [EventRow(e.id, e.type, e.model_dump_json()) for e in make_events("sesn_raw", pg_events)]
            # Interleaved rounds, so a slow moment of a shared machine does not fall on one side only; the
            # ratio is the median of the rounds' ratios.
            ours_time = raw_time = 0.0
            ratios: list[float] = []
            step = max(1, pg_events // 20)
            with psycopg.connect(url, autocommit=True) as raw_conn:
                lease = engine.store.take_lease(session.id)  # as during a turn
                for start in range(0, pg_events, step):
                    part = slice(start, start + step)
                    if start // step % 2:  # alternate which side goes first
                        raw_round = pg_raw_baseline(raw_conn, raw_rows[part], "sesn_raw", start)
                    started = time.perf_counter()
                    for event in events[part]:
                        engine.store.append(event)
                    ours_round = time.perf_counter() - started
                    if not start // step % 2:
                        raw_round = pg_raw_baseline(raw_conn, raw_rows[part], "sesn_raw", start)
                    ours_time, raw_time = ours_time + ours_round, raw_time + raw_round
                    ratios.append(raw_round / ours_round)
                lease.release()
            ours, raw = pg_events / ours_time, pg_events / raw_time
            if fsync:  # fill the session to `count` events (COPY), then reopen it
                rest = make_events(session.id, count - pg_events)
                engine.store.put_event_rows(session.id, [EventRow(e.id, e.type, e.model_dump_json()) for e in rest])
            engine.close()
            print(f"== PostgreSQL 15, fsync {'on' if fsync else 'off'}")
            print(f"append rate (ours):   {ours:,.0f} events/s   ({pg_events:,} events, PostgresStore.append)")
            print(f"append rate (raw):    {raw:,.0f} events/s   (psycopg, same rows and table, one INSERT each)")
            print(f"ratio ours / raw:     {statistics.median(ratios):.2f}x   target >= 0.8x (median of 20 rounds)")
            if fsync:
                reopen, history, usage, _, agent_version, messages = reopen_figures(url, session.id)
                print(
                    f"reopen session:       {reopen * 1000:.1f} ms   target <= 1000 ms ({count:,} events; open + "
                    f"get + usage ${usage.list_cost} + stats + agent v{agent_version})"
                )
                print(f"rebuild full history: {history * 1000:.1f} ms   ({messages:,} messages, lazily)")
                latency = follower_latency(server.create_database("latency"), latency_events)
                print(f"commit -> follower:   {latency}   target p50 <= 20 ms (LISTEN/NOTIFY, another process)")
        finally:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--pg-events", type=int, default=20_000, help="appends timed on PostgreSQL, each side")
    parser.add_argument("--latency-events", type=int, default=300)
    args = parser.parse_args()
    sqlite_figures(args.events, args.latency_events)
    postgres_figures(args.events, args.pg_events, args.latency_events)


if __name__ == "__main__":
    main()
