package catalog

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-sqlite3"

	"director/errcode"
	"director/internal/shellquote"
)

// busyTimeout is how long a statement waits for another process's write
// lock before it fails with SQLITE_BUSY.
const busyTimeout = 15 * time.Second

//go:embed migrations/*.sql
var migrationFS embed.FS

// DB is an open catalog. It is safe for concurrent use by many goroutines,
// and several processes may open the same file at once.
type DB struct {
	sql  *sql.DB
	path string
}

// Open opens the catalog at path, creating it (file 0600, parent directory
// 0700) when missing, and applies any pending migrations. It refuses a
// catalog written by a newer director.
func Open(ctx context.Context, path string) (*DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, errcode.Hinted(err, errcode.InvalidInput, "check the --home value", "bad catalog path %q", path)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, errcode.Hinted(err, errcode.Internal, "check that the directory is writable, or set --home / DIRECTOR_HOME to another directory", "cannot create the catalog directory")
	}
	// Create the file ourselves so SQLite never creates it with umask
	// permissions; SQLite gives the -wal and -shm files the same mode.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, notACatalog(err, abs)
	}
	st, err := f.Stat()
	f.Close()
	if err != nil {
		return nil, errcode.Wrap(err, errcode.Internal, "cannot stat the catalog %s", abs)
	}
	if st.Mode().Perm()&0o077 != 0 {
		// The catalog names profiles, hosts and visited domains: keep it private.
		if err := os.Chmod(abs, 0o600); err != nil {
			return nil, errcode.Hinted(err, errcode.Internal, "run: chmod 600 "+shellquote.Quote(abs), "catalog %s is readable by others and cannot be made private", abs)
		}
	}

	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(busyTimeout.Milliseconds(), 10))
	q.Set("_journal_mode", "WAL")
	q.Set("_foreign_keys", "on")
	q.Set("_synchronous", "NORMAL")
	q.Set("_txlock", "immediate")
	dsn := (&url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}).String()
	sdb, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.Internal, "cannot open the catalog %s", abs)
	}
	sdb.SetMaxOpenConns(4)
	sdb.SetConnMaxIdleTime(time.Minute)
	db := &DB{sql: sdb, path: abs}
	if err := ping(ctx, sdb); err != nil {
		sdb.Close()
		return nil, notACatalog(err, abs)
	}
	if err := db.migrate(ctx); err != nil {
		sdb.Close()
		return nil, err
	}
	return db, nil
}

// ping opens the first connection. A connection's setup switches a new
// file to WAL, which needs an exclusive lock, and SQLite may answer
// SQLITE_BUSY there without calling the busy handler (another process is
// doing the same switch), so a busy answer is retried here up to
// busyTimeout.
func ping(ctx context.Context, sdb *sql.DB) error {
	deadline := time.Now().Add(busyTimeout)
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		err := sdb.PingContext(ctx)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
	}
}

func isBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

func notACatalog(err error, path string) error {
	if accessDenied(err) {
		dir := shellquote.Quote(filepath.Dir(path))
		return errcode.Hinted(err, errcode.Internal,
			fmt.Sprintf("the catalog is not damaged: do not move it away. director must read and write %s, its -wal and -shm files and their directory: check their owner and mode with `ls -la %s` (a file left by `sudo director` is root's), or set --home / DIRECTOR_HOME to a directory of yours", filepath.Base(path), dir),
			"cannot write the catalog %s", path)
	}
	if diskFull(err) {
		return errcode.Hinted(err, errcode.Internal,
			fmt.Sprintf("free space on that disk (see `df -h %s`), or set --home / DIRECTOR_HOME to a directory on another one; the catalog is not damaged: do not move it away", shellquote.Quote(filepath.Dir(path))),
			"no space left on the disk holding the catalog %s", path)
	}
	return errcode.Hinted(err, errcode.Internal,
		"if the file is damaged, move it away and run: `director catalog rebuild`",
		"cannot read the catalog %s", path)
}

