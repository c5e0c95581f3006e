"""``agentcell migrate``: SQLite to PostgreSQL and back, lossless, checked by checksums."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentcell import Engine, ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedToolCall
from agentcell.migrate import event_checksum
from agentcell.tools.simple import SimpleTools

from ..skill_folders import skill_folder
from .conftest import Backend

pytestmark = pytest.mark.slow


def _populate(db: str, tmp_path: Path) -> None:
    """A store with a bit of everything: agent versions, two versions of a skill with a script, sessions
    with tool calls (one terminated), a memory store with notes, a binary upload and the notebook mapping."""
    script = [
        ScriptedResponse(steps=[ScriptedText(text="let me check"), ScriptedToolCall(name="tick", input={})]),
        ScriptedResponse(steps=[ScriptedText(text="ticked: ✓ «done»")]),
    ]
    tools = SimpleTools()
    tools.add(lambda: "tock", name="tick")
    with Engine(db, providers={"scripted": ScriptedProvider(script)}, tools=tools) as engine:
        folder = skill_folder(tmp_path / "skills", "tally", files={"scripts/count.py": "print(len([1, 2]))\n"})
        skill = engine.skills.create(folder)
        (folder / "references").mkdir()
        (folder / "references" / "notes.md").write_bytes("«metric» ✓\n".encode())
        engine.skills.create(folder)
        agent = engine.agents.create(name="analyst", model="scripted", system="Be brief.")
        engine.agents.update(agent.id, system="Be very brief.", metadata={"team": "data"}, skills=[skill.id])
        other = engine.agents.create(name="helper", model="scripted")
        first = engine.sessions.create(agent=agent.id, title="with tools", budget="0.50")
        first.send_sync("tick please")
        first.send_sync("and again")
        second = engine.sessions.create(agent=other.id, version=1, title="ended")
        second.send_sync("bye")
        second.terminate()
        engine.sessions.create(agent=agent.id)  # no events at all
        memory = engine.memory_stores.create(name="team notes", description="what we learned")
        engine.memory_stores.write(memory.id, "prefs/units.md", "metric, always")
        engine.memory_stores.write(memory.id, "projects/x.md", "ships in May")
        upload = tmp_path / "data.bin"
        upload.write_bytes(bytes(range(256)) * 40)
        engine.files.upload(upload)
        engine.store.set_value(f"notebook:{tmp_path / 'analysis.ipynb'}", first.id)


def _contents(db: str) -> dict[str, Any]:
    """Everything a store holds, in a comparable form (events as stored, with their checksum)."""
    with Engine(db) as engine:
        store = engine.store
        return {
            "agents": [v.model_dump_json() for a in store.list_agents() for v in store.list_agent_versions(a.id)],
            "skills": [
                (v.model_dump_json(), [store.skill_content(f.sha256) for f in v.files])
                for s in store.list_skills()
                for v in store.list_skill_versions(s.id)
            ],
            "sessions": {
                r.id: (r.model_dump_json(), store.count_events(r.id), event_checksum(store.event_rows(r.id)))
                for r in store.list_sessions()
            },
            "events": {r.id: [row.id for row in store.event_rows(r.id)] for r in store.list_sessions()},
            "memory": [(m, store.list_notes(m.id)) for m in store.list_memory_stores()],
            "uploads": [
                (u.id, u.filename, u.size, u.sha256, u.created_at, hashlib.sha256(u.path.read_bytes()).hexdigest())
                for u in engine.files.list()
            ],
            "settings": store.list_values(),
        }


def _migrate(src: str, dst: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentcell.cli", "migrate", src, dst],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_sqlite_to_postgresql_and_back_is_lossless(tmp_path: Path, pg_url: str) -> None:
    source = str(tmp_path / "laptop.db")
    _populate(source, tmp_path)
    original = _contents(source)
    assert len(original["sessions"]) == 3 and sum(n for _, n, _ in original["sessions"].values()) > 20
    assert len(original["skills"]) == 2 and b"\xc2\xabmetric" in original["skills"][1][1][1]

    there = _migrate(source, pg_url)
    assert there.returncode == 0, there.stderr
    for session_id, (_, count, checksum) in original["sessions"].items():
        assert f"{session_id}  {count:>8,} events  sha256 {checksum[:16]}  copied" in there.stdout
    assert "checked: all 3 sessions there have the same event ids, counts and checksums" in there.stderr
    assert _contents(pg_url) == original

    back = tmp_path / "back.db"
    returned = _migrate(pg_url, str(back))
    assert returned.returncode == 0, returned.stderr
    assert _contents(str(back)) == original
    assert (tmp_path / "back.files").is_dir()  # the upload is a file again, beside the database

    again = _migrate(source, pg_url)  # a second run finds everything there and copies nothing
    assert again.returncode == 0 and again.stdout.count("already there") == 3
    assert "agent versions: 0, skill versions: 0, sessions: 0, events: 0" in again.stderr

    with Engine(pg_url, providers={"scripted": ScriptedProvider()}) as engine:  # and the copy works on
        session = engine.sessions.get(next(iter(original["sessions"])))
        assert session.usage.input_tokens > 0
        assert session.send_sync("still there?").text == "You said: still there?"


def test_a_destination_that_differs_stops_the_copy_before_anything_is_written(
    tmp_path: Path, pg_url: str, pg_server: Any
) -> None:
    source = str(tmp_path / "laptop.db")
    _populate(source, tmp_path)
    assert _migrate(source, pg_url).returncode == 0
    with Engine(source) as engine:
        memory = engine.memory_stores.list()[0]
        engine.memory_stores.write(memory.id, "projects/x.md", "slipped to June")  # now it differs
        engine.memory_stores.write(memory.id, "projects/y.md", "new")  # and this would be copied
    target = Backend("postgres", pg_url, 1, Exception, pg_server)
    before = target.fingerprint()
    refused = _migrate(source, pg_url)
    assert refused.returncode == 2
    assert "its note projects/x.md of memory store" in refused.stderr and "Nothing was copied" in refused.stderr
    assert target.fingerprint() == before
    missing = _migrate(str(tmp_path / "nowhere.db"), pg_url)
    assert missing.returncode == 2 and "no database at" in missing.stderr
