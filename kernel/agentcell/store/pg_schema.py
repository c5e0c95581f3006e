"""The PostgreSQL schema: every table in the ``agentcell`` schema of one database, and its version.

``agentcell.schema_version`` holds one row. A database of a newer version is refused before anything is
written; one at this version is opened without any DDL (so a role that may only read and write rows can
use it); an older or empty one is brought up to date in one transaction, under an advisory lock so that
two kernels starting together do not race.

Text keys sort and compare byte by byte (``COLLATE "C"``), as in SQLite, whatever the database's locale.

Events are keyed by ``(session_id, seq)``, with a global ``position`` in commit order (see
:mod:`.pg_append` for how appends keep both). The event log refuses updates, deletes and truncation, and
each insert notifies ``agentcell_events`` with ``session_id:seq`` (delivered when the transaction commits).
"""

from __future__ import annotations

__all__ = ["CHANNEL", "POSITION_LOCK", "SCHEMA_DDL", "SCHEMA_VERSION"]

SCHEMA_VERSION = 2
"""1: agents, sessions, events, leases, settings, memory stores and notes, uploaded files. 2: skills (their
versions, their files, and the files' contents by SHA-256)."""

CHANNEL = "agentcell_events"

POSITION_LOCK = 0x61632D706F736974  # "ac-posit": the advisory lock that orders positions by commit

SCHEMA_DDL = """
CREATE SCHEMA IF NOT EXISTS agentcell;
CREATE TABLE IF NOT EXISTS agentcell.schema_version (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    version  integer NOT NULL
);
CREATE TABLE IF NOT EXISTS agentcell.agent_versions (
    agent_id text COLLATE "C" NOT NULL,
    version  integer          NOT NULL,
    body     text             NOT NULL,
    PRIMARY KEY (agent_id, version)
);
CREATE TABLE IF NOT EXISTS agentcell.sessions (
    id         text COLLATE "C" PRIMARY KEY,
    created_at timestamptz      NOT NULL,
    body       text             NOT NULL
);
CREATE TABLE IF NOT EXISTS agentcell.events (
    session_id text COLLATE "C" NOT NULL,
    seq        bigint           NOT NULL,
    position   bigint           NOT NULL,
    id         text COLLATE "C" NOT NULL,
    type       text             NOT NULL,
    body       text             NOT NULL,
    CONSTRAINT events_pkey PRIMARY KEY (session_id, seq),
    CONSTRAINT events_id_unique UNIQUE (id),
    CONSTRAINT events_position_unique UNIQUE (position)
);
CREATE SEQUENCE IF NOT EXISTS agentcell.event_position AS bigint;
CREATE OR REPLACE FUNCTION agentcell.refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the event log is append-only';
END $$;
CREATE OR REPLACE TRIGGER events_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON agentcell.events
    FOR EACH STATEMENT EXECUTE FUNCTION agentcell.refuse_change();
CREATE OR REPLACE FUNCTION agentcell.notify_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('agentcell_events', NEW.session_id || ':' || NEW.seq);
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER events_notify AFTER INSERT ON agentcell.events
    FOR EACH ROW EXECUTE FUNCTION agentcell.notify_event();
CREATE TABLE IF NOT EXISTS agentcell.session_leases (
    session_id  text COLLATE "C" PRIMARY KEY,
    holder      text             NOT NULL,
    host        text             NOT NULL,
    pid         integer          NOT NULL,
    acquired_at timestamptz      NOT NULL,
    expires_at  timestamptz      NOT NULL
);
CREATE TABLE IF NOT EXISTS agentcell.kv (
    key   text COLLATE "C" PRIMARY KEY,
    value text             NOT NULL
);
CREATE TABLE IF NOT EXISTS agentcell.memory_stores (
    id          text COLLATE "C" PRIMARY KEY,
    name        text             NOT NULL,
    description text,
    created_at  timestamptz      NOT NULL
);
CREATE TABLE IF NOT EXISTS agentcell.memory_notes (
    store_id   text COLLATE "C" NOT NULL REFERENCES agentcell.memory_stores (id) ON DELETE CASCADE,
    path       text COLLATE "C" NOT NULL,
    content    text             NOT NULL,
    updated_at timestamptz      NOT NULL,
    PRIMARY KEY (store_id, path)
);
CREATE TABLE IF NOT EXISTS agentcell.files (
    id         text COLLATE "C" PRIMARY KEY,
    filename   text             NOT NULL,
    size       bigint           NOT NULL CHECK (size >= 0),
    sha256     text             NOT NULL,
    created_at timestamptz      NOT NULL,
    content    bytea            NOT NULL
);
CREATE TABLE IF NOT EXISTS agentcell.skill_versions (
    skill_id text COLLATE "C" NOT NULL,
    version  integer          NOT NULL,
    body     text             NOT NULL,
    PRIMARY KEY (skill_id, version)
);
CREATE TABLE IF NOT EXISTS agentcell.skill_contents (
    sha256  text COLLATE "C" PRIMARY KEY,
    content bytea            NOT NULL
);
CREATE TABLE IF NOT EXISTS agentcell.skill_files (
    skill_id text COLLATE "C" NOT NULL,
    version  integer          NOT NULL,
    path     text COLLATE "C" NOT NULL,
    sha256   text COLLATE "C" NOT NULL REFERENCES agentcell.skill_contents (sha256),
    PRIMARY KEY (skill_id, version, path),
    FOREIGN KEY (skill_id, version) REFERENCES agentcell.skill_versions (skill_id, version) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS skill_files_by_content ON agentcell.skill_files (sha256);
"""
