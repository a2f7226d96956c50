-- 0001: the first schema.

CREATE TABLE profiles (
    name         TEXT PRIMARY KEY NOT NULL,
    created_at   TEXT NOT NULL,
    last_used_at TEXT,
    note         TEXT NOT NULL DEFAULT ''
);

CREATE TABLE snapshots (
    id             TEXT PRIMARY KEY NOT NULL,
    profile        TEXT NOT NULL,
    object_key     TEXT NOT NULL,
    manifest_key   TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    archive_size   INTEGER NOT NULL DEFAULT 0,
    archive_sha256 TEXT NOT NULL DEFAULT '',
    raw_size       INTEGER NOT NULL DEFAULT 0,
    file_count     INTEGER NOT NULL DEFAULT 0,
    chrome_version TEXT NOT NULL DEFAULT '',
    host           TEXT NOT NULL DEFAULT '',
    os             TEXT NOT NULL DEFAULT '',
    note           TEXT NOT NULL DEFAULT '',
    encrypted      INTEGER NOT NULL DEFAULT 0 CHECK (encrypted IN (0, 1))
);
CREATE INDEX snapshots_profile_created ON snapshots (profile, created_at);
CREATE INDEX snapshots_created ON snapshots (created_at);

CREATE TABLE runs (
    id          TEXT PRIMARY KEY NOT NULL,
    workflow    TEXT NOT NULL DEFAULT '',
    file        TEXT NOT NULL DEFAULT '',
    profile     TEXT,
    status      TEXT NOT NULL,
    error_code  TEXT NOT NULL DEFAULT '',
    started_at  TEXT NOT NULL,
    ended_at    TEXT,
    -- The snapshot the run took. Not a foreign key: the run's history keeps
    -- the id after prune deletes the snapshot, and a run is never lost
    -- because its snapshot row is missing.
    snapshot_id TEXT
);
CREATE INDEX runs_started ON runs (started_at);

CREATE TABLE sessions (
    id           TEXT PRIMARY KEY NOT NULL,
    profile      TEXT,
    state        TEXT NOT NULL,
    started_at   TEXT NOT NULL,
    ended_at     TEXT,
    end_reason   TEXT NOT NULL DEFAULT '',
    action_count INTEGER NOT NULL DEFAULT 0,
    run_id       TEXT REFERENCES runs (id) ON DELETE SET NULL
);
CREATE INDEX sessions_started ON sessions (started_at);

CREATE TABLE audit_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          TEXT NOT NULL,
    session_id  TEXT NOT NULL DEFAULT '',
    profile     TEXT NOT NULL DEFAULT '',
    kind        TEXT NOT NULL,
    action      TEXT NOT NULL DEFAULT '',
    tab         TEXT NOT NULL DEFAULT '',
    domain      TEXT NOT NULL DEFAULT '',
    duration_ms INTEGER NOT NULL DEFAULT 0,
    result_code TEXT NOT NULL DEFAULT '',
    detail      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_events_at ON audit_events (at, id);
CREATE INDEX audit_events_profile ON audit_events (profile, at);
CREATE INDEX audit_events_session ON audit_events (session_id, at);
