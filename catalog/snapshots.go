package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"director/errcode"
)

// Snapshot is one row of the snapshots table: an archive in the store and
// the facts of its manifest.
type Snapshot struct {
	ID            string    `json:"id"`
	Profile       string    `json:"profile"`
	ObjectKey     string    `json:"object_key"`
	ManifestKey   string    `json:"manifest_key"`
	CreatedAt     time.Time `json:"created_at"`
	ArchiveSize   int64     `json:"archive_size"`
	ArchiveSHA256 string    `json:"archive_sha256"`
	RawSize       int64     `json:"raw_size"`
	FileCount     int64     `json:"file_count"`
	ChromeVersion string    `json:"chrome_version,omitempty"`
	Host          string    `json:"host,omitempty"`
	OS            string    `json:"os,omitempty"`
	Note          string    `json:"note,omitempty"`
	Encrypted     bool      `json:"encrypted"`
}

func (s Snapshot) validate() error {
	switch {
	case s.ID == "":
		return errcode.New(errcode.Internal, "catalog: snapshot without an id")
	case s.Profile == "":
		return errcode.New(errcode.Internal, "catalog: snapshot %s without a profile", s.ID)
	case s.ObjectKey == "":
		return errcode.New(errcode.Internal, "catalog: snapshot %s without an object key", s.ID)
	case s.CreatedAt.IsZero():
		return errcode.New(errcode.Internal, "catalog: snapshot %s without a creation time", s.ID)
	}
	return nil
}

const snapshotCols = `id, profile, object_key, manifest_key, created_at, archive_size, archive_sha256,
	raw_size, file_count, chrome_version, host, os, note, encrypted`

func snapshotArgs(s Snapshot) []any {
	return []any{s.ID, s.Profile, s.ObjectKey, s.ManifestKey, fmtTime(s.CreatedAt), s.ArchiveSize,
		s.ArchiveSHA256, s.RawSize, s.FileCount, s.ChromeVersion, s.Host, s.OS, s.Note, s.Encrypted}
}

// InsertSnapshot records a new snapshot. An id that is already in the
// catalog is an error matching ErrExists.
func (db *DB) InsertSnapshot(ctx context.Context, s Snapshot) error {
	if err := s.validate(); err != nil {
		return err
	}
	_, err := db.sql.ExecContext(ctx,
		`INSERT INTO snapshots (`+snapshotCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, snapshotArgs(s)...)
	if isConstraint(err) {
		return &errcode.Error{
			Code: errcode.Internal,
			Msg:  fmt.Sprintf("catalog: snapshot %s", s.ID),
			Hint: "snapshot ids are unique; take the snapshot again",
			Err:  fmt.Errorf("%w (%v)", ErrExists, err),
		}
	}
	if err != nil {
		return queryErr(err, "cannot record snapshot "+s.ID)
	}
	return nil
}

// UpsertSnapshot inserts s or replaces the row with its id; catalog rebuild
// uses it to make the catalog agree with the manifests in the store.
func (db *DB) UpsertSnapshot(ctx context.Context, s Snapshot) error {
	if err := s.validate(); err != nil {
		return err
	}
	_, err := db.sql.ExecContext(ctx,
		`INSERT INTO snapshots (`+snapshotCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT (id) DO UPDATE SET
			profile = excluded.profile, object_key = excluded.object_key, manifest_key = excluded.manifest_key,
			created_at = excluded.created_at, archive_size = excluded.archive_size,
			archive_sha256 = excluded.archive_sha256, raw_size = excluded.raw_size,
			file_count = excluded.file_count, chrome_version = excluded.chrome_version, host = excluded.host,
			os = excluded.os, note = excluded.note, encrypted = excluded.encrypted`, snapshotArgs(s)...)
	if err != nil {
		return queryErr(err, "cannot record snapshot "+s.ID)
	}
	return nil
}

type rowScanner interface{ Scan(dest ...any) error }

func scanSnapshot(r rowScanner) (Snapshot, error) {
	var s Snapshot
	var created string
	if err := r.Scan(&s.ID, &s.Profile, &s.ObjectKey, &s.ManifestKey, &created, &s.ArchiveSize,
		&s.ArchiveSHA256, &s.RawSize, &s.FileCount, &s.ChromeVersion, &s.Host, &s.OS, &s.Note, &s.Encrypted); err != nil {
		return s, err
	}
	t, err := parseTime(created)
	if err != nil {
		return s, err
	}
	s.CreatedAt = t
	return s, nil
}

// GetSnapshot returns the snapshot with id, or a snapshot_not_found error.
func (db *DB) GetSnapshot(ctx context.Context, id string) (Snapshot, error) {
	s, err := scanSnapshot(db.sql.QueryRowContext(ctx, `SELECT `+snapshotCols+` FROM snapshots WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return s, errcode.New(errcode.SnapshotNotFound, "no snapshot %q in the catalog", id).
			WithHint("list the snapshots with: director profile snapshots NAME (or run director catalog rebuild if the store has it)")
	}
	if err != nil {
		return s, queryErr(err, "cannot read snapshot "+id)
	}
	return s, nil
}

// LatestSnapshot returns the newest snapshot of profile, or a
// snapshot_not_found error when it has none.
func (db *DB) LatestSnapshot(ctx context.Context, profile string) (Snapshot, error) {
	s, err := scanSnapshot(db.sql.QueryRowContext(ctx,
		`SELECT `+snapshotCols+` FROM snapshots WHERE profile = ? ORDER BY created_at DESC, id DESC LIMIT 1`, profile))
	if errors.Is(err, sql.ErrNoRows) {
		return s, errcode.New(errcode.SnapshotNotFound, "profile %q has no snapshot in the catalog", profile).
			WithHint("take one with: director profile snapshot %s (or run director catalog rebuild if the store has some)", profile)
	}
	if err != nil {
		return s, queryErr(err, "cannot read the latest snapshot of "+profile)
	}
	return s, nil
}

// ListSnapshots returns the snapshots of profile ("" = every profile), newest
// first.
func (db *DB) ListSnapshots(ctx context.Context, profile string) ([]Snapshot, error) {
	q, args := byProfileNewestFirst(snapshotCols, "snapshots", "created_at", profile, 0)
	return queryAll(ctx, db, "cannot list snapshots", q, args, scanSnapshot)
}

// DeleteSnapshot removes the row of id (not the archive); a missing id is a
// snapshot_not_found error.
func (db *DB) DeleteSnapshot(ctx context.Context, id string) error {
	res, err := db.sql.ExecContext(ctx, `DELETE FROM snapshots WHERE id = ?`, id)
	if err != nil {
		return queryErr(err, "cannot delete snapshot "+id)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errcode.New(errcode.SnapshotNotFound, "no snapshot %q in the catalog", id).
			WithHint("list the snapshots with: director profile snapshots NAME")
	}
	return nil
}

// SnapshotIDs returns the set of every snapshot id in the catalog, for
// catalog rebuild to tell new manifests from known ones.
func (db *DB) SnapshotIDs(ctx context.Context) (map[string]bool, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT id FROM snapshots`)
	if err != nil {
		return nil, queryErr(err, "cannot list snapshot ids")
	}
	defer rows.Close()
	ids := make(map[string]bool)
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, queryErr(err, "cannot list snapshot ids")
		}
		ids[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, queryErr(err, "cannot list snapshot ids")
	}
	return ids, nil
}
