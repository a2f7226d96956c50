package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"director/errcode"
)

// Snapshot is one row of the snapshots table: an archive in a store and
// the facts of its manifest. A row belongs to one store; (Store, ID) is its
// key, and every query below works on one store's rows only.
type Snapshot struct {
	ID            string    `json:"id"`
	Store         string    `json:"store"` // the store URL without credentials (see StoreName)
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
	case s.Store == "":
		return errcode.New(errcode.Internal, "catalog: snapshot %s without a store", s.ID).
			WithHint("this is a director bug; report it with the command that failed")
	case s.Profile == "":
		return errcode.New(errcode.Internal, "catalog: snapshot %s without a profile", s.ID)
	case s.ObjectKey == "":
		return errcode.New(errcode.Internal, "catalog: snapshot %s without an object key", s.ID)
	case s.CreatedAt.IsZero():
		return errcode.New(errcode.Internal, "catalog: snapshot %s without a creation time", s.ID)
	}
	return nil
}

const snapshotCols = `id, store, profile, object_key, manifest_key, created_at, archive_size, archive_sha256,
	raw_size, file_count, chrome_version, host, os, note, encrypted`

func snapshotArgs(s Snapshot) []any {
	return []any{s.ID, s.Store, s.Profile, s.ObjectKey, s.ManifestKey, fmtTime(s.CreatedAt), s.ArchiveSize,
		s.ArchiveSHA256, s.RawSize, s.FileCount, s.ChromeVersion, s.Host, s.OS, s.Note, s.Encrypted}
}

// StoreName returns a store URL as the catalog records it: without any
// user:password@ part and without query parameters that look like secrets
// (key, secret, token, password, signature, credential). Everything else is
// kept as given, so a store's String() (already credential-free) is
// recorded unchanged. Every method below applies it to the store it is
// given, so a secret never reaches the catalog.
func StoreName(storeURL string) string {
	scheme, rest, ok := strings.Cut(storeURL, "://")
	if !ok {
		return storeURL
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		rest = rest[at+1:]
	}
	body, query, hasQuery := strings.Cut(rest, "?")
	if !hasQuery {
		return scheme + "://" + rest
	}
	query, frag, hasFrag := strings.Cut(query, "#")
	var kept []string
	for _, kv := range strings.Split(query, "&") {
		name, _, _ := strings.Cut(kv, "=")
		if kv == "" || secretParam(name) {
			continue
		}
		kept = append(kept, kv)
	}
	out := scheme + "://" + body
	if len(kept) > 0 {
		out += "?" + strings.Join(kept, "&")
	}
	if hasFrag {
		out += "#" + frag
	}
	return out
}

