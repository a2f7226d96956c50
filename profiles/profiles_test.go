package profiles

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/age"

	"director/catalog"
	"director/errcode"
	"director/storage"
)

// newTestManager builds a Manager on a temp home with a file store and a
// real SQLite catalog.
func newTestManager(t *testing.T) *Manager {
	t.Helper()
	home := t.TempDir()
	ctx := context.Background()
	st, err := storage.Open(ctx, "file://"+filepath.Join(home, "snapshots"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Open(ctx, filepath.Join(home, "director.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return &Manager{Root: filepath.Join(home, "browser-profiles"), Store: st, Catalog: cat, LockWait: 200 * time.Millisecond}
}

// writeProfile fills a profile with a small Chrome-like tree and returns
// its files' contents by relative path.
func writeProfile(t *testing.T, dir, marker string) map[string]string {
	t.Helper()
	files := map[string]string{
		"Local State":                              `{"marker":"` + marker + `"}`,
		"Last Version":                             "120.0.6099.71",
		"Default/Preferences":                      `{"profile":{"name":"` + marker + `"}}`,
		"Default/Network/Cookies":                  "cookie-db-" + marker,
		"Default/Local Storage/leveldb/000003.log": strings.Repeat("ls-"+marker, 500),
		"Default/IndexedDB/http_127.0.0.1_0.indexeddb.leveldb/CURRENT": "MANIFEST-000001\n",
		"Default/Cache/Cache_Data/data_0":                              "cache that must not be archived",
	}
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	delete(files, "Default/Cache/Cache_Data/data_0")
	return files
}

// readTree returns the regular files under dir by relative path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			out[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("tree has %d files, want %d: %v", len(got), len(want), keys(got))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("file %q differs after restore", k)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestSnapshotRestoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	want := writeProfile(t, m.Dir("work"), "v1")
	res, err := m.Snapshot(ctx, "work", SnapshotOptions{Note: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.ID, "work-") || res.FileCount == 0 || res.ArchiveSize == 0 || res.ChromeVersion != "120.0.6099.71" {
		t.Fatalf("unexpected result %+v", res)
	}
	row, err := m.Catalog.GetSnapshot(ctx, m.Store.String(), res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if row.ObjectKey != "work/"+res.ID+".tar.zst" || row.Note != "first" || row.ArchiveSHA256 != res.ArchiveSHA256 {
		t.Fatalf("catalog row %+v does not match %+v", row, res)
	}
	// Archives are 0600 in the file store.
	st, err := os.Stat(filepath.Join(filepath.Dir(m.Root), "snapshots", "work", res.ID+".tar.zst"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("archive mode %v, want 0600", st.Mode().Perm())
	}

	// Wipe the profile and restore it.
	if _, err := m.Delete(ctx, "work", DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rr, err := m.Restore(ctx, "work", "latest", RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rr.ID != res.ID || !rr.Created {
		t.Errorf("restore result %+v", rr)
	}
	sameTree(t, readTree(t, m.Dir("work")), want)
	if st, _ := os.Stat(m.Dir("work")); st.Mode().Perm() != 0o700 {
		t.Errorf("restored profile mode %v, want 0700", st.Mode().Perm())
	}

	v, err := m.Verify(ctx, "work", res.ID)
	if err != nil || !v.OK {
		t.Fatalf("verify: %v %+v", err, v)
	}
}

func TestRestoreOverExistingProfileAndByID(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	v1 := writeProfile(t, m.Dir("p"), "v1")
	s1, err := m.Snapshot(ctx, "p", SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v2 := writeProfile(t, m.Dir("p"), "v2")
	if _, err := m.Snapshot(ctx, "p", SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("p"), "v3-unsaved")
	if _, err := m.Restore(ctx, "p", s1.ID, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, readTree(t, m.Dir("p")), v1)
	if _, err := m.Restore(ctx, "p", "latest", RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, readTree(t, m.Dir("p")), v2)
	// No temp or old dirs are left beside the profile.
	entries, _ := os.ReadDir(m.Root)
	for _, e := range entries {
		if e.IsDir() && e.Name() != "p" {
			t.Errorf("leftover %s in the profile root", e.Name())
		}
	}
}

func TestRestoreFromLocalArchiveAndHostileArchiveLeavesProfile(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	want := writeProfile(t, m.Dir("a"), "keep")
	res, err := m.Snapshot(ctx, "a", SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(filepath.Dir(m.Root), "snapshots", filepath.FromSlash(res.ObjectKey))

	// A copy with one flipped byte near the end: restore must fail and the
	// profile must be exactly as it was.
	b, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(b)
	bad[len(bad)/2] ^= 0x40
	badPath := filepath.Join(t.TempDir(), "bad.tar.zst")
	if err := os.WriteFile(badPath, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("a"), "current")
	current := readTree(t, m.Dir("a"))
	_, err = m.Restore(ctx, "a", "", RestoreOptions{Archive: badPath})
	if c := errcode.Of(err); c != errcode.SnapshotCorrupt && c != errcode.UnsafeArchive {
		t.Fatalf("restore of a damaged archive: err %v (code %s), want snapshot_corrupt or unsafe_archive", err, c)
	}
	sameTree(t, readTree(t, m.Dir("a")), current)

	// The intact archive restores with no catalog row at all, into a new profile.
	if _, err := m.Restore(ctx, "b", "", RestoreOptions{Archive: archive}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, readTree(t, m.Dir("b")), want)
}

func TestStoredArchiveTamperingIsDetected(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("t"), "x")
	res, err := m.Snapshot(ctx, "t", SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := readTree(t, m.Dir("t"))
	// Append garbage: the tar stream still extracts, but the archive hash no
	// longer matches the catalog.
	archive := filepath.Join(filepath.Dir(m.Root), "snapshots", filepath.FromSlash(res.ObjectKey))
	f, err := os.OpenFile(archive, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("trailing junk"))
	f.Close()
	if _, err := m.Restore(ctx, "t", res.ID, RestoreOptions{}); errcode.Of(err) != errcode.SnapshotCorrupt {
		t.Fatalf("restore: %v, want snapshot_corrupt", err)
	}
	sameTree(t, readTree(t, m.Dir("t")), before)
	if _, err := m.Verify(ctx, "t", res.ID); errcode.Of(err) != errcode.SnapshotCorrupt {
		t.Fatalf("verify: %v, want snapshot_corrupt", err)
	}
}

func TestErrorsHaveCodes(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	tests := []struct {
		name string
		run  func() error
		code errcode.Code
	}{
		{"bad name", func() error { return m.Create(ctx, "Bad Name") }, errcode.InvalidInput},
		{"name too long", func() error { return m.Create(ctx, strings.Repeat("a", 64)) }, errcode.InvalidInput},
		{"snapshot missing profile", func() error { _, err := m.Snapshot(ctx, "nope", SnapshotOptions{}); return err }, errcode.ProfileNotFound},
		{"restore without snapshots", func() error { _, err := m.Restore(ctx, "nope", "latest", RestoreOptions{}); return err }, errcode.SnapshotNotFound},
		{"restore unknown id", func() error {
			_, err := m.Restore(ctx, "nope", "nope-20200101T000000Z-aaaa", RestoreOptions{})
			return err
		}, errcode.SnapshotNotFound},
		{"delete missing", func() error { _, err := m.Delete(ctx, "nope", DeleteOptions{}); return err }, errcode.ProfileNotFound},
		{"archive missing", func() error {
			_, err := m.Restore(ctx, "x", "", RestoreOptions{Archive: "/nonexistent.tar.zst"})
			return err
		}, errcode.SnapshotNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if errcode.Of(err) != tt.code {
				t.Fatalf("err %v has code %s, want %s", err, errcode.Of(err), tt.code)
			}
			if errcode.HintOf(err) == "" {
				t.Errorf("error %v has no hint", err)
			}
		})
	}
}

func TestLockMakesSecondCallFail(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "l"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("l"), "x")
	l, err := m.Lock(ctx, "l", -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Snapshot(ctx, "l", SnapshotOptions{}); errcode.Of(err) != errcode.ProfileInUse {
		t.Fatalf("snapshot under a held lock: %v, want profile_in_use", err)
	}
	if _, err := m.Lock(ctx, "l", -1); errcode.Of(err) != errcode.ProfileInUse {
		t.Fatalf("second lock: %v", err)
	}
	// The holder may still snapshot with its lock.
	if _, err := m.Snapshot(ctx, "l", SnapshotOptions{Lock: l}); err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	if _, err := m.Snapshot(ctx, "l", SnapshotOptions{}); err != nil {
		t.Fatalf("after unlock: %v", err)
	}
}

func TestConcurrentSnapshotsOfOneProfile(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	m.LockWait = 30 * time.Second
	if err := m.Create(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("c"), "x")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = m.Snapshot(ctx, "c", SnapshotOptions{Note: strconv.Itoa(i)})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	snaps, err := m.Snapshots(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 4 {
		t.Fatalf("%d snapshots, want 4", len(snaps))
	}
	for _, s := range snaps {
		if _, err := m.Verify(ctx, "c", s.ID); err != nil {
			t.Errorf("verify %s: %v", s.ID, err)
		}
	}
}

func TestRefusesProfileChromeRunsOn(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "live"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("live"), "x")
	host, _ := os.Hostname()
	// A SingletonLock naming this host and a live pid (this test's own) is
	// what Chrome leaves while it runs.
	if err := os.Symlink(fmt.Sprintf("%s-%d", host, os.Getpid()), filepath.Join(m.Dir("live"), "SingletonLock")); err != nil {
		t.Fatal(err)
	}
	before := readTree(t, m.Dir("live"))
	if _, err := m.Snapshot(ctx, "live", SnapshotOptions{}); errcode.Of(err) != errcode.ProfileInUse {
		t.Fatalf("snapshot: %v, want profile_in_use", err)
	}
	if _, err := m.Restore(ctx, "live", "latest", RestoreOptions{}); errcode.Of(err) != errcode.ProfileInUse {
		t.Fatalf("restore: %v, want profile_in_use", err)
	}
	if _, err := m.Delete(ctx, "live", DeleteOptions{}); errcode.Of(err) != errcode.ProfileInUse {
		t.Fatalf("delete: %v, want profile_in_use", err)
	}
	sameTree(t, readTree(t, m.Dir("live")), before)

	// A stale lock (a dead pid) is removed and never archived.
	os.Remove(filepath.Join(m.Dir("live"), "SingletonLock"))
	if err := os.Symlink(host+"-2147483646", filepath.Join(m.Dir("live"), "SingletonLock")); err != nil {
		t.Fatal(err)
	}
	res, err := m.Snapshot(ctx, "live", SnapshotOptions{})
	if err != nil {
		t.Fatalf("snapshot with a stale lock: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(m.Dir("live"), "SingletonLock")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale SingletonLock still there: %v", err)
	}
	if res.FileCount != len(before)-1 { // all but the cache file
		t.Errorf("snapshot has %d files, want %d", res.FileCount, len(before)-1)
	}
}

func TestPruneNeverDeletesNewest(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.Now = func() time.Time { return clock }
	if err := m.Create(ctx, "pr"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("pr"), "x")
	var ids []string
	for i := 0; i < 5; i++ {
		clock = clock.Add(24 * time.Hour)
		res, err := m.Snapshot(ctx, "pr", SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ID)
	}
	// keep-within 36h keeps the newest two (day 5 and day 4).
	res, err := m.Prune(ctx, "pr", 1, 36*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Kept) != 2 || len(res.Deleted) != 3 {
		t.Fatalf("prune: %+v", res)
	}
	snaps, _ := m.Snapshots(ctx, "pr")
	if len(snaps) != 2 || snaps[0].ID != ids[4] {
		t.Fatalf("after prune: %+v", snaps)
	}
	objs, _ := m.Store.List(ctx, "pr/")
	if len(objs) != 4 { // 2 archives + 2 manifests
		t.Errorf("store has %d objects after prune, want 4", len(objs))
	}
	// keep-last 0 is raised to 1: the newest survives.
	if _, err := m.Prune(ctx, "pr", 0, 0); err != nil {
		t.Fatal(err)
	}
	snaps, _ = m.Snapshots(ctx, "pr")
	if len(snaps) != 1 || snaps[0].ID != ids[4] {
		t.Fatalf("newest did not survive: %+v", snaps)
	}
}

// A snapshot whose archive has left the store (deleted by hand, lost by a
// bucket policy) restores nothing: prune must not keep it in place of a
// restorable one, and looking it up by id must not bring its row back.
func TestSnapshotWithoutArchive(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.Now = func() time.Time { return clock }
	if err := m.Create(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("gone"), "x")
	for i := 0; i < 3; i++ {
		clock = clock.Add(time.Hour)
		if _, err := m.Snapshot(ctx, "gone", SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	snaps, err := m.Snapshots(ctx, "gone")
	if err != nil || len(snaps) != 3 {
		t.Fatalf("snapshots: %v %+v", err, snaps)
	}
	newest, middle, oldest := snaps[0], snaps[1], snaps[2]
	if err := m.Store.Delete(ctx, newest.ObjectKey); err != nil {
		t.Fatal(err)
	}

	// By id, with the row gone (as after `catalog rebuild`): not found, and
	// no row comes back.
	if err := m.Catalog.DeleteSnapshot(ctx, newest.Store, newest.ID); err != nil {
		t.Fatal(err)
	}
	for _, op := range []struct {
		name string
		run  func() error
	}{
		{"verify", func() error { _, err := m.Verify(ctx, "gone", newest.ID); return err }},
		{"restore", func() error { _, err := m.Restore(ctx, "gone", newest.ID, RestoreOptions{}); return err }},
	} {
		if err := op.run(); errcode.Of(err) != errcode.SnapshotNotFound {
			t.Errorf("%s of a snapshot without archive: %v, want %s", op.name, err, errcode.SnapshotNotFound)
		}
		if _, err := m.Catalog.GetSnapshot(ctx, newest.Store, newest.ID); errcode.Of(err) != errcode.SnapshotNotFound {
			t.Errorf("after %s the catalog has a row for the missing archive (err %v)", op.name, err)
		}
	}

	// With the row still there: prune keeps the newest restorable snapshot,
	// deletes the older one, and drops the dangling row and its manifest.
	if err := m.Catalog.UpsertSnapshot(ctx, newest); err != nil {
		t.Fatal(err)
	}
	res, err := m.Prune(ctx, "gone", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Kept, res.Deleted, res.Missing) != fmt.Sprint([]string{middle.ID}, []string{oldest.ID}, []string{newest.ID}) {
		t.Fatalf("prune: kept %v deleted %v missing %v; want kept [%s] deleted [%s] missing [%s]",
			res.Kept, res.Deleted, res.Missing, middle.ID, oldest.ID, newest.ID)
	}
	objs, _ := m.Store.List(ctx, "gone/")
	if len(objs) != 2 || objs[0].Key != middle.ManifestKey || objs[1].Key != middle.ObjectKey {
		t.Errorf("store after prune: %+v, want only %s and its manifest", objs, middle.ObjectKey)
	}
	if got, err := m.Restore(ctx, "gone", "latest", RestoreOptions{}); err != nil || got.ID != middle.ID {
		t.Errorf("restore latest after prune: %+v, %v; want %s", got, err, middle.ID)
	}
}

func TestRebuildAndLatestFromStoreOnSecondMachine(t *testing.T) {
	ctx := context.Background()
	a := newTestManager(t)
	if err := a.Create(ctx, "shared"); err != nil {
		t.Fatal(err)
	}
	want := writeProfile(t, a.Dir("shared"), "from-a")
	res, err := a.Snapshot(ctx, "shared", SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Machine B: same store, its own empty catalog and profile root.
	b := newTestManager(t)
	b.Store = a.Store
	got, err := b.Restore(ctx, "shared", "latest", RestoreOptions{})
	if err != nil {
		t.Fatalf("restore latest on a machine whose catalog is empty: %v", err)
	}
	if got.ID != res.ID {
		t.Fatalf("restored %s, want %s", got.ID, res.ID)
	}
	sameTree(t, readTree(t, b.Dir("shared")), want)

	// A lost catalog: rebuild brings the rows back.
	c := newTestManager(t)
	c.Store = a.Store
	rb, err := c.Rebuild(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rb.Added) != 1 || rb.Added[0] != res.ID {
		t.Fatalf("rebuild: %+v", rb)
	}
	row, err := c.Catalog.GetSnapshot(ctx, c.Store.String(), res.ID)
	if err != nil || row.ArchiveSHA256 != res.ArchiveSHA256 {
		t.Fatalf("rebuilt row %+v, %v", row, err)
	}
	// An archive deleted behind the catalog's back: rebuild drops its row.
	if err := a.Store.Delete(ctx, res.ObjectKey); err != nil {
		t.Fatal(err)
	}
	rb, err = c.Rebuild(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rb.Removed) != 1 {
		t.Fatalf("rebuild after delete: %+v", rb)
	}
}

func TestEncryptedSnapshots(t *testing.T) {
	ctx := context.Background()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := age.GenerateX25519Identity()
	m := newTestManager(t)
	m.Recipients = []age.Recipient{id.Recipient()}
	if err := m.Create(ctx, "enc"); err != nil {
		t.Fatal(err)
	}
	want := writeProfile(t, m.Dir("enc"), "secret-cookie")
	res, err := m.Snapshot(ctx, "enc", SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Encrypted || !strings.HasSuffix(res.ObjectKey, ".tar.zst.age") {
		t.Fatalf("not encrypted: %+v", res)
	}
	// Nothing of the profile is readable in the store.
	for _, key := range []string{res.ObjectKey, res.ManifestKey} {
		rc, _, err := m.Store.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if bytes.Contains(b, []byte("secret-cookie")) || bytes.Contains(b, []byte("Cookies")) {
			t.Errorf("%s leaks plaintext", key)
		}
	}
	// A recipients-only host cannot restore: decrypt_failed, profile untouched.
	before := readTree(t, m.Dir("enc"))
	if _, err := m.Restore(ctx, "enc", "latest", RestoreOptions{}); errcode.Of(err) != errcode.DecryptFailed {
		t.Fatalf("restore without identity: %v, want decrypt_failed", err)
	}
	m.Identities = []age.Identity{other}
	if _, err := m.Restore(ctx, "enc", "latest", RestoreOptions{}); errcode.Of(err) != errcode.DecryptFailed {
		t.Fatalf("restore with the wrong identity: %v, want decrypt_failed", err)
	}
	sameTree(t, readTree(t, m.Dir("enc")), before)
	m.Identities = []age.Identity{id}
	// A local encrypted archive cut short inside its last chunk: no catalog
	// hash to compare, so age's authentication must catch it before the swap.
	rc, _, err := m.Store.Get(ctx, res.ObjectKey)
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := io.ReadAll(rc)
	rc.Close()
	cut := filepath.Join(t.TempDir(), "cut.tar.zst.age")
	os.WriteFile(cut, whole[:len(whole)-7], 0o600)
	if _, err := m.Restore(ctx, "enc", "", RestoreOptions{Archive: cut}); errcode.Of(err) != errcode.DecryptFailed && errcode.Of(err) != errcode.SnapshotCorrupt {
		t.Fatalf("restore of a truncated encrypted archive: %v", err)
	}
	sameTree(t, readTree(t, m.Dir("enc")), before)
	os.RemoveAll(m.Dir("enc"))
	if _, err := m.Restore(ctx, "enc", "latest", RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, readTree(t, m.Dir("enc")), want)
	if _, err := m.Verify(ctx, "enc", "latest"); err != nil {
		t.Fatal(err)
	}
}

// failingStore fails every Put after n bytes, like a store that goes down
// midway through an upload.
type failingStore struct {
	storage.Store
	after int64
}

func (f failingStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	return f.Store.Put(ctx, key, &failAfter{r: r, n: f.after}, size)
}

type failAfter struct {
	r io.Reader
	n int64
}

func (f *failAfter) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errcode.New(errcode.StorageUnavailable, "injected failure")
	}
	if int64(len(p)) > f.n {
		p = p[:f.n]
	}
	n, err := f.r.Read(p)
	f.n -= int64(n)
	return n, err
}

func TestFailedUploadLeavesNoRowAndNoObject(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("f"), "x")
	real := m.Store
	m.Store = failingStore{Store: real, after: 100}
	if _, err := m.Snapshot(ctx, "f", SnapshotOptions{}); err == nil {
		t.Fatal("snapshot through a failing store succeeded")
	}
	snaps, _ := m.Snapshots(ctx, "f")
	objs, _ := real.List(ctx, "f/")
	if len(snaps) != 0 || len(objs) != 0 {
		t.Fatalf("failed snapshot left %d rows and %d objects", len(snaps), len(objs))
	}
	m.Store = real
	if _, err := m.Snapshot(ctx, "f", SnapshotOptions{}); err != nil {
		t.Fatalf("the same snapshot after the store recovers: %v", err)
	}
}

func TestMaxSizeEnforcedWhileStreaming(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	m.MaxSize = 1024
	if err := m.Create(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("big"), "x")
	// Incompressible content well over the bound.
	rnd := make([]byte, 64<<10)
	for i := range rnd {
		rnd[i] = byte(i*7919 ^ i>>3)
	}
	os.WriteFile(filepath.Join(m.Dir("big"), "Default", "blob"), rnd, 0o600)
	_, err := m.Snapshot(ctx, "big", SnapshotOptions{})
	if err == nil {
		t.Fatal("snapshot over --max-size succeeded")
	}
	objs, _ := m.Store.List(ctx, "big/")
	if len(objs) != 0 {
		t.Fatalf("oversized snapshot left %d objects", len(objs))
	}
}

func TestKeyringBoundCookiesAreReported(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "kr"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("kr"), "x")
	// A Cookies database shaped like Chrome's: one v10 (portable) and two
	// v11 (keyring-bound) values.
	db, err := sql.Open("sqlite3", filepath.Join(m.Dir("kr"), "Default", "Cookies"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE cookies (host_key TEXT, name TEXT, encrypted_value BLOB)`,
		`INSERT INTO cookies VALUES ('a.test', 'sid', CAST('v10xxxx' AS BLOB)), ('b.test', 'sid', CAST('v11yyyy' AS BLOB)), ('c.test', 'k', CAST('v11zzzz' AS BLOB))`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	n, err := KeyringBoundCookies(ctx, m.Dir("kr"))
	if err != nil || n != 2 {
		t.Fatalf("KeyringBoundCookies = %d, %v; want 2", n, err)
	}
	res, err := m.Snapshot(ctx, "kr", SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "v11") || strings.Contains(res.Warnings[0], "yyyy") {
		t.Fatalf("warnings %q", res.Warnings)
	}
	// A profile made by director's own Chrome flags has none.
	if n, err := KeyringBoundCookies(ctx, t.TempDir()); err != nil || n != 0 {
		t.Fatalf("empty profile: %d, %v", n, err)
	}
}

// Chrome fact 7: a profile written by a newer Chrome is refused unless
// forced; a Chrome that cannot tell its version skips the check, unless the
// user named that Chrome (then the error is theirs to fix).
func TestRestoreChecksChromeVersion(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "ver"); err != nil {
		t.Fatal(err)
	}
	want := writeProfile(t, m.Dir("ver"), "v") // Last Version 120.0.6099.71
	if _, err := m.Snapshot(ctx, "ver", SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	named := errcode.New(errcode.InvalidInput, "the Chrome named by --chrome does not run")
	tests := []struct {
		name   string
		local  string
		err    error
		force  bool
		refuse bool
	}{
		{"older local Chrome", "119.0.6045.199", nil, false, true},
		{"older minor version", "120.0.6099.70", nil, false, true},
		{"older, forced", "119.0.6045.199", nil, true, false},
		{"same Chrome", "120.0.6099.71", nil, false, false},
		{"newer local Chrome", "121.0.1.0", nil, false, false},
		{"no Chrome found", "", nil, false, false},
		{"named Chrome that does not run", "", named, false, true},
		{"named Chrome that does not run, in a run", "", errcode.New(errcode.BrowserLaunchFailed, "no version"), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(m.Dir("ver"), "marker"), []byte(tt.name), 0o600); err != nil {
				t.Fatal(err)
			}
			m.ChromeVersion = func(context.Context) (string, error) { return tt.local, tt.err }
			_, err := m.Restore(ctx, "ver", "latest", RestoreOptions{Force: tt.force})
			if tt.refuse {
				if want := errcode.Of(cmp.Or(tt.err, error(errcode.New(errcode.InvalidInput, "")))); errcode.Of(err) != want {
					t.Fatalf("restore: %v, want %s", err, want)
				}
				if b, _ := os.ReadFile(filepath.Join(m.Dir("ver"), "marker")); string(b) != tt.name {
					t.Errorf("a refused restore changed the profile")
				}
				return
			}
			if err != nil {
				t.Fatalf("restore: %v", err)
			}
			if b, err := os.ReadFile(filepath.Join(m.Dir("ver"), "Last Version")); err != nil || string(b) != want["Last Version"] {
				t.Errorf("restored Last Version %q, %v", b, err)
			}
		})
	}
}

// A restore or delete killed midway leaves a tree beside the profile that
// holds its cookies; the next command that locks the profile removes it,
// and nothing that belongs to another profile.
func TestLockSweepsWhatKilledCommandsLeft(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	for _, n := range []string{"sw", "sw.x", "other"} {
		if err := m.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	writeProfile(t, m.Dir("sw"), "sw")
	mkTree := func(p string) string {
		if err := os.MkdirAll(filepath.Join(p, "Default", "Network"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "Default", "Network", "Cookies"), []byte("live cookies"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Named as Restore (os.MkdirTemp) and Delete name them.
	restoring, err := os.MkdirTemp(m.Root, ".sw.restore-")
	if err != nil {
		t.Fatal(err)
	}
	ours := []string{
		mkTree(restoring),
		mkTree(filepath.Join(m.Root, ".sw.old-0123456789ab")),
		mkTree(filepath.Join(m.Root, fmt.Sprintf(".sw.deleted-%s", randomSuffix(deletedSuffixLen)))),
	}
	others := []string{
		mkTree(filepath.Join(m.Root, ".sw.x.restore-123")), // profile sw.x's
		mkTree(filepath.Join(m.Root, ".sw.x.deleted-abcdef")),
		mkTree(filepath.Join(m.Root, ".other.restore-77")),
		mkTree(filepath.Join(m.Root, ".sw.restore-notdigits")),
		mkTree(filepath.Join(m.Root, ".sw.deleted-toolongsuffix")),
	}
	// Lock is what every command on a profile takes first (snapshot,
	// restore, delete, prune, run, profile open).
	l, err := m.Lock(ctx, "sw", 0)
	if err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	for _, p := range ours {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s survived the next command on the profile (%v)", filepath.Base(p), err)
		}
	}
	for _, p := range others {
		if _, err := os.Stat(filepath.Join(p, "Default", "Network", "Cookies")); err != nil {
			t.Errorf("%s, not this profile's, was touched: %v", filepath.Base(p), err)
		}
	}
	list, err := m.List(ctx)
	if err != nil || len(list) != 3 {
		t.Errorf("profiles after the sweep: %+v, %v", list, err)
	}
}

// A store that is down is not a store without snapshots: restore latest of
// a profile the catalog knows no snapshot of fails with
// storage_unavailable, so that `director run` does not go on with an empty
// profile and blame the login. The store is a real S3 client aimed at a
// closed port.
func TestRestoreLatestWithTheStoreDown(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	down, err := storage.Open(ctx, "s3://snaps?endpoint="+addr+"&insecure=true", storage.Options{
		AWSAccessKeyID: "k", AWSSecretAccessKey: "s", Retry: storage.RetryPolicy{Attempts: 1}, CallTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m.Store = down
	var logs bytes.Buffer
	m.Log = slog.New(slog.NewTextHandler(&logs, nil))
	_, err = m.Restore(ctx, "fresh", "latest", RestoreOptions{})
	if errcode.Of(err) != errcode.StorageUnavailable {
		t.Fatalf("restore latest with the store down: %v [%s], want %s", err, errcode.Of(err), errcode.StorageUnavailable)
	}
	if logs.Len() > 0 {
		// The error is the one line a user sees; a warning that the
		// catalog's latest is used would contradict it.
		t.Errorf("logged as well as failing: %s", logs.String())
	}
	if _, err := os.Stat(m.Dir("fresh")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the failed restore created the profile: %v", err)
	}
}

// A rebuild that cannot decrypt some manifests (no identity, or not the one
// they were encrypted to) still adds every row it can read, then fails with
// decrypt_failed; a manifest that is damaged is skipped as before.
func TestRebuildFailsOnManifestsItCannotDecrypt(t *testing.T) {
	ctx := context.Background()
	id, _ := age.GenerateX25519Identity()
	other, _ := age.GenerateX25519Identity()
	a := newTestManager(t)
	plainSnap, encSnap := snapshotOf(t, a, "plain"), ""
	a.Recipients = []age.Recipient{id.Recipient()}
	encSnap = snapshotOf(t, a, "enc")
	// Not an age file: damaged, whatever the key.
	damaged := "bad/bad-20260101T000000Z-abcd.manifest.json.age"
	if err := a.Store.Put(ctx, damaged, strings.NewReader("not age"), 7); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name          string
		ids           []age.Identity
		added         []string
		undecryptable int
		skipped       int
	}{
		{"no identity", nil, []string{plainSnap}, 2, 2},
		{"another identity", []age.Identity{other}, []string{plainSnap}, 1, 2},
		{"the right identity", []age.Identity{id}, []string{encSnap, plainSnap}, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newTestManager(t)
			b.Store, b.Identities = a.Store, tt.ids
			res, err := b.Rebuild(ctx, false)
			if res == nil {
				t.Fatalf("rebuild returned no result: %v", err)
			}
			added := append([]string(nil), res.Added...)
			slices.Sort(added)
			want := append([]string(nil), tt.added...)
			slices.Sort(want)
			if !slices.Equal(added, want) || res.Undecryptable != tt.undecryptable || len(res.Skipped) != tt.skipped {
				t.Errorf("rebuild = %+v, want added %v, %d undecryptable, %d skipped", res, want, tt.undecryptable, tt.skipped)
			}
			for _, sid := range want {
				if _, err := b.Catalog.GetSnapshot(ctx, b.Store.String(), sid); err != nil {
					t.Errorf("row %s not in the catalog: %v", sid, err)
				}
			}
			if tt.undecryptable == 0 {
				if err != nil {
					t.Errorf("rebuild with the right key (a damaged manifest skipped): %v", err)
				}
				return
			}
			hint := errcode.HintOf(err)
			if errcode.Of(err) != errcode.DecryptFailed || !strings.Contains(err.Error(), fmt.Sprintf("%d of 3 manifest(s)", tt.undecryptable)) ||
				!strings.Contains(hint, "DIRECTOR_AGE_IDENTITY") || strings.Contains(hint, "key generate") {
				t.Errorf("rebuild = %v [%s], hint %q; want decrypt_failed naming %d of 3, with a hint on the identity the snapshots were encrypted to",
					err, errcode.Of(err), hint, tt.undecryptable)
			}
		})
	}
}

// snapshotOf creates a profile and snapshots it with m; it returns the id.
func snapshotOf(t *testing.T, m *Manager, name string) string {
	t.Helper()
	if err := m.Create(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir(name), name)
	res, err := m.Snapshot(context.Background(), name, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.ID
}

// A first restore of a new profile, or a delete, killed midway leaves a
// tree (with cookies) of a profile that does not exist, which no command on
// it will ever lock and sweep. profile list sweeps it, unless the profile's
// lock is held (its restore may be under way), and leaves no lock file.
func TestListSweepsLeftoversOfMissingProfiles(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "kept"); err != nil {
		t.Fatal(err)
	}
	mk := func(name string) string {
		p := filepath.Join(m.Root, name, "Default", "Network")
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "Cookies"), []byte("live cookies"), 0o600); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(m.Root, name)
	}
	gone := []string{mk(".fresh.restore-123"), mk(".fresh.old-0123456789ab"), mk(".was.deleted-abcdef")}
	held, err := m.Lock(ctx, "busy", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	busy := mk(".busy.restore-5") // the restore that holds the lock

	list, err := m.List(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "kept" {
		t.Fatalf("List = %+v, %v", list, err)
	}
	for _, p := range gone {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s survived profile list (%v)", filepath.Base(p), err)
		}
	}
	if _, err := os.Stat(filepath.Join(busy, "Default", "Network", "Cookies")); err != nil {
		t.Errorf("the leftover of a profile whose lock is held was touched: %v", err)
	}
	for _, n := range []string{".fresh.lock", ".was.lock"} {
		if _, err := os.Stat(filepath.Join(m.Root, n)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("profile list left %s (%v)", n, err)
		}
	}
}

// A machine that cannot decrypt the newest snapshot of a profile (no
// identity, or another one) must not quietly restore an older plaintext one
// as "latest": it fails with decrypt_failed and creates nothing. With the
// right identity it restores the newest; an older snapshot it cannot read
// does not stand in the way of a newer one it can.
func TestRestoreLatestNeverGoesBackPastASnapshotItCannotRead(t *testing.T) {
	ctx := context.Background()
	id, _ := age.GenerateX25519Identity()
	other, _ := age.GenerateX25519Identity()
	clock := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	a := newTestManager(t)
	a.Now = func() time.Time { clock = clock.Add(time.Hour); return clock }
	if err := a.Create(ctx, "demo"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, a.Dir("demo"), "demo")
	snap := func() string {
		res, err := a.Snapshot(ctx, "demo", SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	plain := snap()
	a.Recipients = []age.Recipient{id.Recipient()}
	enc := snap()

	for _, tt := range []struct {
		name string
		ids  []age.Identity
		want string // the snapshot restored, "" for decrypt_failed
	}{
		{"no identity", nil, ""},
		{"another identity", []age.Identity{other}, ""},
		{"the right identity", []age.Identity{id}, enc},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := newTestManager(t)
			b.Store, b.Identities = a.Store, tt.ids
			res, err := b.Restore(ctx, "demo", "latest", RestoreOptions{})
			if tt.want != "" {
				if err != nil || res.ID != tt.want {
					t.Fatalf("restore = %+v, %v; want %s", res, err, tt.want)
				}
				return
			}
			hint := errcode.HintOf(err)
			if errcode.Of(err) != errcode.DecryptFailed || !strings.Contains(err.Error(), enc) || !strings.Contains(hint, "DIRECTOR_AGE_IDENTITY") {
				t.Fatalf("restore = %+v, %v [%s] (hint %q); want decrypt_failed naming %s", res, err, errcode.Of(err), hint, enc)
			}
			if _, err := os.Stat(b.Dir("demo")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the failed restore created the profile (%v)", err)
			}
		})
	}

	// Newer plaintext after the encrypted one: a machine without the key
	// restores the newest, which it can read.
	a.Recipients = nil
	newest := snap()
	c := newTestManager(t)
	c.Store = a.Store
	res, err := c.Restore(ctx, "demo", "latest", RestoreOptions{})
	if err != nil || res.ID != newest {
		t.Fatalf("restore = %+v, %v; want %s (plain %s, encrypted %s)", res, err, newest, plain, enc)
	}
}

// unlistableStore fails every List, like a store that cannot be reached.
type unlistableStore struct{ storage.Store }

func (unlistableStore) List(context.Context, string) ([]storage.Object, error) {
	return nil, errcode.New(errcode.StorageUnavailable, "injected failure")
}

// TestVerifyWithoutCatalogNamesHome: verify on a Manager without a catalog
// (a home that has none) says which home it found none in, so that a
// mistyped --home shows; it said "no catalog here yet".
func TestVerifyWithoutCatalogNamesHome(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name      string
		unlisted  bool
		ref, code string
	}{
		{"latest, none stored", false, "", "snapshot_not_found"},
		{"an id the store lacks", false, "w-20261101T000000Z-abcd", "snapshot_not_found"},
		{"a store that cannot be listed", true, "latest", "storage_unavailable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newTestManager(t)
			m.Catalog = nil
			m.Home = filepath.Join(t.TempDir(), "mistyped-home")
			if c.unlisted {
				m.Store = unlistableStore{m.Store}
			}
			_, err := m.Verify(ctx, "w", c.ref)
			if string(errcode.Of(err)) != c.code || !strings.Contains(err.Error(), "no catalog in "+m.Home+" yet") {
				t.Errorf("verify: %v [%s], want %s naming the home %s", err, errcode.Of(err), c.code, m.Home)
			}
		})
	}
}