// Close closes the database.
func (db *DB) Close() error { return db.sql.Close() }

// Path is the absolute path of the database file.
func (db *DB) Path() string { return db.path }

// migration is one numbered .sql file.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in order; their numbers must
// run 1, 2, 3… without gaps.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			return nil, fmt.Errorf("migration %s: name must be NNNN_what.sql", e.Name())
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		b, err := fs.ReadFile(migrationFS, "migrations/"+e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected number %d", m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the newest schema this binary knows.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// Version returns the schema version recorded in the database file.
func (db *DB) Version(ctx context.Context) (int, error) {
	var v int
	if err := db.sql.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, notACatalog(err, db.path)
	}
	return v, nil
}

// migrate applies the pending migrations, each in its own IMMEDIATE
// transaction that re-reads the version first, so two processes opening a new
// catalog at once apply each migration exactly once.
func (db *DB) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return errcode.Wrap(err, errcode.Internal, "bad embedded catalog migrations")
	}
	cur, err := db.Version(ctx)
	if err != nil {
		return err
	}
	if err := db.checkNotNewer(cur, len(ms)); err != nil {
		return err
	}
	for _, m := range ms {
		if m.version <= cur {
			continue
		}
		if err := db.apply(ctx, m, len(ms)); err != nil {
			return err
		}
	}
	return nil
}

func (db *DB) checkNotNewer(cur, known int) error {
	if cur > known {
		return errcode.New(errcode.Internal,
			"catalog %s has schema version %d, newer than this director knows (%d)", db.path, cur, known).
			WithHint("upgrade director to the version that wrote this catalog, or use another --home; to go back to this version, "+
				"first snapshot, with the newer director, every profile its `director profile list` says holds a login no snapshot has, then "+
				"move %s aside together with its -wal and -shm files if they are there (the run history and the audit log stay in it) "+
				"and run `director catalog rebuild`, which lists again the snapshots in the store that this version reads", shellquote.Quote(db.path))
	}
	return nil
}

func (db *DB) apply(ctx context.Context, m migration, known int) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return notACatalog(err, db.path)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	var cur int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&cur); err != nil {
		return notACatalog(err, db.path)
	}
	if err := db.checkNotNewer(cur, known); err != nil {
		return err
	}
	if cur >= m.version {
		return nil // another process applied it meanwhile
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return errcode.Hinted(err, errcode.Internal,
			"the catalog may not be director's; move it away and run: `director catalog rebuild`",
			"catalog migration %s failed", m.name)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.version)); err != nil {
		return errcode.Wrap(err, errcode.Internal, "catalog migration %s: cannot record the version", m.name)
	}
	if err := tx.Commit(); err != nil {
		return errcode.Wrap(err, errcode.Internal, "catalog migration %s: commit failed", m.name)
	}
	return nil
}

// timeLayout is fixed width (always nine fraction digits), so stored times
// sort as text in time order and round-trip to the nanosecond.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func fmtTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// fmtNullTime stores the zero time as NULL.
func fmtNullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return fmtTime(t)
}

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		// Accept any RFC 3339 text, e.g. a row written by hand.
		t, err = time.Parse(time.RFC3339Nano, s)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("bad time %q in the catalog: %w", s, err)
	}
	return t.UTC(), nil
}

func parseNullTime(s sql.NullString) (time.Time, error) {
	if !s.Valid || s.String == "" {
		return time.Time{}, nil
	}
	return parseTime(s.String)
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nullInt stores 0 as NULL.
func nullInt(n int) any {
	if n == 0 {
		return nil
	}
	return n
}

// now is the current time without its monotonic reading.
func now() time.Time { return time.Now().UTC().Round(0) }

// ErrExists is matched (errors.Is) by an insert whose id is already taken.
var ErrExists = errors.New("already in the catalog")

func isConstraint(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey || se.ExtendedCode == sqlite3.ErrConstraintUnique
	}
	return false
}

