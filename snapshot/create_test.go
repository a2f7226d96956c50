package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"director/errcode"
)

func TestCreateDetectsChangeBetweenPasses(t *testing.T) {
	for name, change := range map[string]func(p string) error{
		"grown": func(p string) error {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			f.WriteString("more")
			return f.Close()
		},
		"same size, mtime put back": func(p string) error {
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			if err := os.WriteFile(p, bytes.Repeat([]byte("X"), int(fi.Size())), 0o600); err != nil {
				return err
			}
			return os.Chtimes(p, fi.ModTime(), fi.ModTime())
		},
		"removed": os.Remove,
		"replaced by a symlink to a file of the same size outside": func(p string) error {
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			outside := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(p)))), "outside")
			if err := os.WriteFile(outside, bytes.Repeat([]byte("S"), int(fi.Size())), 0o600); err != nil {
				return err
			}
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Symlink(outside, p)
		},
	} {
		t.Run(name, func(t *testing.T) {
			src := t.TempDir()
			writeTree(t, src, profileTree())
			testHookAfterScan = func() { must(t, change(filepath.Join(src, "Default", "Network", "Cookies"))) }
			defer func() { testHookAfterScan = nil }()
			_, err := Create(context.Background(), src, io.Discard, CreateOptions{})
			wantCode(t, err, errcode.ProfileInUse)
		})
	}
}

// TestHashFileRefusesSymlink covers the other window: a file that becomes a
// symlink after the walk listed it and before the hashing pass opened it.
// Following it would archive the target's bytes under the profile's name.
func TestHashFileRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "secret"), []byte("not the profile's"), 0o600))
	prof := filepath.Join(dir, "profile")
	must(t, os.Mkdir(prof, 0o700))
	must(t, os.Symlink(filepath.Join(dir, "secret"), filepath.Join(prof, "Cookies")))
	f := File{Path: "Cookies", Type: TypeFile}
	var st fileState
	err := hashFile(prof, &f, &st, sha256.New(), make([]byte, 4096))
	wantCode(t, err, errcode.ProfileInUse)
	if f.SHA256 != "" {
		t.Errorf("hashed the symlink's target: %s", f.SHA256)
	}
}

func TestCreateRefusesWhatRestoreWould(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string]string{"Local State": "{}", "Default/evil": "->/etc/passwd"})
	_, err := Create(context.Background(), src, io.Discard, CreateOptions{})
	wantCode(t, err, errcode.InvalidInput)
	// Excluding the entry makes the profile archivable.
	if _, err := Create(context.Background(), src, io.Discard, CreateOptions{Excludes: []string{"Default/evil"}}); err != nil {
		t.Fatal(err)
	}
}

func TestCreateErrors(t *testing.T) {
	_, err := Create(context.Background(), filepath.Join(t.TempDir(), "nope"), io.Discard, CreateOptions{})
	wantCode(t, err, errcode.ProfileNotFound)
	_, err = Create(context.Background(), t.TempDir(), io.Discard, CreateOptions{Excludes: []string{"[bad"}})
	wantCode(t, err, errcode.InvalidInput)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Create(ctx, t.TempDir(), io.Discard, CreateOptions{})
	if err == nil {
		t.Fatal("cancelled Create succeeded")
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	time.Sleep(time.Millisecond)
	src := t.TempDir()
	writeTree(t, src, profileTree())
	_, err = Create(ctx, src, io.Discard, CreateOptions{})
	wantCode(t, err, errcode.Timeout)
}

func TestPatterns(t *testing.T) {
	sel, err := newSelector(DefaultExcludes(), []string{"/Default/Cache/keep"})
	must(t, err)
	for rel, want := range map[string]bool{
		"Cache":                                 true,
		"Default/Cache":                         true,
		"Profile 1/Cache/Cache_Data/x":          true,
		"Default/Cache/keep":                    false,
		"Default/Cache/keep/x":                  false,
		"Default/Service Worker/CacheStorage/a": true,
		"Default/Service Worker/Database":       false,
		"Service Worker/CacheStorage":           true,
		"BrowserMetrics-spare.pma":              true,
		"Default/Network/Cookies":               false,
		"Default/Local Storage/leveldb/CURRENT": false,
		"Default/IndexedDB/x/Cache":             true,
		"Default/Code Cache/js/index":           true,
		"Default/DevToolsActivePort":            true,
		"SingletonLock":                         true,
		".director/manifest.json":               true,
		"Default/.director":                     false,
		"Local State":                           false,
		"Default/Preferences":                   false,
		"Default/CacheStorageNotReally":         false,
	} {
		if got := sel.excluded(rel); got != want {
			t.Errorf("excluded(%q) = %v, want %v", rel, got, want)
		}
	}
	// Runtime files stay out even when an include names them.
	sel, err = newSelector(nil, []string{"SingletonLock", "*"})
	must(t, err)
	if !sel.excluded("SingletonLock") {
		t.Error("an include re-included SingletonLock")
	}
}

func TestParseManifest(t *testing.T) {
	m := manifestOf(okEntries)
	b, err := json.Marshal(m)
	must(t, err)
	if _, err := ParseManifest(b); err != nil {
		t.Fatalf("valid manifest: %v", err)
	}
	for name, tc := range map[string]struct {
		json string
		code errcode.Code
	}{
		"trailing data": {string(b) + "{}", errcode.SnapshotCorrupt},
		"unknown field": {`{"format_version":1,"files":[],"surprise":1}`, errcode.SnapshotCorrupt},
		"version 0":     {`{"files":[]}`, errcode.SnapshotCorrupt},
		"dot path":      {`{"format_version":1,"files":[{"path":".","type":"dir"}]}`, errcode.UnsafeArchive},
		"reserved":      {`{"format_version":1,"files":[{"path":".director","type":"dir"}]}`, errcode.UnsafeArchive},
		"bad type":      {`{"format_version":1,"files":[{"path":"a","type":"fifo"}]}`, errcode.UnsafeArchive},
		"setuid":        {`{"format_version":1,"files":[{"path":"a","type":"dir","mode":2496}]}`, errcode.UnsafeArchive},
		"bad hash":      {`{"format_version":1,"file_count":1,"files":[{"path":"a","type":"file","sha256":"zz"}]}`, errcode.SnapshotCorrupt},
		"totals":        {`{"format_version":1,"files":[{"path":"a","type":"file","size":1,"sha256":"` + zeros64 + `"}]}`, errcode.SnapshotCorrupt},
		"symlink loop":  {`{"format_version":1,"files":[{"path":"a","type":"symlink","link":"b"},{"path":"b","type":"symlink","link":"a/.."}]}`, errcode.UnsafeArchive},
		"empty link":    {`{"format_version":1,"files":[{"path":"a","type":"symlink"}]}`, errcode.SnapshotCorrupt},
		"dir with size": {`{"format_version":1,"files":[{"path":"a","type":"dir","size":3}]}`, errcode.SnapshotCorrupt},
		"negative size": {`{"format_version":1,"file_count":1,"size":-1,"files":[{"path":"a","type":"file","size":-1,"sha256":"` + zeros64 + `"}]}`, errcode.SnapshotCorrupt},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseManifest([]byte(tc.json))
			wantCode(t, err, tc.code)
		})
	}
}

const zeros64 = "0000000000000000000000000000000000000000000000000000000000000000"
