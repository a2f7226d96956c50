package profiles

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"director/errcode"
)

// TestEntryNotADirectoryRefusedByEveryCommand: an entry of the profile root
// under a profile's name that is not a real directory (a file, a symlink to
// a directory elsewhere) is refused by every command with one invalid_input
// naming it and how to move it away; path said "does not exist", create
// "already exists", restore failed with internal_error, and a symlink was
// snapshotted while list left it out.
func TestEntryNotADirectoryRefusedByEveryCommand(t *testing.T) {
	ctx := context.Background()
	kinds := []struct {
		name string
		make func(t *testing.T, path string)
	}{
		{"regular file", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("notes\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink to a directory", func(t *testing.T, path string) {
			if err := os.Symlink(t.TempDir(), path); err != nil {
				t.Fatal(err)
			}
		}},
		{"dangling symlink", func(t *testing.T, path string) {
			if err := os.Symlink(filepath.Join(t.TempDir(), "gone"), path); err != nil {
				t.Fatal(err)
			}
		}},
	}
	ops := []struct {
		name string
		run  func(m *Manager) error
	}{
		{"path", func(m *Manager) error { _, err := m.Path("x"); return err }},
		{"create", func(m *Manager) error { return m.Create(ctx, "x") }},
		{"check create", func(m *Manager) error { return m.CheckCreate("x") }},
		{"snapshot", func(m *Manager) error { _, err := m.Snapshot(ctx, "x", SnapshotOptions{}); return err }},
		{"restore", func(m *Manager) error {
			_, err := m.Restore(ctx, "x", "latest", RestoreOptions{Force: true})
			return err
		}},
		{"delete", func(m *Manager) error { _, err := m.Delete(ctx, "x", DeleteOptions{Force: true}); return err }},
		{"delete with snapshots", func(m *Manager) error {
			_, err := m.Delete(ctx, "x", DeleteOptions{Force: true, WithSnapshots: true})
			return err
		}},
		{"absent", func(m *Manager) error { return m.Absent(ctx, "x", true) }},
	}
	for _, k := range kinds {
		for _, op := range ops {
			t.Run(k.name+"/"+op.name, func(t *testing.T) {
				m := newTestManager(t)
				if err := os.MkdirAll(m.Root, 0o700); err != nil {
					t.Fatal(err)
				}
				path := m.Dir("x")
				k.make(t, path)
				before, _ := os.Lstat(path)
				err := op.run(m)
				if errcode.Of(err) != errcode.InvalidInput {
					t.Fatalf("err = %v (%s), want invalid_input", err, errcode.Of(err))
				}
				if !strings.Contains(err.Error(), path+" is a") || !strings.Contains(err.Error(), "not a directory") {
					t.Errorf("message %q does not say that %s is not a directory", err, path)
				}
				if h := errcode.HintOf(err); !strings.Contains(h, "`mv "+path+" ") {
					t.Errorf("hint %q does not say to move %s away", h, path)
				}
				after, lerr := os.Lstat(path)
				if lerr != nil || !os.SameFile(before, after) || after.Mode() != before.Mode() {
					t.Errorf("%s changed: %v", path, lerr)
				}
			})
		}
		t.Run(k.name+"/list", func(t *testing.T) {
			m := newTestManager(t)
			var logs bytes.Buffer
			m.Log = slog.New(slog.NewTextHandler(&logs, nil))
			if err := m.Create(ctx, "ok"); err != nil {
				t.Fatal(err)
			}
			k.make(t, m.Dir("x"))
			list, err := m.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || list[0].Name != "ok" {
				t.Errorf("list = %+v, want only profile ok", list)
			}
			if !strings.Contains(logs.String(), m.Dir("x")+" is a") {
				t.Errorf("list did not warn about %s: %q", m.Dir("x"), logs.String())
			}
		})
	}
}

// TestRootNotADirectory: a profile root that is a file is invalid_input
// naming it, and Create (and its check) make nothing; it was an
// internal_error with a report-it hint.
func TestRootNotADirectory(t *testing.T) {
	ctx := context.Background()
	ops := []struct {
		name string
		run  func(m *Manager) error
	}{
		{"check create", func(m *Manager) error { return m.CheckCreate("x") }},
		{"create", func(m *Manager) error { return m.Create(ctx, "x") }},
		{"path", func(m *Manager) error { _, err := m.Path("x"); return err }},
		{"list", func(m *Manager) error { _, err := m.List(ctx); return err }},
		{"restore", func(m *Manager) error { _, err := m.Restore(ctx, "x", "latest", RestoreOptions{}); return err }},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			m := newTestManager(t)
			if err := os.WriteFile(m.Root, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			err := op.run(m)
			if errcode.Of(err) != errcode.InvalidInput || !strings.Contains(err.Error(), m.Root+" is not a directory") {
				t.Fatalf("err = %v (%s), want invalid_input naming %s", err, errcode.Of(err), m.Root)
			}
			if h := errcode.HintOf(err); !strings.Contains(h, "`mv "+m.Root+" ") {
				t.Errorf("hint %q does not say to move %s away", h, m.Root)
			}
		})
	}
}
