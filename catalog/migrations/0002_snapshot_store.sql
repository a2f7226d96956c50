-- 0002: every snapshot row names the store its archive lives in.
--
-- store is the store URL without credentials (what Store.String() prints,
-- e.g. file:///home/me/.director/snapshots or s3://bucket/prefix?endpoint=…),
-- so that one catalog can serve several stores (--store) and a command only
-- ever sees, resolves, prunes, deletes, verifies, restores or rebuilds the
-- rows of the store it was given.
--
-- The primary key becomes (store, id): the same snapshot copied to a second
-- store (and found there by catalog rebuild) is a second row, not a takeover
-- of the first store's row. SQLite cannot change a primary key in place, so
-- the table is rebuilt; nothing references it (runs.snapshot_id is
-- deliberately not a foreign key).
--
-- Rows written before this migration get store = ''. Each is adopted by the
-- store in which the profiles package finds its archive (DB.LegacySnapshots,
-- DB.AdoptSnapshots, before its first snapshot query).

CREATE TABLE snapshots_v2 (
    store          TEXT NOT NULL DEFAULT '',
    id             TEXT NOT NULL,
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
    encrypted      INTEGER NOT NULL DEFAULT 0 CHECK (encrypted IN (0, 1)),
    PRIMARY KEY (store, id)
);

INSERT INTO snapshots_v2 (store, id, profile, object_key, manifest_key, created_at, archive_size, archive_sha256,
    raw_size, file_count, chrome_version, host, os, note, encrypted)
SELECT '', id, profile, object_key, manifest_key, created_at, archive_size, archive_sha256,
    raw_size, file_count, chrome_version, host, os, note, encrypted
FROM snapshots;

DROP TABLE snapshots;
ALTER TABLE snapshots_v2 RENAME TO snapshots;

-- Listing and "latest" are per store and profile, newest first; the
-- adoption of store = '' rows uses its first column too.
CREATE INDEX snapshots_store_profile_created ON snapshots (store, profile, created_at);
CREATE INDEX snapshots_created ON snapshots (created_at);
