"""The Store contract, on both stores: agents, memory, settings, raw rows, uploads, following, leases."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentcell import (
    Engine,
    Event,
    InvalidInputError,
    PostgresStore,
    ScriptedProvider,
    SessionDrivenElsewhereError,
    SessionNotFoundError,
    StoreError,
)
from agentcell import events as ev
from agentcell.records.agent import Agent
from agentcell.records.skill import SkillRef
from agentcell.store import open_store

from ..skill_folders import skill_folder
from .conftest import Backend


def test_agent_versions_are_immutable_and_listed_by_latest(engine: Engine) -> None:
    first = engine.agents.create(name="a", model="scripted", system="one")
    second = engine.agents.update(first.id, system="two")
    other = engine.agents.create(name="b", model="scripted")
    assert [a.version for a in engine.agents.versions(first.id)] == [1, 2]
    assert {a.id: a.version for a in engine.agents.list()} == {first.id: 2, other.id: 1}
    assert engine.agents.get(first.id, 1) == first and engine.agents.get(first.id) == second
    with pytest.raises(StoreError, match="versions are immutable"):
        engine.store.put_agent_version(Agent.model_validate(first.model_dump() | {"system": "changed"}))
    engine.store.put_agent_version(first)  # the very same version again (a retried write) is no conflict


def test_memory_notes_sort_byte_by_byte_and_keep_their_times(engine: Engine) -> None:
    store = engine.memory_stores.create(name="team", description="what we learned")
    for path in ("b/2.md", "a/10.md", "B/x.md", "a/1.md"):
        engine.memory_stores.write(store.id, path, f"note {path}")
    assert [n.path for n in engine.memory_stores.notes(store.id)] == ["B/x.md", "a/1.md", "a/10.md", "b/2.md"]
    assert [n.path for n in engine.memory_stores.notes(store.id, "a/")] == ["a/1.md", "a/10.md"]
    written = engine.memory_stores.write(store.id, "a/1.md", "replaced")
    assert engine.memory_stores.read(store.id, "a/1.md") == written
    engine.memory_stores.delete(store.id, "b/2.md")
    assert engine.store.get_note(store.id, "b/2.md") is None
    assert engine.store.delete_note(store.id, "b/2.md") is False
    assert engine.memory_stores.get(store.id) == store and engine.memory_stores.list() == [store]


def test_settings_are_listed_and_raw_rows_are_the_stored_events(engine: Engine) -> None:
    engine.store.set_value("notebook:/b.ipynb", "sesn_b")
    engine.store.set_value("notebook:/a.ipynb", "sesn_a")
    assert engine.store.list_values() == {"notebook:/a.ipynb": "sesn_a", "notebook:/b.ipynb": "sesn_b"}
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    session.send_sync("hi")
    rows = engine.store.event_rows(session.id)
    assert [(r.id, r.type, r.body) for r in rows] == [(e.id, e.type, e.model_dump_json()) for e in session.events()]


def test_uploads_are_kept_listed_mounted_and_deleted(engine: Engine, backend: Backend, tmp_path: Path) -> None:
    source = tmp_path / "sales.csv"
    source.write_bytes(b"month,total\njan,10\n")
    file_id = engine.files.upload(source)
    source.write_text("changed after the upload\n")
    upload = engine.files.get(file_id)
    assert (upload.filename, upload.size, upload.path.read_bytes()) == ("sales.csv", 19, b"month,total\njan,10\n")
    assert engine.files.list() == [upload]
    if backend.kind == "postgres":  # in the database itself: another kernel, with no copy of its own, mounts it
        assert engine.store.files is not None and engine.store.files.file_content(file_id) == b"month,total\njan,10\n"
        with Engine(backend.db, data_dir=tmp_path / "other-kernel") as other:
            elsewhere = other.files.get(file_id)
            assert elsewhere.path != upload.path and elsewhere.path.read_bytes() == b"month,total\njan,10\n"
    engine.files.delete(file_id)
    assert engine.files.list() == []
    with pytest.raises(Exception, match="no uploaded file"):
        engine.files.get(file_id)


def test_an_upload_over_the_databases_cap_is_refused_before_it_is_read(pg_url: str, tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(b"x" * 2048)
    with Engine(store=PostgresStore(pg_url, max_file_bytes=1024)) as engine:
        with pytest.raises(InvalidInputError, match="keeps uploads of at most"):
            engine.files.upload(big)
        assert engine.files.list() == []


async def _collect(engine: Engine, session_id: str, until: str, after: str | None = None) -> list[Event]:
    seen: list[Event] = []
    async for event in engine.sessions.follow(session_id, after=after):
        seen.append(event)
        if event.type == until:
            return seen
    return seen


async def test_a_follower_sees_every_event_as_it_commits_in_order(engine: Engine) -> None:
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    await session.ask("first")
    earlier = session.events()
    follower = asyncio.create_task(_collect(engine, session.id, "session.status_idle", after=earlier[-1].id))
    await asyncio.sleep(0)  # the follower is listening before the turn starts
    await session.ask("second")
    followed = await asyncio.wait_for(follower, 20)
    assert [e.id for e in followed] == [e.id for e in session.events()[len(earlier) :]]
    assert followed[0].type == "user.message" and followed[-1].type == "session.status_idle"
    from_start = await asyncio.wait_for(_collect(engine, session.id, "session.status_idle"), 20)
    assert [e.id for e in from_start] == [e.id for e in earlier]  # without `after`: from the beginning


async def test_following_ends_at_termination_and_refuses_unknown_ids(engine: Engine) -> None:
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    await session.ask("hi")
    session.terminate()
    followed = await asyncio.wait_for(_collect(engine, session.id, "never"), 20)
    assert followed[-1].type == "session.status_terminated" and len(followed) == len(session.events())
    with pytest.raises(SessionNotFoundError):
        engine.sessions.follow("sesn_nope")
    with pytest.raises(InvalidInputError, match="no event 'sevt_nope'"):
        engine.sessions.follow(session.id, after="sevt_nope")


async def test_one_driver_per_session(backend: Backend) -> None:
    """A second kernel may read the session but not drive it while the first holds it (on SQLite too: two
    kernels of one person on one notebook)."""
    first = Engine(backend.db)
    second = Engine(backend.db)
    try:
        session = first.sessions.create(agent=first.agents.create(name="a", model="scripted").id)
        lease = first.store.take_lease(session.id)
        elsewhere = second.sessions.get(session.id)
        with pytest.raises(SessionDrivenElsewhereError, match=rf"session {session.id} is being driven by another"):
            await elsewhere.ask("hi")
        if backend.kind == "postgres":  # the shared store also guards each append
            with pytest.raises(SessionDrivenElsewhereError):  # nor write to it outside a turn
                elsewhere.update(title="mine")
        assert elsewhere.events() == [] and elsewhere.status == "idle"
        lease.release()
        assert (await elsewhere.ask("hi")).text == "You said: hi"
        assert [e.type for e in session.events()][-1] == "session.status_idle"  # the first reads it all
    finally:
        first.close()
        second.close()


async def test_a_kernel_that_takes_over_sends_the_history_others_wrote(backend: Backend) -> None:
    providers = (ScriptedProvider(), ScriptedProvider())
    first = Engine(backend.db, providers={"scripted": providers[0]})
    second = Engine(backend.db, providers={"scripted": providers[1]})
    try:
        session = first.sessions.create(agent=first.agents.create(name="a", model="scripted").id)
        await session.ask("one")
        mine = second.sessions.get(session.id)
        await mine.ask("two")
        await session.ask("three")  # the first kernel's handle was opened before "two"
        texts = [m.content[0].text for m in providers[0].requests[-1].messages]  # type: ignore[union-attr]
        assert texts == ["one", "You said: one", "two", "You said: two", "three"]
        with Engine(backend.db) as fresh:  # the cumulative usage counted all three turns, not two
            assert session.usage == fresh.sessions.get(session.id).usage
            assert session.usage.input_tokens > mine.usage.input_tokens
    finally:
        first.close()
        second.close()


def test_skill_versions_are_immutable_and_their_contents_kept_once(engine: Engine, tmp_path: Path) -> None:
    folder = skill_folder(tmp_path, "tally", files={"scripts/count.py": "print(2)\n", "assets/logo.bin": "\x00\x01"})
    first = engine.skills.create(folder)
    assert engine.skills.create(folder) == first  # the same folder twice is one version
    (folder / "references").mkdir()
    (folder / "references" / "notes.md").write_text("more\n")
    second = engine.skills.create(folder)
    other = engine.skills.create(skill_folder(tmp_path / "b", "other", files={"scripts/count.py": "print(2)\n"}))
    assert (second.id, second.version, other.version) == (first.id, 2, 1)
    assert engine.store.list_skills() == [second, other]
    assert engine.store.list_skill_versions(first.id) == [first, second]
    assert engine.store.get_skill_version(first.id, None) == second
    assert engine.store.get_skill_version(first.id, 1) == first
    assert engine.skills.content(first, "assets/logo.bin") == b"\x00\x01"
    with pytest.raises(StoreError, match="versions are immutable"):
        engine.store.put_skill_version(first.model_copy(update={"description": "changed"}), {})
    engine.store.put_skill_version(first, {})  # the very same version again (a retried write) is no conflict
    shared = next(f.sha256 for f in other.files if f.path == "scripts/count.py")
    assert engine.store.delete_skill(first.id) is True
    assert engine.store.get_skill_version(first.id, 1) is None and engine.store.list_skills() == [other]
    assert engine.store.skill_content(shared) == b"print(2)\n"  # the other skill still holds it
    notes = next(f.sha256 for f in second.files if f.path == "references/notes.md")
    assert engine.store.skill_content(notes) is None  # no version holds it any more
    assert engine.store.delete_skill(first.id) is False


def test_a_database_of_the_previous_schema_gains_the_skill_tables_and_its_agents_read(
    backend: Backend, tmp_path: Path
) -> None:
    with Engine(backend.db) as engine:
        agent = engine.agents.create(name="old", model="scripted")
    for table in ("skill_files", "skill_contents", "skill_versions"):
        backend.execute(f"DROP TABLE {table}")
    previous = backend.schema_version - 1
    backend.execute(
        f"PRAGMA user_version={previous}"
        if backend.kind == "sqlite"
        else f"UPDATE schema_version SET version = {previous}"
    )
    # An agent stored before skills were references: its list held bare strings.
    body = agent.model_dump_json().replace('"skills":[]', '"skills":["skill_legacy"]')
    backend.execute(f"UPDATE agent_versions SET body = '{body}'")
    with Engine(backend.db) as engine:
        assert engine.agents.get(agent.id).skills == [SkillRef(skill_id="skill_legacy")]
        skill = engine.skills.create(skill_folder(tmp_path, "fresh"))
        assert engine.skills.get(skill.id) == skill
        with pytest.raises(InvalidInputError, match="'skill_legacy', which is not stored"):
            engine.sessions.create(agent=agent.id)  # a dangling reference is refused when it would be used
    reopened = open_store(backend.db)
    try:
        assert reopened.list_skills() == [skill]
    finally:
        reopened.close()


def test_events_appended_together_are_stored_in_order_after_those_before(engine: Engine) -> None:
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    session.send_sync("hi")
    before = session.events()
    log = session._log
    batch = [log.make(ev.SessionStatusRunning), log.make(ev.SessionStatusRunning), log.make(ev.SessionStatusRunning)]
    engine.store.append_many(batch)
    engine.store.append_many(batch[:0])  # nothing to store is no write
    assert [e.id for e in engine.store.events(session.id)] == [e.id for e in [*before, *batch]]
    assert engine.store.last_event(session.id, None) == batch[-1]
