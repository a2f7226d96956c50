-- A catalog as one of the first directors left it: schema 1, written by the
-- build of commit 8fbba2c (before migration 0002), then dumped with
-- `sqlite3 director.db .dump` (which leaves out user_version: set at the end).
-- It ran `run` (a login workflow that took a snapshot), a second
-- `profile snapshot`, and a run it was killed in (kill -9) that stayed
-- "running", with its session "active". The store was
-- s3://director-test/c?endpoint=127.0.0.1:39917&insecure=true.
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE profiles (
    name         TEXT PRIMARY KEY NOT NULL,
    created_at   TEXT NOT NULL,
    last_used_at TEXT,
    note         TEXT NOT NULL DEFAULT ''
);
INSERT INTO profiles VALUES('demo','2026-11-24T10:35:43.324000602Z','2026-11-24T10:35:44.294218616Z','');
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
INSERT INTO snapshots VALUES('demo-20261124T103544Z-2mlt','demo','demo/demo-20261124T103544Z-2mlt.tar.zst.age','demo/demo-20261124T103544Z-2mlt.manifest.json.age','2026-11-24T10:35:44.262634033Z',53238,'558d08e2c456482c32843f1ab5f1007354438e75a7cc55b175cf8d243a332a2c',954200,117,'156.0.8078.79','vm','linux','workflow demo login (run wzsfoo)',1);
INSERT INTO snapshots VALUES('demo-20261124T103544Z-su23','demo','demo/demo-20261124T103544Z-su23.tar.zst.age','demo/demo-20261124T103544Z-su23.manifest.json.age','2026-11-24T10:35:44.294218616Z',53215,'f3e5c5fe92d41c57181fec250f41d0836d76acee1f06cd5204dd48593e410047',954200,117,'156.0.8078.79','vm','linux','c-second',1);
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
INSERT INTO runs VALUES('wzsfoo','demo login','/tmp/h-e-old-1/scripts/demo/login.yaml','demo','ok','','2026-11-24T10:35:43.333024117Z','2026-11-24T10:35:44.285475599Z','demo-20261124T103544Z-2mlt');
INSERT INTO runs VALUES('puqcs4','hold','/tmp/h-e-work/hold.yaml','demo','running','','2026-11-24T10:35:44.325312616Z',NULL,NULL);
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
INSERT INTO sessions VALUES('nvvssh','demo','ended','2026-11-24T10:35:43.333462712Z','2026-11-24T10:35:44.262552782Z','completed',8,'wzsfoo');
INSERT INTO sessions VALUES('m767hh','demo','active','2026-11-24T10:35:44.326017638Z',NULL,'',0,'puqcs4');
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
INSERT INTO audit_events VALUES(1,'2026-11-24T10:35:43.722969773Z','nvvssh','demo','session_start','','t1','',0,'ok','');
INSERT INTO audit_events VALUES(2,'2026-11-24T10:35:43.781782587Z','nvvssh','demo','action','navigate','t1','127.0.0.1',58,'ok','');
INSERT INTO audit_events VALUES(3,'2026-11-24T10:35:43.849692136Z','nvvssh','demo','action','type','t1','127.0.0.1',67,'ok','selector=#username len=5');
INSERT INTO audit_events VALUES(4,'2026-11-24T10:35:43.903721672Z','nvvssh','demo','action','type','t1','127.0.0.1',53,'ok','selector=#password len=6');
INSERT INTO audit_events VALUES(5,'2026-11-24T10:35:43.918411503Z','nvvssh','demo','action','click','t1','127.0.0.1',14,'ok','selector=#submit');
INSERT INTO audit_events VALUES(6,'2026-11-24T10:35:44.001744628Z','nvvssh','demo','action','wait_for','t1','127.0.0.1',83,'ok','selector=#whoami');
INSERT INTO audit_events VALUES(7,'2026-11-24T10:35:44.038255452Z','nvvssh','demo','action','navigate','t1','127.0.0.1',36,'ok','');
INSERT INTO audit_events VALUES(8,'2026-11-24T10:35:44.097830593Z','nvvssh','demo','action','wait_for','t1','127.0.0.1',59,'ok','selector=#ready');
INSERT INTO audit_events VALUES(9,'2026-11-24T10:35:44.134298003Z','nvvssh','demo','action','login_check','t1','127.0.0.1',36,'ok','');
INSERT INTO audit_events VALUES(10,'2026-11-24T10:35:44.262365493Z','nvvssh','demo','session_end','','','',541,'ok','reason=completed actions=8');
INSERT INTO audit_events VALUES(11,'2026-11-24T10:35:44.792440853Z','m767hh','demo','session_start','','t1','',0,'ok','');
DELETE FROM sqlite_sequence;
INSERT INTO sqlite_sequence VALUES('audit_events',11);
CREATE INDEX snapshots_profile_created ON snapshots (profile, created_at);
CREATE INDEX snapshots_created ON snapshots (created_at);
CREATE INDEX runs_started ON runs (started_at);
CREATE INDEX sessions_started ON sessions (started_at);
CREATE INDEX audit_events_at ON audit_events (at, id);
CREATE INDEX audit_events_profile ON audit_events (profile, at);
CREATE INDEX audit_events_session ON audit_events (session_id, at);
COMMIT;
PRAGMA user_version = 1;
