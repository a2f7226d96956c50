package profiles

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"director/catalog"
	"director/errcode"
	"director/storage"
)

// withOtherStore returns a Manager on a's catalog and profiles but another
// file store, as `--store file:///other` gives.
func withOtherStore(t *testing.T, a *Manager) *Manager {
	t.Helper()
	st, err := storage.Open(context.Background(), "file://"+filepath.Join(t.TempDir(), "other"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &Manager{Root: a.Root, Store: st, Catalog: a.Catalog, LockWait: a.LockWait, Now: a.Now}
}

func snapshotIDs(t *testing.T, m *Manager, profile string) []string {
	t.Helper()
	snaps, err := m.Snapshots(context.Background(), profile)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, s := range snaps {
		out = append(out, s.ID)
	}
	return out
}

func storeKeys(t *testing.T, st storage.Store, prefix string) []string {
	t.Helper()
	objs, err := st.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, o := range objs {
		out = append(out, o.Key)
	}
	return out
}

// One catalog, two stores: every use-case run against store B sees and
// touches only B's snapshots, whatever the default store A holds.
func TestUseCasesWorkOnTheCurrentStoreOnly(t *testing.T) {
	ctx := context.Background()
	a := newTestManager(t)
	clock := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	a.Now = func() time.Time { return clock }
	b := withOtherStore(t, a)
	if err := a.Create(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	take := func(m *Manager, marker string) string {
		t.Helper()
		writeProfile(t, m.Dir("work"), marker)
		clock = clock.Add(time.Hour)
		res, err := m.Snapshot(ctx, "work", SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	b1 := take(b, "in-b") // B's only snapshot is the oldest of all
	a1 := take(a, "a1")
	a2 := take(a, "a2")

	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"snapshots lists one store", func(t *testing.T) {
			if got := snapshotIDs(t, b, "work"); strings.Join(got, ",") != b1 {
				t.Errorf("B lists %v, want [%s]", got, b1)
			}
			if got := snapshotIDs(t, a, ""); strings.Join(got, ",") != a2+","+a1 {
				t.Errorf("A lists %v, want [%s %s]", got, a2, a1)
			}
		}},
		{"snapshot rows carry their store in JSON", func(t *testing.T) {
			snaps, _ := b.Snapshots(ctx, "work")
			raw, _ := json.Marshal(snaps)
			var rows []map[string]any
			if err := json.Unmarshal(raw, &rows); err != nil || len(rows) != 1 || rows[0]["store"] != b.Store.String() {
				t.Errorf("JSON %s, want one row with store %s", raw, b.Store)
			}
		}},
		{"list shows the store's last snapshot", func(t *testing.T) {
			for _, c := range []struct {
				m    *Manager
				want string
			}{{a, a2}, {b, b1}} {
				infos, err := c.m.List(ctx)
				if err != nil || len(infos) != 1 || infos[0].LastSnapshot != c.want {
					t.Errorf("List on %s = %+v, %v; want last snapshot %s", c.m.Store, infos, err, c.want)
				}
			}
		}},
		{"latest resolves in the store", func(t *testing.T) {
			res, err := b.Restore(ctx, "work", "latest", RestoreOptions{})
			if err != nil || res.ID != b1 {
				t.Fatalf("restore latest from B = %+v, %v; want %s", res, err, b1)
			}
			if got := readTree(t, b.Dir("work"))["Local State"]; !strings.Contains(got, "in-b") {
				t.Errorf("restored Local State %q, want B's", got)
			}
		}},
		{"an id of another store is not found", func(t *testing.T) {
			if _, err := b.Restore(ctx, "work", a1, RestoreOptions{}); errcode.Of(err) != errcode.SnapshotNotFound || errcode.HintOf(err) == "" {
				t.Errorf("restore of A's id from B = %v, want snapshot_not_found with a hint", err)
			}
			if _, err := b.Verify(ctx, "work", a1); errcode.Of(err) != errcode.SnapshotNotFound {
				t.Errorf("verify of A's id from B = %v, want snapshot_not_found", err)
			}
		}},
		{"verify latest checks the store's snapshot", func(t *testing.T) {
			if res, err := b.Verify(ctx, "work", "latest"); err != nil || res.ID != b1 {
				t.Errorf("verify latest on B = %+v, %v; want %s", res, err, b1)
			}
		}},
		{"prune keeps the other store's rows", func(t *testing.T) {
			res, err := b.Prune(ctx, "work", 1, 0)
			if err != nil || len(res.Deleted) != 0 || strings.Join(res.Kept, ",") != b1 {
				t.Errorf("prune on B = %+v, %v; want kept [%s], nothing deleted", res, err, b1)
			}
			if got := snapshotIDs(t, a, "work"); len(got) != 2 {
				t.Errorf("after pruning B, A lists %v, want 2 snapshots", got)
			}
		}},
		{"rebuild keeps the other store's rows", func(t *testing.T) {
			res, err := b.Rebuild(ctx, false)
			if err != nil || len(res.Removed) != 0 || len(res.Added) != 0 || res.Found != 1 {
				t.Errorf("rebuild on B = %+v, %v; want 1 found, nothing added or removed", res, err)
			}
			if got := snapshotIDs(t, a, "work"); len(got) != 2 {
				t.Errorf("after rebuilding B, A lists %v, want 2 snapshots", got)
			}
		}},
		{"delete with snapshots keeps the other store's", func(t *testing.T) {
			if _, err := b.Delete(ctx, "work", DeleteOptions{WithSnapshots: true}); err != nil {
				t.Fatal(err)
			}
			if got := storeKeys(t, b.Store, "work/"); len(got) != 0 {
				t.Errorf("B still holds %v", got)
			}
			if got := snapshotIDs(t, a, "work"); len(got) != 2 {
				t.Errorf("after deleting through B, A lists %v, want 2 snapshots", got)
			}
			if got := storeKeys(t, a.Store, "work/"); len(got) != 4 {
				t.Errorf("after deleting through B, A's store holds %v, want 4 objects", got)
			}
		}},
	}
	for _, s := range steps {
		t.Run(s.name, s.run)
	}
}

// A catalog written before stores were recorded: its rows go to the first
// store that uses it, and a second store does not see them.
func TestLegacyRowsAreAdoptedByTheStoreHoldingThem(t *testing.T) {
	ctx := context.Background()
	a := newTestManager(t)
	if err := a.Create(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, a.Dir("old"), "x")
	res, err := a.Snapshot(ctx, "old", SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Turn the row into one from before migration 0002.
	raw, err := sql.Open("sqlite3", a.Catalog.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.ExecContext(ctx, `UPDATE snapshots SET store = '' WHERE id = ?`, res.ID); err != nil {
		t.Fatal(err)
	}
	// A first command against another store must not take it: the
	// archive is not there.
	if got := snapshotIDs(t, withOtherStore(t, a), "old"); len(got) != 0 {
		t.Errorf("the other store lists %v, want nothing", got)
	}
	if got := snapshotIDs(t, a, "old"); strings.Join(got, ",") != res.ID {
		t.Fatalf("the store holding the archive lists %v, want the legacy row %s", got, res.ID)
	}
	if got := snapshotIDs(t, withOtherStore(t, a), "old"); len(got) != 0 {
		t.Errorf("after adoption the other store lists %v, want nothing", got)
	}
}

func TestDeleteWithSnapshots(t *testing.T) {
	ctx := context.Background()
	type setup struct {
		dir      bool // the profile directory exists
		snapshot bool // a snapshot in the store and the catalog
		lostRows bool // the catalog lost its rows (db deleted)
		strays   bool // objects under NAME/ no manifest describes, 2 hours old
		young    bool // the strays were stored a moment ago: perhaps another machine's snapshot under way
		killed   bool // a snapshot killed midway left its partial upload
	}
	cases := []struct {
		name     string
		setup    setup
		with     bool
		code     errcode.Code
		dirGone  bool
		wantLeft int // objects left under NAME/
	}{
		{"dir and snapshots", setup{dir: true, snapshot: true}, true, "", true, 0},
		{"lost catalog", setup{dir: true, snapshot: true, lostRows: true}, true, "", true, 0},
		{"no dir, snapshots", setup{snapshot: true}, true, "", false, 0},
		{"no dir, lost catalog", setup{snapshot: true, lostRows: true}, true, "", false, 0},
		{"stray objects", setup{dir: true, snapshot: true, strays: true}, true, "", true, 0},
		{"only stray objects", setup{strays: true}, true, "", false, 0},
		// An archive without its manifest (or the reverse) younger than
		// StrayGrace may be another machine's snapshot between storing the
		// two: deleting it would leave a manifest without its archive,
		// which that machine reports as stored. It is left, and said.
		{"young stray objects", setup{dir: true, snapshot: true, strays: true, young: true}, true, "", true, 2},
		{"only young stray objects", setup{strays: true, young: true}, true, "", false, 2},
		{"first snapshot killed", setup{dir: true, killed: true}, true, "", true, 0},
		{"snapshot killed after another", setup{dir: true, snapshot: true, killed: true}, true, "", true, 0},
		{"nothing at all", setup{}, true, errcode.ProfileNotFound, false, 0},
		{"plain delete, no dir", setup{snapshot: true}, false, errcode.ProfileNotFound, false, 2},
		{"plain delete keeps snapshots", setup{dir: true, snapshot: true}, false, "", true, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newTestManager(t)
			const name = "work"
			// Neighbours whose names share a prefix must survive.
			for _, key := range []string{"work.old/work.old-1.tar.zst", "workx/workx-1.manifest.json"} {
				if err := m.Store.Put(ctx, key, strings.NewReader("x"), 1); err != nil {
					t.Fatal(err)
				}
			}
			if c.setup.dir || c.setup.snapshot {
				if err := m.Create(ctx, name); err != nil {
					t.Fatal(err)
				}
				writeProfile(t, m.Dir(name), "v")
			}
			if c.setup.snapshot {
				if _, err := m.Snapshot(ctx, name, SnapshotOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			strayKeys := []string{name + "/work-20260101T000000Z-abcd.tar.zst.age", name + "/work-20260102T000000Z-efgh.manifest.json"}
			if c.setup.strays {
				for _, key := range append(strayKeys, name+"/notes.txt") {
					if err := m.Store.Put(ctx, key, strings.NewReader("stray"), 5); err != nil {
						t.Fatal(err)
					}
					if !c.setup.young {
						old := time.Now().Add(-2 * time.Hour)
						if err := os.Chtimes(filepath.Join(strings.TrimPrefix(m.Store.String(), "file://"), key), old, old); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			partial := filepath.Join(strings.TrimPrefix(m.Store.String(), "file://"), name, ".director-put-0123456789abcdef.tmp")
			if c.setup.killed {
				if err := os.MkdirAll(filepath.Dir(partial), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(partial, []byte("half an archive, with cookies"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if !c.setup.dir {
				os.RemoveAll(m.Dir(name))
			}
			if c.setup.lostRows {
				lost := newTestManager(t)
				m.Catalog = lost.Catalog
			}

			res, err := m.Delete(ctx, name, DeleteOptions{WithSnapshots: c.with})
			if errcode.Of(err) != c.code {
				t.Fatalf("Delete = %+v, %v; want code %q", res, err, c.code)
			}
			if err != nil {
				if errcode.HintOf(err) == "" {
					t.Errorf("error without a hint: %v", err)
				}
			} else if res.RemovedDir != c.dirGone {
				t.Errorf("RemovedDir = %v, want %v", res.RemovedDir, c.dirGone)
			}
			if _, err := os.Stat(m.Dir(name)); c.dirGone && !os.IsNotExist(err) {
				t.Errorf("profile directory still there")
			}
			if left := storeKeys(t, m.Store, name+"/"); len(left) != c.wantLeft {
				t.Errorf("store still holds %v under %s/, want %d objects", left, name, c.wantLeft)
			}
			if got := storeKeys(t, m.Store, "work"); len(got) != 2+c.wantLeft {
				t.Errorf("store holds %v, want the two neighbours kept", got)
			}
			if c.with && c.code == "" {
				if got := snapshotIDs(t, m, name); len(got) != 0 {
					t.Errorf("catalog still lists %v", got)
				}
				want := 0
				if c.setup.snapshot {
					want++
				}
				if c.setup.strays && !c.setup.young {
					want += 2 // an archive and a manifest of two more snapshot ids
				}
				if res == nil || len(res.DeletedSnapshots) != want {
					t.Errorf("DeletedSnapshots = %+v, want %d ids", res, want)
				}
				var wantLeft []string
				if c.setup.young {
					wantLeft = strayKeys
				}
				if res != nil && !slices.Equal(res.LeftInStore, wantLeft) {
					t.Errorf("LeftInStore = %q, want %q", res.LeftInStore, wantLeft)
				}
			}
			if _, err := os.Stat(partial); c.setup.killed && err == nil {
				t.Errorf("the killed snapshot's partial upload is still in the store")
			}
			noLeftovers(t, m, name)
		})
	}
}

// refusingDeletes is a store whose Delete is refused as a store refuses a
// key without the permission: with the store's own hint.
type refusingDeletes struct{ storage.Store }

func (refusingDeletes) Delete(ctx context.Context, key string) error {
	return errcode.New(errcode.StorageUnavailable, "delete %q: AccessDenied", key).
		WithHint("the server refused the credentials (AccessDenied): check AWS_ACCESS_KEY_ID")
}

// A delete --with-snapshots that the store stops partway keeps the store's
// hint (what is wrong) and says how to finish; run again, it finishes.
func TestDeleteWithSnapshotsStoppedByTheStore(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("work"), "v")
	if _, err := m.Snapshot(ctx, "work", SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	real := m.Store
	m.Store = refusingDeletes{real}
	_, err := m.Delete(ctx, "work", DeleteOptions{WithSnapshots: true})
	hint := errcode.HintOf(err)
	if errcode.Of(err) != errcode.StorageUnavailable || !strings.Contains(hint, "AccessDenied): check AWS_ACCESS_KEY_ID") ||
		!strings.Contains(hint, "director profile delete work --with-snapshots` again to finish") {
		t.Fatalf("Delete through a store that refuses deletes: %v [%s], hint %q", err, errcode.Of(err), hint)
	}
	m.Store = real
	if _, err := m.Delete(ctx, "work", DeleteOptions{WithSnapshots: true}); err != nil {
		t.Fatalf("Delete again: %v", err)
	}
	if left := storeKeys(t, real, "work/"); len(left) != 0 {
		t.Fatalf("the store still holds %v", left)
	}
}

// refusingSweeps is a store whose Sweep fails as a store that went down
// between calls does.
type refusingSweeps struct{ storage.Store }

func (refusingSweeps) Sweep(ctx context.Context, prefix string) error {
	return errcode.New(errcode.StorageUnavailable, "sweep %q: connection refused", prefix).
		WithHint("check that the server is up")
}

// A prune removes what a snapshot killed midway left in the store (a cron
// job that prunes keeps the store clean), and a sweep the store stops says
// what was pruned already and how to finish.
func TestPruneSweepsWhatKilledSnapshotsLeft(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("work"), "v")
	var ids []string
	for range 2 {
		res, err := m.Snapshot(ctx, "work", SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ID)
	}
	dir := filepath.Join(strings.TrimPrefix(m.Store.String(), "file://"), "work")
	partial := filepath.Join(dir, ".director-put-0123456789abcdef.tmp")
	if err := os.WriteFile(partial, []byte("half an archive, with cookies"), 0o600); err != nil {
		t.Fatal(err)
	}

	real := m.Store
	m.Store = refusingSweeps{real}
	// The hint's command has the flags prune requires (a plain `director
	// profile prune work` is refused: it needs --keep-last).
	res, err := m.Prune(ctx, "work", 1, time.Nanosecond)
	hint := errcode.HintOf(err)
	if errcode.Of(err) != errcode.StorageUnavailable || !strings.Contains(hint, "check that the server is up") ||
		!strings.Contains(hint, "run `director profile prune work --keep-last 1 --keep-within 1ns` again to finish") {
		t.Fatalf("Prune through a store that stops the sweep: %v [%s], hint %q", err, errcode.Of(err), hint)
	}
	if res == nil || len(res.Deleted) != 1 || res.Deleted[0] != ids[0] {
		t.Fatalf("Prune through a store that stops the sweep reports %+v, want %s deleted", res, ids[0])
	}

	m.Store = real
	res, err = m.Prune(ctx, "work", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Kept) != 1 || res.Kept[0] != ids[1] || len(res.Deleted) != 0 {
		t.Fatalf("second prune: %+v", res)
	}
	if _, err := os.Stat(partial); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the killed snapshot's partial upload is still in the store (%v)", err)
	}
	if left := storeKeys(t, real, "work/"); len(left) != 2 {
		t.Fatalf("the store holds %v, want the newest archive and its manifest", left)
	}
	if _, err := m.Verify(ctx, "work", "latest"); err != nil {
		t.Fatalf("verify the kept snapshot: %v", err)
	}
}

// noLeftovers fails when anything of a profile that does not exist is left
// in the profile root (a .NAME.lock, a restore temp dir, a trash dir).
func noLeftovers(t *testing.T, m *Manager, name string) {
	t.Helper()
	if _, err := os.Stat(m.Dir(name)); err == nil {
		return
	}
	entries, _ := os.ReadDir(m.Root)
	var left []string
	for _, e := range entries {
		if strings.Contains(e.Name(), name) {
			left = append(left, e.Name())
		}
	}
	sort.Strings(left)
	if len(left) > 0 {
		t.Errorf("left behind in %s for missing profile %q: %v", m.Root, name, left)
	}
}

// Failed commands on profiles that never existed leave nothing behind; a
// profile that exists keeps its lock file.
func TestNoLockFileForMissingProfiles(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "real"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("real"), "r")
	if _, err := m.Snapshot(ctx, "real", SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(t.TempDir(), "junk.tar.zst")
	os.WriteFile(junk, []byte("not an archive"), 0o600)
	cases := []struct {
		name    string
		profile string
		run     func(name string) error
		code    errcode.Code
	}{
		{"restore latest of a new profile", "newprof", func(n string) error { _, err := m.Restore(ctx, n, "latest", RestoreOptions{}); return err }, errcode.SnapshotNotFound},
		{"restore a missing archive", "x", func(n string) error {
			_, err := m.Restore(ctx, n, "", RestoreOptions{Archive: "/nonexistent"})
			return err
		}, errcode.SnapshotNotFound},
		{"restore a damaged archive", "y", func(n string) error { _, err := m.Restore(ctx, n, "", RestoreOptions{Archive: junk}); return err }, errcode.SnapshotCorrupt},
		{"restore another profile's id", "z", func(n string) error {
			s, _ := m.Snapshots(ctx, "real")
			_, err := m.Restore(ctx, n, s[0].ID, RestoreOptions{})
			return err
		}, errcode.InvalidInput},
		{"delete", "nosuch", func(n string) error { _, err := m.Delete(ctx, n, DeleteOptions{}); return err }, errcode.ProfileNotFound},
		{"delete with snapshots", "nosuch2", func(n string) error { _, err := m.Delete(ctx, n, DeleteOptions{WithSnapshots: true}); return err }, errcode.ProfileNotFound},
		{"snapshot", "ghost", func(n string) error { _, err := m.Snapshot(ctx, n, SnapshotOptions{}); return err }, errcode.ProfileNotFound},
		{"prune", "ghost2", func(n string) error { _, err := m.Prune(ctx, n, 1, 0); return err }, errcode.ProfileNotFound},
		{"lock and unlock", "ghost3", func(n string) error {
			l, err := m.Lock(ctx, n, 0)
			if err == nil {
				l.Unlock()
				l.Unlock() // twice is fine
			}
			return err
		}, ""},
		{"delete of a real profile", "real", func(n string) error { _, err := m.Delete(ctx, n, DeleteOptions{WithSnapshots: true}); return err }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.run(c.profile)
			if errcode.Of(err) != c.code {
				t.Fatalf("got %v, want code %q", err, c.code)
			}
			noLeftovers(t, m, c.profile)
		})
	}
	// A profile that exists keeps its lock file: removing it would gain
	// nothing and cost a retry for every locker.
	if err := m.Create(ctx, "kept"); err != nil {
		t.Fatal(err)
	}
	l, err := m.Lock(ctx, "kept", 0)
	if err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	if _, err := os.Stat(filepath.Join(m.Root, ".kept.lock")); err != nil {
		t.Errorf("lock file of an existing profile: %v", err)
	}
}

func TestVerifyChecksTheStoredManifest(t *testing.T) {
	ctx := context.Background()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		encrypt bool
		damage  func(m *Manager, res, other *SnapshotResult) error
		code    errcode.Code
		msg     string // the error names this
	}{
		{"intact", false, nil, "", ""},
		{"intact, encrypted", true, nil, "", ""},
		{"manifest missing", false, func(m *Manager, res, _ *SnapshotResult) error {
			return m.Store.Delete(ctx, res.ManifestKey)
		}, errcode.SnapshotCorrupt, ".manifest.json"},
		{"manifest missing, encrypted", true, func(m *Manager, res, _ *SnapshotResult) error {
			return m.Store.Delete(ctx, res.ManifestKey)
		}, errcode.SnapshotCorrupt, ".manifest.json.age"},
		{"manifest of another snapshot", false, func(m *Manager, res, other *SnapshotResult) error {
			rc, _, err := m.Store.Get(ctx, other.ManifestKey)
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			buf.ReadFrom(rc)
			rc.Close()
			if err := m.Store.Delete(ctx, res.ManifestKey); err != nil {
				return err
			}
			return m.Store.Put(ctx, res.ManifestKey, &buf, int64(buf.Len()))
		}, errcode.SnapshotCorrupt, ".manifest.json"},
		{"manifest garbled", false, func(m *Manager, res, _ *SnapshotResult) error {
			if err := m.Store.Delete(ctx, res.ManifestKey); err != nil {
				return err
			}
			return m.Store.Put(ctx, res.ManifestKey, strings.NewReader("{not json"), 9)
		}, errcode.SnapshotCorrupt, ".manifest.json"},
		// A damaged archive is blamed, not the manifest that describes
		// what the archive should have been, nor the key.
		{"archive of another snapshot", false, func(m *Manager, res, other *SnapshotResult) error {
			return replaceObject(ctx, m, res.ObjectKey, func([]byte) []byte { return getObject(t, m, other.ObjectKey) })
		}, errcode.SnapshotCorrupt, "stored archive"},
		{"archive with a flipped byte", false, func(m *Manager, res, _ *SnapshotResult) error {
			return replaceObject(ctx, m, res.ObjectKey, flipMiddleByte)
		}, errcode.SnapshotCorrupt, "stored archive"},
		{"archive with a flipped byte, encrypted", true, func(m *Manager, res, _ *SnapshotResult) error {
			return replaceObject(ctx, m, res.ObjectKey, flipMiddleByte)
		}, errcode.SnapshotCorrupt, "stored archive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newTestManager(t)
			if c.encrypt {
				m.Recipients, m.Identities = []age.Recipient{id.Recipient()}, []age.Identity{id}
			}
			if err := m.Create(ctx, "v"); err != nil {
				t.Fatal(err)
			}
			writeProfile(t, m.Dir("v"), "one")
			other, err := m.Snapshot(ctx, "v", SnapshotOptions{})
			if err != nil {
				t.Fatal(err)
			}
			writeProfile(t, m.Dir("v"), "two")
			res, err := m.Snapshot(ctx, "v", SnapshotOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if c.damage != nil {
				if err := c.damage(m, res, other); err != nil {
					t.Fatal(err)
				}
			}
			got, err := m.Verify(ctx, "v", res.ID)
			if errcode.Of(err) != c.code {
				t.Fatalf("Verify = %+v, %v; want code %q", got, err, c.code)
			}
			if err == nil {
				if !got.OK {
					t.Errorf("Verify = %+v, want ok", got)
				}
				return
			}
			if !strings.Contains(err.Error(), res.ID) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not name the snapshot and %q", err, c.msg)
			}
			restores := "still restores"
			if c.msg == "stored archive" {
				restores = "will not restore"
				// Restore names the damaged archive the same way and
				// leaves the profile as it was.
				before := readTree(t, m.Dir("v"))
				_, rerr := m.Restore(ctx, "v", res.ID, RestoreOptions{})
				if errcode.Of(rerr) != errcode.SnapshotCorrupt || !strings.Contains(rerr.Error(), "stored archive") {
					t.Errorf("Restore = %v, want snapshot_corrupt naming the stored archive", rerr)
				}
				if after := readTree(t, m.Dir("v")); !maps.Equal(before, after) {
					t.Errorf("a failed restore changed the profile")
				}
			}
			if h := errcode.HintOf(err); !strings.Contains(h, restores) || !strings.Contains(h, "director profile snapshot v") {
				t.Errorf("hint %q does not say the archive %s and how to take a new snapshot", h, restores)
			}
		})
	}
}

// getObject reads a whole object of m's store.
func getObject(t *testing.T, m *Manager, key string) []byte {
	t.Helper()
	rc, _, err := m.Store.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replaceObject replaces the object at key with edit of its bytes.
func replaceObject(ctx context.Context, m *Manager, key string, edit func([]byte) []byte) error {
	rc, _, err := m.Store.Get(ctx, key)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return err
	}
	b = edit(b)
	if err := m.Store.Delete(ctx, key); err != nil {
		return err
	}
	return m.Store.Put(ctx, key, bytes.NewReader(b), int64(len(b)))
}

func flipMiddleByte(b []byte) []byte {
	b[len(b)/2] ^= 0x40
	return b
}

// strays picks the objects that belong to no snapshot: an archive without
// its manifest, or the reverse, old enough, named by no row, and director's.
func TestStrays(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	old, young := now.Add(-2*time.Hour), now.Add(-time.Minute)
	obj := func(key string, at time.Time) storage.Object { return storage.Object{Key: key, Size: 1, Modified: at} }
	cases := []struct {
		name string
		objs []storage.Object
		rows []catalog.Snapshot
		want []string
	}{
		{"a whole snapshot", []storage.Object{obj("w/w-1.tar.zst", old), obj("w/w-1.manifest.json", old)}, nil, nil},
		{"an archive alone", []storage.Object{obj("w/w-1.tar.zst", old)}, nil, []string{"w/w-1.tar.zst"}},
		{"an encrypted archive alone", []storage.Object{obj("w/w-1.tar.zst.age", old), obj("w/w-1.manifest.json", old)},
			nil, []string{"w/w-1.tar.zst.age", "w/w-1.manifest.json"}},
		{"a manifest alone", []storage.Object{obj("w/w-1.manifest.json.age", old)}, nil, []string{"w/w-1.manifest.json.age"}},
		{"too young", []storage.Object{obj("w/w-1.tar.zst", young)}, nil, nil},
		{"no time", []storage.Object{obj("w/w-1.tar.zst", time.Time{})}, nil, nil},
		{"named by a row", []storage.Object{obj("w/w-1.tar.zst", old)}, []catalog.Snapshot{{ID: "w-1", ObjectKey: "w/w-1.tar.zst", ManifestKey: "w/w-1.manifest.json"}}, nil},
		{"not director's", []storage.Object{obj("w/notes.txt", old), obj("w/x-1.tar.zst", old), obj("w/w-1.tar.gz", old)}, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := strays("w", c.objs, c.rows, now.Add(-StrayGrace))
			if !slices.Equal(got, c.want) {
				t.Errorf("strays = %v, want %v", got, c.want)
			}
		})
	}
}

// A snapshot killed between storing its archive and its manifest leaves an
// archive that no row and no manifest names. catalog rebuild lists it,
// prune removes it once it is an hour old (a younger one may be another
// machine's snapshot under way), and the snapshots stay whole.
func TestPruneRemovesStrays(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("work"), "v")
	var snaps []*SnapshotResult
	for range 2 {
		res, err := m.Snapshot(ctx, "work", SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, res)
	}
	// The newest snapshot was killed after its archive was stored: no
	// manifest, no row.
	killed := snaps[1]
	if err := m.Store.Delete(ctx, killed.ManifestKey); err != nil {
		t.Fatal(err)
	}
	if err := m.Catalog.DeleteSnapshot(ctx, catalog.StoreName(storage.ID(m.Store)), killed.ID); err != nil {
		t.Fatal(err)
	}

	rb, err := m.Rebuild(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rb.Strays, []string{killed.ObjectKey}) || len(rb.Added) != 0 {
		t.Fatalf("rebuild: %+v, want the stray %s listed", rb, killed.ObjectKey)
	}
	res, err := m.Prune(ctx, "work", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Strays) != 0 || !sameKeys(storeKeys(t, m.Store, "work/"), snaps[0].ManifestKey, snaps[0].ObjectKey, killed.ObjectKey) {
		t.Fatalf("a prune removed a stray younger than %s: %+v", StrayGrace, res)
	}

	// This machine's clock two hours ahead of the store's: the stray is
	// still young by the store's clock (it may be another machine's
	// snapshot, its manifest on the way), so it stays.
	m.Now = func() time.Time { return time.Now().Add(2 * StrayGrace) }
	res, err = m.Prune(ctx, "work", 1, 0)
	if err != nil || len(res.Strays) != 0 {
		t.Fatalf("a prune on a clock two hours ahead removed %+v (%v)", res, err)
	}
	m.Now = nil
	// An hour later by the store's clock (the file store's is the file
	// system's: the archive's mtime goes back).
	file := filepath.Join(strings.TrimPrefix(m.Store.String(), "file://"), filepath.FromSlash(killed.ObjectKey))
	back := time.Now().Add(-StrayGrace - time.Minute)
	if err := os.Chtimes(file, back, back); err != nil {
		t.Fatal(err)
	}
	res, err = m.Prune(ctx, "work", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Strays, []string{killed.ObjectKey}) || !slices.Equal(res.Kept, []string{snaps[0].ID}) {
		t.Fatalf("prune: %+v, want %s removed and %s kept", res, killed.ObjectKey, snaps[0].ID)
	}
	if left := storeKeys(t, m.Store, "work/"); !sameKeys(left, snaps[0].ManifestKey, snaps[0].ObjectKey) {
		t.Fatalf("the store holds %v", left)
	}
	if probes := storeKeys(t, m.Store, storage.CheckPrefix); len(probes) != 0 {
		t.Fatalf("the clock probes are left in the store: %v", probes)
	}
	if _, err := m.Verify(ctx, "work", "latest"); err != nil {
		t.Fatalf("verify the kept snapshot: %v", err)
	}
}

// sameKeys says whether got holds exactly want, in any order.
func sameKeys(got []string, want ...string) bool {
	return slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want)))
}

// A delete --with-snapshots killed after its last object leaves the store's
// folder; run again, it reports that nothing is left (profile_not_found)
// and takes the empty folder with it.
func TestDeleteAgainAfterTheLastObject(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	dir := filepath.Join(strings.TrimPrefix(m.Store.String(), "file://"), "work")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := m.Delete(ctx, "work", DeleteOptions{WithSnapshots: true})
	if errcode.Of(err) != errcode.ProfileNotFound {
		t.Fatalf("Delete = %v, want profile_not_found", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the empty store folder is still there (%v)", err)
	}
}

// TestStaleCatalogAfterAnotherMachinePrunes: machine B prunes or deletes
// snapshots that machine A's catalog still lists. A's restore and verify of
// them fail with snapshot_not_found saying the snapshot left the store and
// that A's catalog is out of date (catalog rebuild), not "no such object"
// with a hint to list the catalog that still shows it, nor, for verify,
// snapshot_corrupt saying the archive "still restores".
func TestStaleCatalogAfterAnotherMachinePrunes(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		b    func(t *testing.T, b *Manager) // what machine B does
		a    func(a *Manager, old string) error
	}{
		{"restore a pruned id", func(t *testing.T, b *Manager) {
			if _, err := b.Prune(ctx, "work", 1, 0); err != nil {
				t.Fatal(err)
			}
		}, func(a *Manager, old string) error {
			_, err := a.Restore(ctx, "work", old, RestoreOptions{})
			return err
		}},
		{"verify a pruned id", func(t *testing.T, b *Manager) {
			if _, err := b.Prune(ctx, "work", 1, 0); err != nil {
				t.Fatal(err)
			}
		}, func(a *Manager, old string) error {
			_, err := a.Verify(ctx, "work", old)
			return err
		}},
		{"restore latest after delete --with-snapshots", func(t *testing.T, b *Manager) {
			if _, err := b.Delete(ctx, "work", DeleteOptions{WithSnapshots: true}); err != nil {
				t.Fatal(err)
			}
		}, func(a *Manager, _ string) error {
			_, err := a.Restore(ctx, "work", "latest", RestoreOptions{})
			return err
		}},
		{"verify latest after delete --with-snapshots", func(t *testing.T, b *Manager) {
			if _, err := b.Delete(ctx, "work", DeleteOptions{WithSnapshots: true}); err != nil {
				t.Fatal(err)
			}
		}, func(a *Manager, _ string) error {
			_, err := a.Verify(ctx, "work", "latest")
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newTestManager(t)
			if err := a.Create(ctx, "work"); err != nil {
				t.Fatal(err)
			}
			writeProfile(t, a.Dir("work"), "a")
			old, err := a.Snapshot(ctx, "work", SnapshotOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Snapshot(ctx, "work", SnapshotOptions{}); err != nil {
				t.Fatal(err)
			}
			b := newTestManager(t)
			b.Store = a.Store
			if _, err := b.Rebuild(ctx, false); err != nil {
				t.Fatal(err)
			}
			tt.b(t, b)
			err = tt.a(a, old.ID)
			// Once B deleted every snapshot, the store holds nothing: that
			// may as well be a store that is down (a disk not mounted), and
			// the message says both; the code is storage_unavailable, as
			// catalog rebuild's, so that a run does not take it for a
			// profile without snapshots.
			emptied := strings.Contains(tt.name, "delete")
			if want := map[bool]errcode.Code{false: errcode.SnapshotNotFound, true: errcode.StorageUnavailable}[emptied]; errcode.Of(err) != want {
				t.Fatalf("err = %v [%s], want %s", err, errcode.Of(err), want)
			}
			if msg := err.Error(); !emptied && (!strings.Contains(msg, "no longer in") || !strings.Contains(msg, "catalog")) {
				t.Errorf("message %q does not say the snapshot left the store that the catalog lists", msg)
			}
			if msg := err.Error(); emptied && (!strings.Contains(msg, "holds nothing at all (is it down?)") || !strings.Contains(msg, "catalog")) {
				t.Errorf("message %q does not say the store the catalog lists is empty", msg)
			}
			if hint := errcode.HintOf(err); !strings.Contains(hint, "director catalog rebuild") || emptied != strings.Contains(hint, "mount") {
				t.Errorf("hint %q does not say to rebuild the catalog (or, for an empty store, to mount it first)", hint)
			}
			// What the hint says works. In the emptied store, the rebuild
			// takes it for a store that is down, changes nothing, and says
			// how to drop the rows.
			rb, err := a.Rebuild(ctx, false)
			if emptied {
				if errcode.Of(err) != errcode.StorageUnavailable || !strings.Contains(errcode.HintOf(err), "`director catalog rebuild --allow-empty-store`") {
					t.Fatalf("rebuild from the emptied store: %v [%s], hint %q", err, errcode.Of(err), errcode.HintOf(err))
				}
				if rows, _ := a.Snapshots(ctx, "work"); len(rows) != 2 {
					t.Fatalf("the refused rebuild changed the rows: %d left", len(rows))
				}
				rb, err = a.Rebuild(ctx, true)
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(rb.Removed) == 0 {
				t.Errorf("rebuild removed no stale row: %+v", rb)
			}
		})
	}
}

// TestPruneCountsOtherMachinesSnapshots: in a shared store, prune on a
// machine whose catalog never saw another machine's snapshots (a fresh
// cron host, or one that rebuilt before the newest) keeps the store's
// newest N. It called the profile unknown ("no snapshots in" the store,
// without looking) or kept its own older rows as "the last N". A machine
// that cannot decrypt the manifests says so and deletes nothing.
func TestPruneCountsOtherMachinesSnapshots(t *testing.T) {
	ctx := context.Background()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		identity bool
		stale    bool // B rebuilt its catalog after A's first snapshot
		// damaged is how the store also holds a damaged manifest, sorted
		// before A's: "" none, "plain" one that is not JSON, "truncated" an
		// encrypted one cut short (its age header), "flipped" an encrypted
		// one with a bit of its payload flipped. An encrypted store holds
		// only encrypted ones.
		damaged string
		wantErr errcode.Code
	}{
		{"fresh machine", true, false, "", ""},
		{"stale catalog", true, true, "", ""},
		{"damaged manifest", true, false, "plain", ""},
		{"truncated encrypted manifest", true, false, "truncated", ""},
		{"flipped encrypted manifest", true, false, "flipped", ""},
		{"no identity", false, false, "", errcode.DecryptFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newTestManager(t)
			a.Recipients, a.Identities = []age.Recipient{id.Recipient()}, []age.Identity{id}
			if err := a.Create(ctx, "work"); err != nil {
				t.Fatal(err)
			}
			writeProfile(t, a.Dir("work"), "a")
			b := newTestManager(t)
			b.Store = a.Store
			if tt.identity {
				b.Identities = []age.Identity{id}
			}
			var ids []string
			for i := range 3 {
				r, err := a.Snapshot(ctx, "work", SnapshotOptions{})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, r.ID)
				if i == 0 && tt.stale {
					if _, err := b.Rebuild(ctx, false); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tt.damaged != "" {
				key, body := "work/work-20200101T000000Z-dmgd.manifest.json", []byte("not json{")
				if tt.damaged != "plain" {
					rc, _, err := a.Store.Get(ctx, "work/"+ids[0]+".manifest.json.age")
					if err != nil {
						t.Fatal(err)
					}
					enc, err := io.ReadAll(rc)
					rc.Close()
					if err != nil {
						t.Fatal(err)
					}
					key, body = key+".age", enc[:100]
					if tt.damaged == "flipped" {
						body = slices.Clone(enc)
						body[len(body)-20] ^= 1
					}
				}
				if err := a.Store.Put(ctx, key, bytes.NewReader(body), int64(len(body))); err != nil {
					t.Fatal(err)
				}
				// A machine that has never seen the store restores the
				// newest snapshot, not an older one, nor an error.
				c := newTestManager(t)
				c.Store, c.Identities = a.Store, []age.Identity{id}
				if r, err := c.Restore(ctx, "work", "latest", RestoreOptions{}); err != nil || r.ID != ids[len(ids)-1] {
					t.Fatalf("restore latest on a fresh machine: %+v, %v; want %s", r, err, ids[len(ids)-1])
				}
			}
			before := storeKeys(t, a.Store, "work/")
			res, err := b.Prune(ctx, "work", 1, 0)
			if tt.wantErr != "" {
				if errcode.Of(err) != tt.wantErr || !strings.Contains(errcode.HintOf(err), "identity") {
					t.Fatalf("Prune = %v [%s] (hint %q), want %s naming the identity", err, errcode.Of(err), errcode.HintOf(err), tt.wantErr)
				}
				if after := storeKeys(t, a.Store, "work/"); !slices.Equal(after, before) {
					t.Errorf("store %q after a failed prune, want %q", after, before)
				}
				return
			}
			if err != nil {
				t.Fatalf("Prune: %v", err)
			}
			newest := ids[len(ids)-1]
			if !slices.Equal(res.Kept, []string{newest}) || len(res.Deleted) != 2 {
				t.Fatalf("prune kept %q and deleted %q, want %s kept and the 2 others deleted", res.Kept, res.Deleted, newest)
			}
			if got := snapshotIDs(t, a, "work"); len(got) != 3 {
				t.Fatalf("A's catalog changed: %q", got)
			}
			if _, err := a.Restore(ctx, "work", newest, RestoreOptions{}); err != nil {
				t.Errorf("the kept snapshot does not restore: %v", err)
			}
		})
	}
}

// A profile directory made anew holds no login, whatever the catalog said
// of the one it replaces: the unsaved mark of `profile open` must go with
// that one, or a run's restore: latest keeps the new empty profile instead
// of restoring, and `profile restore` refuses without --force, saying it
// holds a login that no snapshot has. The old directory goes by hand (rm
// -rf), or by a delete --with-snapshots that the store stops after the
// directory is gone.
func TestNewProfileHasNoUnsavedLogin(t *testing.T) {
	tests := []struct {
		name   string
		remove func(t *testing.T, m *Manager)
	}{
		{"removed by hand", func(t *testing.T, m *Manager) {
			if err := os.RemoveAll(m.Dir("work")); err != nil {
				t.Fatal(err)
			}
		}},
		{"delete stopped by the store", func(t *testing.T, m *Manager) {
			real := m.Store
			m.Store = refusingDeletes{real}
			defer func() { m.Store = real }()
			if _, err := m.Delete(context.Background(), "work", DeleteOptions{WithSnapshots: true, Force: true}); errcode.Of(err) != errcode.StorageUnavailable {
				t.Fatalf("Delete through a store that refuses deletes: %v", err)
			}
			if _, err := os.Stat(m.Dir("work")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the profile directory is still there: %v", err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			m := newTestManager(t)
			if err := m.Create(ctx, "work"); err != nil {
				t.Fatal(err)
			}
			writeProfile(t, m.Dir("work"), "v1")
			snap, err := m.Snapshot(ctx, "work", SnapshotOptions{})
			if err != nil {
				t.Fatal(err)
			}
			m.Now = func() time.Time { return time.Now().Add(time.Minute) } // the open, after the snapshot
			if err := m.MarkUnsaved(ctx, "work"); err != nil {
				t.Fatal(err)
			}
			tc.remove(t, m)
			if err := m.Create(ctx, "work"); err != nil {
				t.Fatal(err)
			}
			res, err := m.Restore(ctx, "work", "latest", RestoreOptions{KeepUnsaved: true})
			if err != nil || res.KeptLocal || res.ID != snap.ID {
				t.Fatalf("restore latest (as a run's) over the new profile: %+v, %v; want snapshot %s restored", res, err, snap.ID)
			}
		})
	}
}

// A snapshot whose manifest a newer director wrote (a later format, with a
// field this build does not know) is one this machine cannot read, not a
// damaged one: "latest" refuses, saying a newer director wrote the newest
// snapshot, instead of quietly going back to the older one; prune keeps its
// objects; the older snapshot still restores by its id; and a profile a
// refusal meets is left as it was.
func TestNewerFormatSnapshotIsNotPassedOver(t *testing.T) {
	ctx := context.Background()
	a := newTestManager(t)
	if err := a.Create(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, a.Dir("work"), "a")
	var ids []string
	for range 2 {
		r, err := a.Snapshot(ctx, "work", SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	older, newer := ids[0], ids[1]
	err := replaceObject(ctx, a, "work/"+newer+".manifest.json", func(b []byte) []byte {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		m["format_version"], m["chunk_index"] = 99, []int{1, 2}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	})
	if err != nil {
		t.Fatal(err)
	}
	wantNewer := func(t *testing.T, err error) {
		t.Helper()
		if err == nil {
			t.Fatal("got no error, want one saying a newer director wrote the snapshot")
		}
		msg, hint := err.Error(), errcode.HintOf(err)
		if !strings.Contains(msg, "newer director") || !strings.Contains(msg, "99") || strings.Contains(msg, "corrupt") || !strings.Contains(hint, "upgrade director") {
			t.Fatalf("error %q (hint %q): want it to say a newer director wrote it (format 99), not that it is corrupt, and to upgrade director", msg, hint)
		}
	}
	// wantWords: the error speaks of what the command does. verify said
	// "nothing was restored" and "an older snapshot still restores by its
	// id".
	wantWords := func(t *testing.T, err error, msg, hint, not string) {
		t.Helper()
		if m, h := err.Error(), errcode.HintOf(err); !strings.Contains(m, msg) || !strings.Contains(h, hint) || strings.Contains(m+h, not) {
			t.Errorf("error %q (hint %q): want %q, a hint with %q, and no %q", m, h, msg, hint, not)
		}
	}
	// machine is another machine sharing a's store, with a profile of its own.
	machine := func(t *testing.T) *Manager {
		b := newTestManager(t)
		b.Store = a.Store
		if err := b.Create(ctx, "work"); err != nil {
			t.Fatal(err)
		}
		writeProfile(t, b.Dir("work"), "b")
		return b
	}
	tests := []struct {
		name string
		run  func(t *testing.T, b *Manager)
	}{
		{"restore latest", func(t *testing.T, b *Manager) {
			_, err := b.Restore(ctx, "work", "latest", RestoreOptions{})
			wantNewer(t, err)
			if !strings.Contains(err.Error(), newer) {
				t.Errorf("error %q does not name the newest snapshot %s", err, newer)
			}
			wantWords(t, err, "nothing was restored", "an older snapshot still restores by its id", "verif")
		}},
		{"restore it by id", func(t *testing.T, b *Manager) {
			_, err := b.Restore(ctx, "work", newer, RestoreOptions{})
			wantNewer(t, err)
		}},
		{"verify latest", func(t *testing.T, b *Manager) {
			_, err := b.Verify(ctx, "work", "latest")
			wantNewer(t, err)
			wantWords(t, err, "nothing was verified", "verify an older snapshot by its id", "restore")
		}},
		{"verify latest without a catalog", func(t *testing.T, b *Manager) {
			b.Catalog = nil
			_, err := b.Verify(ctx, "work", "latest")
			wantNewer(t, err)
			wantWords(t, err, "newer director", "verify an older snapshot by its id", "restore")
			// profile snapshots lists only the catalog's: without one, the
			// hint says how the older snapshots get there.
			if hint := errcode.HintOf(err); !strings.Contains(hint, "`director catalog rebuild`") {
				t.Errorf("hint %q: want it to give `director catalog rebuild`, which lists the older snapshots in a catalog this home lacks", hint)
			}
		}},
		{"prune", func(t *testing.T, b *Manager) {
			res, err := b.Prune(ctx, "work", 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Kept, []string{older}) || len(res.Deleted)+len(res.Strays) != 0 {
				t.Errorf("prune kept %q, deleted %q and strays %q; want %s kept and nothing deleted", res.Kept, res.Deleted, res.Strays, older)
			}
		}},
		{"the older one by id", func(t *testing.T, b *Manager) {
			if _, err := b.Restore(ctx, "work", older, RestoreOptions{}); err != nil {
				t.Fatalf("restore %s: %v", older, err)
			}
			if got := readTree(t, b.Dir("work"))["Local State"]; !strings.Contains(got, `"a"`) {
				t.Errorf("restored Local State %q, want a's", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := machine(t)
			before := readTree(t, b.Dir("work"))
			keys := storeKeys(t, a.Store, "work/")
			tt.run(t, b)
			if after := storeKeys(t, a.Store, "work/"); !slices.Equal(after, keys) {
				t.Errorf("store %q afterwards, want %q", after, keys)
			}
			if tt.name != "the older one by id" {
				if after := readTree(t, b.Dir("work")); !maps.Equal(after, before) {
					t.Errorf("the profile changed")
				}
			}
		})
	}
}

// Snapshots that early directors stored (testdata/stores/<commit>: the
// build of commit 8fbba2c wrote archive format 1, that of c5d1350 the
// first of format 2, both without encryption, of a small profile with a
// symlink) are found by catalog rebuild, verify and restore with this build,
// over a profile that exists and into one that does not.
func TestSnapshotsOfEarlierDirectors(t *testing.T) {
	ctx := context.Background()
	want := map[string]string{
		"Last Version":                             "120.0.6099.71\n",
		"Default/Preferences":                      `{"profile":{"name":"fixture"}}`,
		"Default/Local Storage/leveldb/000003.log": strings.Repeat("x", 3000),
	}
	for _, tc := range []struct {
		commit, id, version string
	}{
		{"8fbba2c", "work-20261124T104046Z-4rbs", "1"},
		{"c5d1350", "work-20261124T104046Z-2hwu", "3"},
	} {
		for _, existing := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/existing=%v", tc.commit, existing), func(t *testing.T) {
				m := newTestManager(t)
				dir := filepath.Join(t.TempDir(), "store")
				if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "stores", tc.commit))); err != nil {
					t.Fatal(err)
				}
				st, err := storage.Open(ctx, "file://"+dir, storage.Options{})
				if err != nil {
					t.Fatal(err)
				}
				m.Store = st
				res, err := m.Rebuild(ctx, false)
				if err != nil || !slices.Equal(res.Added, []string{tc.id}) || len(res.Skipped) != 0 {
					t.Fatalf("Rebuild = %+v, %v; want %s added", res, err, tc.id)
				}
				if v, err := m.Verify(ctx, "work", "latest"); err != nil || v.ID != tc.id || v.FileCount != 5 {
					t.Fatalf("Verify = %+v, %v; want %s, 5 files", v, err, tc.id)
				}
				if existing {
					if err := m.Create(ctx, "work"); err != nil {
						t.Fatal(err)
					}
					writeProfile(t, m.Dir("work"), "local")
				}
				r, err := m.Restore(ctx, "work", "latest", RestoreOptions{})
				if err != nil || r.ID != tc.id {
					t.Fatalf("Restore = %+v, %v; want %s", r, err, tc.id)
				}
				w := maps.Clone(want)
				w["Local State"] = `{"marker":"v` + tc.version + `"}`
				w["Default/Network/Cookies"] = "cookie-db-fixture-" + tc.version
				sameTree(t, readTree(t, m.Dir("work")), w)
				if link, err := os.Readlink(filepath.Join(m.Dir("work"), "Default", "prefs-link")); err != nil || link != "Preferences" {
					t.Errorf("Default/prefs-link = %q, %v; want a symlink to Preferences", link, err)
				}
			})
		}
	}
}

// TestUnsavedGuardFailsClosed: when the catalog cannot say whether a
// profile holds a login no snapshot has (its profiles table is damaged),
// delete and restore refuse instead of taking the mark as absent, and the
// profile keeps its newer login; --force goes on without the mark. Before,
// a damaged table deleted the profile, or replaced it and exited 0.
func TestUnsavedGuardFailsClosed(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("work"), "snapshotted")
	snap, err := m.Snapshot(ctx, "work", SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "work.tar.zst")
	rc, _, err := m.Store.Get(ctx, snap.ObjectKey)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || os.WriteFile(archive, data, 0o600) != nil {
		t.Fatal(err)
	}
	m.Now = func() time.Time { return time.Now().Add(time.Minute) }
	if err := m.MarkUnsaved(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("work"), "the newer login")
	want := readTree(t, m.Dir("work"))

	damageProfilesTable(t, m)

	for name, try := range map[string]func() error{
		"delete":         func() error { _, err := m.Delete(ctx, "work", DeleteOptions{}); return err },
		"restore latest": func() error { _, err := m.Restore(ctx, "work", "latest", RestoreOptions{}); return err },
		"run's restore": func() error {
			_, err := m.Restore(ctx, "work", "latest", RestoreOptions{KeepUnsaved: true})
			return err
		},
		"restore --archive": func() error { _, err := m.Restore(ctx, "work", "", RestoreOptions{Archive: archive}); return err },
	} {
		err := try()
		if err == nil || !strings.Contains(err.Error(), "cannot tell whether profile work holds a login that no snapshot has") ||
			!strings.Contains(errcode.HintOf(err), "--force") {
			t.Errorf("%s with the unsaved mark unreadable: %v (hint %q); want a refusal naming --force", name, err, errcode.HintOf(err))
		}
		sameTree(t, readTree(t, m.Dir("work")), want)
	}

	// profile list only reads: it lists the profile, without the mark.
	infos, err := m.List(ctx)
	if err != nil || len(infos) != 1 || infos[0].UnsavedSince != nil || len(infos[0].Warnings) != 1 {
		t.Fatalf("profile list with the mark unreadable: %+v %v; want the profile with a warning", infos, err)
	}
	// A run keeps a login no snapshot has even with --force (which it
	// passes for a newer Chrome's snapshot): it still refuses, and says to
	// replace the profile by hand.
	_, err = m.Restore(ctx, "work", "latest", RestoreOptions{KeepUnsaved: true, Force: true})
	if err == nil || !strings.Contains(errcode.HintOf(err), "`director profile restore work latest --force`") {
		t.Fatalf("run --force with the mark unreadable: %v (hint %q)", err, errcode.HintOf(err))
	}
	sameTree(t, readTree(t, m.Dir("work")), want)
	// profile restore --force goes on without the mark.
	if _, err := m.Restore(ctx, "work", "latest", RestoreOptions{Force: true}); err != nil {
		t.Fatalf("restore --force: %v", err)
	}
}

// TestStoreReachedThroughASymlink: a file store's folder reached through a
// symlink (a home that is a link) is one store in the catalog, whichever
// spelling a command uses: snapshots made through one are listed and
// pruned through the other, and rows an older director recorded under the
// link's spelling are moved to the folder's. Before, a prune through one
// spelling left the other's rows pointing at deleted archives.
func TestStoreReachedThroughASymlink(t *testing.T) {
	ctx := context.Background()
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "home-link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Open(ctx, filepath.Join(real, "director.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	clock := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	through := func(home string) *Manager {
		st, err := storage.Open(ctx, "file://"+filepath.Join(home, "snapshots"), storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return &Manager{Root: filepath.Join(home, "browser-profiles"), Store: st, Catalog: cat, LockWait: time.Second,
			Now: func() time.Time { return clock }}
	}
	viaReal, viaLink := through(real), through(link)
	if err := viaReal.Create(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, viaReal.Dir("work"), "x")
	for range 3 {
		clock = clock.Add(time.Hour)
		if _, err := viaLink.Snapshot(ctx, "work", SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// An older director recorded the link's spelling: put one row back
	// under it.
	raw, err := sql.Open("sqlite3", cat.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	oldest := snapshotIDs(t, viaReal, "work")[2]
	if _, err := raw.Exec(`UPDATE snapshots SET store = ? WHERE id = ?`, "file://"+filepath.Join(link, "snapshots"), oldest); err != nil {
		t.Fatal(err)
	}
	// Whichever spelling a command runs with, it sees that row.
	for _, c := range []struct {
		name string
		m    *Manager
	}{{"real", viaReal}, {"link", viaLink}} {
		name, m := c.name, c.m
		if ids := snapshotIDs(t, m, "work"); len(ids) != 3 {
			t.Fatalf("through the %s spelling: %d snapshots listed, want 3: %v", name, len(ids), ids)
		}
	}
	pr, err := viaReal.Prune(ctx, "work", 1, 0)
	if err != nil || len(pr.Deleted) != 2 {
		t.Fatalf("prune through the folder's spelling: %+v %v", pr, err)
	}
	ids := snapshotIDs(t, viaLink, "work")
	if len(ids) != 1 {
		t.Fatalf("through the link after the prune: %v, want the one kept", ids)
	}
	if _, err := viaLink.Verify(ctx, "work", ids[0]); err != nil {
		t.Fatalf("verify through the link: %v", err)
	}
	var stores int
	if err := raw.QueryRow(`SELECT COUNT(DISTINCT store) FROM snapshots`).Scan(&stores); err != nil || stores != 1 {
		t.Fatalf("%d stores in the catalog (%v), want 1", stores, err)
	}
}

// TestCreateAndDeleteWhenTheCatalogFails: a profile create whose catalog
// write fails leaves no directory, so a retry works; a delete whose
// directory is gone succeeds even when its catalog row cannot be removed
// (a warning), so a retry does not meet profile_not_found. (A damaged
// profiles table stands in for a catalog another process holds busy.)
func TestCreateAndDeleteWhenTheCatalogFails(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	damageProfilesTable(t, m)
	if err := m.Create(ctx, "new"); err == nil {
		t.Fatal("create with a broken catalog succeeded")
	}
	if _, err := os.Lstat(m.Dir("new")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the failed create left its directory: %v", err)
	}
	res, err := m.Delete(ctx, "old", DeleteOptions{Force: true})
	if err != nil || !res.RemovedDir {
		t.Fatalf("delete --force with a broken catalog: %+v %v", res, err)
	}
	if _, err := os.Lstat(m.Dir("old")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the profile is still there: %v", err)
	}
}

// TestNoteWithControlCharacters: a note holding a newline or ESC is
// refused before anything is stored: the manifest would hold it, and no
// director reads such a manifest back (it would drive the terminal of
// whoever lists the snapshot).
func TestNoteWithControlCharacters(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("work"), "x")
	for _, note := range []string{"two\nlines", "red \x1b[31m"} {
		if _, err := m.Snapshot(ctx, "work", SnapshotOptions{Note: note}); errcode.Of(err) != errcode.InvalidInput {
			t.Errorf("note %q: %v, want invalid_input", note, err)
		}
	}
	if keys := storeKeys(t, m.Store, ""); len(keys) != 0 {
		t.Fatalf("the refused snapshots stored %v", keys)
	}
	res, err := m.Snapshot(ctx, "work", SnapshotOptions{Note: "après ✓"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Verify(ctx, "work", res.ID); err != nil {
		t.Fatalf("verify of a snapshot with a unicode note: %v", err)
	}
}

// TestStoreBehindADanglingLink: a store folder reached through a symlink
// whose target is gone (a disk not mounted) keeps its catalog name, so the
// catalog's rows still name it and a restore says the store holds nothing
// (is it down?) with storage_unavailable, not that the profile has no
// snapshot, which a run took for a first login.
func TestStoreBehindADanglingLink(t *testing.T) {
	ctx := context.Background()
	home, disk := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(disk, "snapshots"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(disk, "snapshots"), filepath.Join(home, "snapshots")); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Open(ctx, filepath.Join(home, "director.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	open := func() *Manager {
		st, err := storage.OpenDir(filepath.Join(home, "snapshots"))
		if err != nil {
			t.Fatal(err)
		}
		return &Manager{Root: filepath.Join(home, "browser-profiles"), Store: st, Catalog: cat, LockWait: time.Second}
	}
	m := open()
	if err := m.Create(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("work"), "x")
	if _, err := m.Snapshot(ctx, "work", SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(disk, disk+".unmounted"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Rename(disk+".unmounted", disk) })
	m = open()
	if got, want := storage.ID(m.Store), "file://"+filepath.Join(disk, "snapshots"); got != want {
		t.Errorf("catalog name with the disk gone: %s, want %s", got, want)
	}
	_, err = m.Restore(ctx, "work", "latest", RestoreOptions{Force: true})
	if errcode.Of(err) != errcode.StorageUnavailable || !strings.Contains(err.Error(), "holds nothing at all") {
		t.Fatalf("restore with the disk gone: %v [%s], want storage_unavailable", err, errcode.Of(err))
	}
}

// TestNetworkStoreBesideProfiles: a file store on a network mount leaves
// the machine (plaintext refused) unless the profiles live on that same
// mount (a home on NFS), where plaintext archives beside them expose
// nothing the profiles do not.
func TestNetworkStoreBesideProfiles(t *testing.T) {
	for _, c := range []struct {
		store, root string
		want        bool
	}{
		{"/mnt/nas", "", true},               // profiles on a local disk
		{"/mnt/nas", "/home", true},          // profiles on another mount
		{"/home", "/home", false},            // a home on NFS: both there
		{"/mnt/nas", "/mnt/nas", false},      // profiles beside the store
		{"/mnt/nas/snaps", "/mnt/nas", true}, // a mount inside another
	} {
		if got := leavesMachine(c.store, c.root); got != c.want {
			t.Errorf("store on %s, profiles on %q: leaves = %v, want %v", c.store, c.root, got, c.want)
		}
	}
}

// damageProfilesTable drops m's catalog table of profiles, a damaged
// catalog whose snapshot rows still read (it stands in for a catalog
// another process holds busy too).
func damageProfilesTable(t *testing.T, m *Manager) {
	t.Helper()
	raw, err := sql.Open("sqlite3", m.Catalog.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`DROP TABLE profiles`); err != nil {
		t.Fatal(err)
	}
}
