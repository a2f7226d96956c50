package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"director/errcode"
	"director/internal/testenv"
)

// fill writes to a file on dir's file system until it is full.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			return
		}
	}
}

// A catalog on a full disk is not a damaged one: opening it or writing to
// it says the disk is full, and never advises moving the catalog away.
func TestCatalogOnFullDisk(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		run  func(t *testing.T, path string) error
	}{
		{"open", func(t *testing.T, path string) error {
			db, err := Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
			fill(t, filepath.Dir(path))
			db, err = Open(ctx, path)
			if err == nil {
				db.Close()
			}
			return err
		}},
		{"insert", func(t *testing.T, path string) error {
			db, err := Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			fill(t, filepath.Dir(path))
			for i := range 1000 {
				s := snap(fmt.Sprintf("s%d", i), "p", time.Date(2026, 11, 24, 0, 0, i, 0, time.UTC))
				s.Note = strings.Repeat("n", 32<<10)
				if err := db.InsertSnapshot(ctx, s); err != nil {
					return err
				}
			}
			return nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			disk := testenv.SmallDisk(t, 1<<20)
			path := filepath.Join(disk, "director.db")
			err := c.run(t, path)
			if err == nil {
				t.Fatal("no error on a full disk")
			}
			wantCode := errcode.Internal
			if errcode.Of(err) != wantCode {
				t.Errorf("code %s, want %s: %v", errcode.Of(err), wantCode, err)
			}
			if msg := err.Error(); !strings.Contains(msg, "no space left on the disk holding the catalog") {
				t.Errorf("message %q does not say the disk is full", msg)
			}
			hint := errcode.HintOf(err)
			if !strings.Contains(hint, "free space") || !strings.Contains(hint, "do not move it away") || strings.Contains(hint, "move it away and run") {
				t.Errorf("hint %q: want free space, and not to move the catalog away", hint)
			}
		})
	}
}

// TestDiskFullErrors runs everywhere (TestCatalogOnFullDisk needs root to
// mount its small disk): SQLite's "database or disk is full" and a write's
// ENOSPC or EDQUOT count as a full disk; a corrupt database does not.
func TestDiskFullErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"SQLITE_FULL", sqlite3.Error{Code: sqlite3.ErrFull}, true},
		{"I/O error with ENOSPC", sqlite3.Error{Code: sqlite3.ErrIoErr, SystemErrno: syscall.ENOSPC}, true},
		{"wrapped EDQUOT", fmt.Errorf("x: %w", &os.PathError{Op: "write", Path: "f", Err: syscall.EDQUOT}), true},
		{"corrupt", sqlite3.Error{Code: sqlite3.ErrCorrupt}, false},
		{"other I/O error", sqlite3.Error{Code: sqlite3.ErrIoErr, SystemErrno: syscall.EIO}, false},
	} {
		if got := diskFull(c.err); got != c.want {
			t.Errorf("%s: diskFull = %v, want %v", c.name, got, c.want)
		}
	}
}

// A catalog that may not be written (a read-only mount here; a file or
// -wal owned by another user, as `sudo director` leaves, fails the same
// way) is not a damaged one: opening it says so and never advises moving
// it away, which would lose a good catalog. (TestAccessDeniedErrors covers
// a statement on an open catalog: a file system busy with it cannot be
// remounted read-only.)
func TestCatalogOnReadOnlyDisk(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		run  func(t *testing.T, path string, readOnly func()) error
	}{
		{"open", func(t *testing.T, path string, readOnly func()) error {
			db, err := Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
			readOnly()
			db, err = Open(ctx, path)
			if err == nil {
				db.Close()
			}
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			disk := testenv.SmallDisk(t, 4<<20)
			readOnly := func() {
				if err := syscall.Mount("", disk, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
					t.Fatalf("remounting read-only: %v", err)
				}
			}
			err := c.run(t, filepath.Join(disk, "director.db"), readOnly)
			if err == nil {
				t.Fatal("no error on a read-only disk")
			}
			hint := errcode.HintOf(err)
			if !strings.Contains(hint, "not damaged: do not move it away") || !strings.Contains(hint, "owner and mode") || strings.Contains(hint, "move it away and run") {
				t.Errorf("%v: hint %q; want the catalog called undamaged, with owner and mode to check", err, hint)
			}
		})
	}
}

// TestAccessDeniedErrors runs everywhere: SQLite's read-only, permission
// and cannot-open answers and EACCES, EPERM, EROFS count as access denied;
// a corrupt database and a full disk do not.
func TestAccessDeniedErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"SQLITE_READONLY", sqlite3.Error{Code: sqlite3.ErrReadonly}, true},
		{"SQLITE_CANTOPEN", sqlite3.Error{Code: sqlite3.ErrCantOpen}, true},
		{"I/O error with EACCES", sqlite3.Error{Code: sqlite3.ErrIoErr, SystemErrno: syscall.EACCES}, true},
		{"wrapped EROFS", fmt.Errorf("x: %w", &os.PathError{Op: "open", Path: "f", Err: syscall.EROFS}), true},
		{"corrupt", sqlite3.Error{Code: sqlite3.ErrCorrupt}, false},
		{"full", sqlite3.Error{Code: sqlite3.ErrFull}, false},
	} {
		if got := accessDenied(c.err); got != c.want {
			t.Errorf("%s: accessDenied = %v, want %v", c.name, got, c.want)
		}
		// A statement on an open catalog that can no longer be written
		// (its -wal chowned away) fails through queryErr.
		if hint := errcode.HintOf(queryErr(c.err, "inserting a snapshot")); c.want != strings.Contains(hint, "owner and mode") {
			t.Errorf("%s: queryErr hint %q", c.name, hint)
		}
	}
}
