"""The SQLite store: location, schema versions, append-only log, reopening."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from agentcell import Engine, SQLiteStore, StoreError, StoreVersionError
from agentcell.store import SCHEMA_VERSION, default_db_path


def test_default_location_is_in_the_jupyter_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    assert default_db_path() == tmp_path / "data" / "agentcell" / "agentcell.db"
    monkeypatch.setenv("AGENTCELL_DB", str(tmp_path / "elsewhere.db"))
    assert default_db_path() == tmp_path / "elsewhere.db"
    with Engine() as engine:
        engine.agents.create(name="a", model="scripted")
    assert (tmp_path / "elsewhere.db").exists()


def test_a_database_from_a_newer_version_is_refused_untouched(db_path: Path) -> None:
    Engine(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    conn.close()
    before = hashlib.sha256(db_path.read_bytes()).hexdigest()
    with pytest.raises(StoreVersionError, match="newer than this agentcell supports") as info:
        SQLiteStore(db_path)
    assert info.value.found == SCHEMA_VERSION + 1
    assert hashlib.sha256(db_path.read_bytes()).hexdigest() == before
    wal = Path(f"{db_path}-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # nothing was written, not even to the WAL


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.db"
    bogus.write_text("this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not an agentcell database"):
        SQLiteStore(bogus)
    assert bogus.read_text().startswith("this is not sqlite")


def test_the_event_log_is_append_only(engine: Engine, db_path: Path) -> None:
    agent = engine.agents.create(name="a", model="scripted")
    session = engine.sessions.create(agent=agent.id)
    session.send_sync("hi")
    conn = sqlite3.connect(db_path)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE events SET body = '{}'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("DELETE FROM events")
    conn.close()


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