// queryErr codes a failed statement.
func queryErr(err error, what string) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return errcode.Hinted(err, errcode.Timeout, "retry; the command was cancelled or ran out of time", "catalog: %s", what)
	}
	if isBusy(err) {
		return errcode.Hinted(err, errcode.Timeout, "another director process holds the catalog; retry when it finishes", "catalog: %s", what)
	}
	if accessDenied(err) {
		return errcode.Hinted(err, errcode.Internal,
			"the catalog is not damaged: do not move it away. director must read and write director.db, its -wal and -shm files and director's home (--home / DIRECTOR_HOME): check their owner and mode with `ls -la` there (a file left by `sudo director` is root's)",
			"catalog: %s: the catalog cannot be written", what)
	}
	if diskFull(err) {
		return errcode.Hinted(err, errcode.Internal,
			"free space on the disk that holds director's home (--home / DIRECTOR_HOME), or move the home to another disk; the catalog is not damaged: do not move it away",
			"catalog: %s: no space left on the disk holding the catalog", what)
	}
	return errcode.Hinted(err, errcode.Internal, "if the catalog is damaged, move it away and run: `director catalog rebuild`", "catalog: %s", what)
}

// accessDenied says whether SQLite failed because it may not write the
// catalog, its -wal or -shm file or their directory (SQLITE_READONLY,
// SQLITE_PERM, SQLITE_CANTOPEN, or errno EACCES, EPERM, EROFS): a file
// owned by another user, a read-only mount. That is no sign of a damaged
// catalog, and moving it away would lose a good one.
func accessDenied(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch {
		case se.Code == sqlite3.ErrReadonly, se.Code == sqlite3.ErrPerm, se.Code == sqlite3.ErrCantOpen:
			return true
		case se.SystemErrno == syscall.EACCES, se.SystemErrno == syscall.EPERM, se.SystemErrno == syscall.EROFS:
			return true
		}
	}
	return errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EROFS)
}

// diskFull says whether SQLite failed because the file system holding the
// catalog is full (SQLITE_FULL, or an I/O error whose errno is ENOSPC or
// EDQUOT), which is no sign of a damaged catalog.
func diskFull(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrFull || se.SystemErrno == syscall.ENOSPC || se.SystemErrno == syscall.EDQUOT) {
		return true
	}
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// idAlphabet is RFC 4648 base32 in lower case: ids are easy to read aloud and
// type, and never contain 0/1/8/9 that look like letters.
const idAlphabet = "abcdefghijklmnopqrstuvwxyz234567"

// NewID returns a random 6-character id of [a-z2-7], the daemon-style id of
// sessions and runs (about a billion values).
func NewID() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	for i := range b {
		b[i] = idAlphabet[b[i]&31]
	}
	return string(b[:])
}

// ValidID reports whether s looks like an id from NewID.
func ValidID(s string) bool {
	if len(s) != 6 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune(idAlphabet, rune(s[i])) {
			return false
		}
	}
	return true
}

// queryAll runs q and scans every row with scan; what names the query in
// errors ("cannot list runs").
func queryAll[T any](ctx context.Context, db *DB, what, q string, args []any, scan func(rowScanner) (T, error)) ([]T, error) {
	rows, err := db.sql.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, queryErr(err, what)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, queryErr(err, what)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, queryErr(err, what)
	}
	return out, nil
}

// byProfileNewestFirst builds "SELECT cols FROM table [WHERE profile = ?]
// ORDER BY orderCol DESC, id DESC [LIMIT ?]" (profile "" = all, limit <= 0 = all).
func byProfileNewestFirst(cols, table, orderCol, profile string, limit int) (string, []any) {
	q := `SELECT ` + cols + ` FROM ` + table
	var args []any
	if profile != "" {
		q += ` WHERE profile = ?`
		args = append(args, profile)
	}
	q += ` ORDER BY ` + orderCol + ` DESC, id DESC`
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	return q, args
}