func secretParam(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"key", "secret", "token", "password", "passwd", "signature", "credential", "auth"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// storeArg checks and normalises the store a query is scoped to.
func storeArg(store string) (string, error) {
	if store = StoreName(store); store == "" {
		return "", errcode.New(errcode.Internal, "catalog: snapshot query without a store").
			WithHint("this is a director bug; report it with the command that failed")
	}
	return store, nil
}

// InsertSnapshot records a new snapshot. An id that is already in the
// catalog is an error matching ErrExists.
func (db *DB) InsertSnapshot(ctx context.Context, s Snapshot) error {
	s.Store = StoreName(s.Store)
	if err := s.validate(); err != nil {
		return err
	}
	_, err := db.sql.ExecContext(ctx,
		`INSERT INTO snapshots (`+snapshotCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, snapshotArgs(s)...)
	if isConstraint(err) {
		return &errcode.Error{
			Code: errcode.Internal,
			Msg:  fmt.Sprintf("catalog: snapshot %s in %s", s.ID, s.Store),
			Hint: "snapshot ids are unique; take the snapshot again",
			Err:  fmt.Errorf("%w (%v)", ErrExists, err),
		}
	}
	if err != nil {
		return queryErr(err, "cannot record snapshot "+s.ID)
	}
	return nil
}

// UpsertSnapshot inserts s or replaces the row with its store and id;
// catalog rebuild uses it to make the catalog agree with the manifests in
// the store. Rows of other stores are never touched.
func (db *DB) UpsertSnapshot(ctx context.Context, s Snapshot) error {
	s.Store = StoreName(s.Store)
	if err := s.validate(); err != nil {
		return err
	}
	_, err := db.sql.ExecContext(ctx,
		`INSERT INTO snapshots (`+snapshotCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT (store, id) DO UPDATE SET
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
	if err := r.Scan(&s.ID, &s.Store, &s.Profile, &s.ObjectKey, &s.ManifestKey, &created, &s.ArchiveSize,
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

// GetSnapshot returns the snapshot id of store, or a snapshot_not_found
// error (also when only another store has that id).
func (db *DB) GetSnapshot(ctx context.Context, store, id string) (Snapshot, error) {
	store, err := storeArg(store)
	if err != nil {
		return Snapshot{}, err
	}
	s, err := scanSnapshot(db.sql.QueryRowContext(ctx,
		`SELECT `+snapshotCols+` FROM snapshots WHERE store = ? AND id = ?`, store, id))
	if errors.Is(err, sql.ErrNoRows) {
		return s, errcode.New(errcode.SnapshotNotFound, "no snapshot %q of store %s in the catalog", id, store).
			WithHint("list the snapshots with: `director profile snapshots <profile>` (or run `director catalog rebuild` if the store has it); a snapshot of another store needs that --store")
	}
	if err != nil {
		return s, queryErr(err, "cannot read snapshot "+id)
	}
	return s, nil
}

// LatestSnapshot returns the newest snapshot of profile in store, or a
// snapshot_not_found error when it has none there.
func (db *DB) LatestSnapshot(ctx context.Context, store, profile string) (Snapshot, error) {
	store, err := storeArg(store)
	if err != nil {
		return Snapshot{}, err
	}
	s, err := scanSnapshot(db.sql.QueryRowContext(ctx,
		`SELECT `+snapshotCols+` FROM snapshots WHERE store = ? AND profile = ? ORDER BY created_at DESC, id DESC LIMIT 1`,
		store, profile))
	if errors.Is(err, sql.ErrNoRows) {
		return s, errcode.New(errcode.SnapshotNotFound, "profile %q has no snapshot of store %s in the catalog", profile, store).
			WithHint("take one with: `director profile snapshot %s` (or run `director catalog rebuild` if the store has some)", profile)
	}
	if err != nil {
		return s, queryErr(err, "cannot read the latest snapshot of "+profile)
	}
	return s, nil
}

// ListSnapshots returns the snapshots of profile ("" = every profile) in
// store, newest first.
func (db *DB) ListSnapshots(ctx context.Context, store, profile string) ([]Snapshot, error) {
	store, err := storeArg(store)
	if err != nil {
		return nil, err
	}
	q := `SELECT ` + snapshotCols + ` FROM snapshots WHERE store = ?`
	args := []any{store}
	if profile != "" {
		q += ` AND profile = ?`
		args = append(args, profile)
	}
	q += ` ORDER BY created_at DESC, id DESC`
	return queryAll(ctx, db, "cannot list snapshots", q, args, scanSnapshot)
}

// DeleteSnapshot removes the row of id in store (not the archive); a
// missing row is a snapshot_not_found error.
func (db *DB) DeleteSnapshot(ctx context.Context, store, id string) error {
	store, err := storeArg(store)
	if err != nil {
		return err
	}
	res, err := db.sql.ExecContext(ctx, `DELETE FROM snapshots WHERE store = ? AND id = ?`, store, id)
	if err != nil {
		return queryErr(err, "cannot delete snapshot "+id)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errcode.New(errcode.SnapshotNotFound, "no snapshot %q of store %s in the catalog", id, store).
			WithHint("list the snapshots with: `director profile snapshots <profile>`")
	}
	return nil
}

// SnapshotIDs returns the set of snapshot ids of store, for catalog
// rebuild to tell new manifests from known ones.
func (db *DB) SnapshotIDs(ctx context.Context, store string) (map[string]bool, error) {
	store, err := storeArg(store)
	if err != nil {
		return nil, err
	}
	rows, err := db.sql.QueryContext(ctx, `SELECT id FROM snapshots WHERE store = ?`, store)
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

// LegacySnapshots lists the rows written before schema 0002: those with an
// empty store, which no store lists until one adopts them.
func (db *DB) LegacySnapshots(ctx context.Context) ([]Snapshot, error) {
	q := `SELECT ` + snapshotCols + ` FROM snapshots WHERE store = '' ORDER BY created_at DESC, id DESC`
	return queryAll(ctx, db, "cannot list snapshots without a store", q, nil, scanSnapshot)
}

// AdoptSnapshots gives the rows written before schema 0002 (those with an
// empty store) whose ids are given to store, and returns how many it
// adopted. The caller (profiles) passes the ids whose archives it found in
// that store, so a first command run against another store takes nothing
// that is not there; rows no store has claimed stay listed by
// LegacySnapshots. When there is nothing to adopt the call costs one
// indexed read, without taking the write lock.
func (db *DB) AdoptSnapshots(ctx context.Context, store string, ids []string) (int64, error) {
	store, err := storeArg(store)
	if err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return 0, queryErr(err, "cannot give the snapshots without a store to "+store)
	}
	defer tx.Rollback()
	var n int64
	for _, id := range ids {
		// OR REPLACE: should this store already have a row with a legacy
		// row's id (the same snapshot found twice), the legacy copy wins;
		// both describe one manifest.
		res, err := tx.ExecContext(ctx, `UPDATE OR REPLACE snapshots SET store = ? WHERE store = '' AND id = ?`, store, id)
		if err != nil {
			return 0, queryErr(err, "cannot give the snapshots without a store to "+store)
		}
		k, _ := res.RowsAffected()
		n += k
	}
	if err := tx.Commit(); err != nil {
		return 0, queryErr(err, "cannot give the snapshots without a store to "+store)
	}
	return n, nil
}

// FileStores lists the file:// stores the snapshot rows name (one indexed
// scan, no write lock): another spelling of the current store's folder
// among them is moved to it with MoveStore.
func (db *DB) FileStores(ctx context.Context) ([]string, error) {
	q := `SELECT DISTINCT store FROM snapshots WHERE store LIKE 'file://%' ORDER BY store`
	return queryAll(ctx, db, "cannot list the stores of the snapshots", q, nil, func(r rowScanner) (string, error) {
		var s string
		return s, r.Scan(&s)
	})
}

// MoveStore gives every snapshot row of store from to store to, and
// returns how many it moved: both name one store (a folder reached through
// a symlink). A row to already has under the same id describes the same
// manifest; it is kept, and from's copy dropped.
func (db *DB) MoveStore(ctx context.Context, from, to string) (int64, error) {
	to, err := storeArg(to)
	if err != nil {
		return 0, err
	}
	what := "cannot give the snapshots of " + from + " to " + to
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return 0, queryErr(err, what)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE OR IGNORE snapshots SET store = ? WHERE store = ?`, to, from)
	if err != nil {
		return 0, queryErr(err, what)
	}
	n, _ := res.RowsAffected()
	if _, err := tx.ExecContext(ctx, `DELETE FROM snapshots WHERE store = ?`, from); err != nil {
		return 0, queryErr(err, what)
	}
	if err := tx.Commit(); err != nil {
		return 0, queryErr(err, what)
	}
	return n, nil
}
