"""Both stores: location, schema versions, append-only log, reopening (the contract tests run on each)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agentcell import Engine, PostgresStore, SQLiteStore, StoreError, StoreVersionError
from agentcell.store import default_db_path, open_store

from .conftest import Backend


def test_default_location_is_in_the_jupyter_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    assert default_db_path() == tmp_path / "data" / "agentcell" / "agentcell.db"
    monkeypatch.setenv("AGENTCELL_DB", str(tmp_path / "elsewhere.db"))
    assert default_db_path() == tmp_path / "elsewhere.db"
    with Engine() as engine:
        engine.agents.create(name="a", model="scripted")
    assert (tmp_path / "elsewhere.db").exists()


def test_agentcell_db_may_name_a_postgresql_database(monkeypatch: pytest.MonkeyPatch, pg_url: str) -> None:
    monkeypatch.setenv("AGENTCELL_DB", pg_url)
    with Engine() as engine:
        assert isinstance(engine.store, PostgresStore)
        agent = engine.agents.create(name="a", model="scripted")
    with Engine(pg_url) as engine:
        assert engine.agents.get(agent.id) == agent
    with pytest.raises(StoreError, match="names a PostgreSQL database, not a file"):
        default_db_path()


def test_a_database_from_a_newer_version_is_refused_untouched(backend: Backend) -> None:
    Engine(backend.db).close()
    backend.bump_version()
    before = backend.fingerprint()
    with pytest.raises(StoreVersionError, match="newer than this agentcell supports") as info:
        open_store(backend.db)
    assert info.value.found == backend.schema_version + 1
    assert backend.fingerprint() == before
    wal = Path(f"{backend.db}-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # nothing was written, not even to the WAL


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.db"
    bogus.write_text("this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not an agentcell database"):
        SQLiteStore(bogus)
    assert bogus.read_text().startswith("this is not sqlite")


def test_a_database_that_does_not_exist_is_refused_clearly(pg_url: str) -> None:
    missing = pg_url.replace("/t_", "/missing_", 1)
    with pytest.raises(StoreError, match=r'database "missing_\w+" does not exist'):
        open_store(missing)


def test_the_event_log_is_append_only(engine: Engine, backend: Backend) -> None:
    agent = engine.agents.create(name="a", model="scripted")
    session = engine.sessions.create(agent=agent.id)
    session.send_sync("hi")
    with pytest.raises(backend.integrity_error, match="append-only"):
        backend.execute("UPDATE events SET body = '{}'")
    with pytest.raises(backend.integrity_error, match="append-only"):
        backend.execute("DELETE FROM events")
    assert engine.store.count_events(session.id) == len(session.events()) > 0


def test_events_keep_their_order_and_can_be_filtered(engine: Engine) -> None:
    agent = engine.agents.create(name="a", model="scripted")
    session = engine.sessions.create(agent=agent.id)
    session.send_sync("one")
    session.send_sync("two")
    events = session.events()
    assert [e.id for e in events] == sorted(e.id for e in events)
    messages = session.events(types=["user.message"])
    assert [m.content[0].text for m in messages] == ["one", "two"]  # type: ignore[union-attr]
    after = list(engine.store.events(session.id, after_id=messages[1].id))
    assert after[0].type == "session.status_running"
    assert engine.store.count_events(session.id) == len(events)


def test_settings_values(engine: Engine) -> None:
    assert engine.store.get_value("nb:/a.ipynb") is None
    engine.store.set_value("nb:/a.ipynb", "sesn_1")
    engine.store.set_value("nb:/a.ipynb", "sesn_2")
    assert engine.store.get_value("nb:/a.ipynb") == "sesn_2"
    engine.store.set_value("nb:/a.ipynb", None)
    assert engine.store.get_value("nb:/a.ipynb") is None


def test_a_write_blocked_by_another_process_fails_clearly_and_frees_the_store(tmp_path: Path) -> None:
    import threading

    path = tmp_path / "busy.db"
    store = SQLiteStore(path, busy_timeout=0.1)
    other = sqlite3.connect(path, isolation_level=None)  # another process, as far as locks go
    other.execute("BEGIN IMMEDIATE")
    with pytest.raises(StoreError, match="is another process busy"):
        store.set_value("k", "v")
    other.execute("ROLLBACK")
    other.close()
    done = threading.Event()

    def reader() -> None:
        store.get_value("k")
        done.set()

    threading.Thread(target=reader).start()
    assert done.wait(5), "the store's lock was left held after the failed write"
    store.set_value("k", "v")  # and it writes again
    assert store.get_value("k") == "v"
    store.close()


def test_a_reopened_session_is_the_same_on_both_stores(backend: Backend) -> None:
    with Engine(backend.db) as engine:
        agent = engine.agents.create(name="a", model="scripted")
        session = engine.sessions.create(agent=agent.id, title="t", budget="1.00")
        session.send_sync("hello")
        usage, events = session.usage, [e.model_dump_json() for e in session.events()]
    with Engine(backend.db) as engine:
        again = engine.sessions.get(session.id)
        assert [e.model_dump_json() for e in again.events()] == events
        assert again.usage == usage and again.title == "t" and again.agent == agent
        assert len(again.history().messages()) == 2
