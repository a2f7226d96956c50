package profiles

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"director/catalog"
	"director/errcode"
	"director/storage"
)

// sameMachine is another director process on m's machine: the same
// profiles, catalog and store, and so the same profile locks (a flock on
// another open file description conflicts as between processes).
func sameMachine(m *Manager) *Manager {
	c := *m
	return &c
}

// Rows come from the store's manifests (verify's and rebuild's adoption of
// snapshots other machines stored) only under the profile's lock. A snapshot
// of the profile holds it from before its upload to after its row, so its
// manifest is never adopted meanwhile: the adopted row made the snapshot's
// own insert fail, and the snapshot then deleted its archive under the row.
// Verify does not wait for the lock: it finds the newest snapshot from the
// store without adding it; rebuild waits, then leaves the profile for later
// and says so.
func TestAdoptionOnlyUnderTheProfileLock(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("work"), "here")
	if _, err := m.Snapshot(ctx, "work", SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	// Another machine stores a newer snapshot in the shared store.
	other := newTestManager(t)
	other.Store = m.Store
	if err := other.Create(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, other.Dir("work"), "there")
	newer, err := other.Snapshot(ctx, "work", SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}

	held, err := m.Lock(ctx, "work", 0) // a snapshot of "work" running here
	if err != nil {
		t.Fatal(err)
	}
	p := sameMachine(m)
	v, err := p.Verify(ctx, "work", "latest")
	if err != nil || v.ID != newer.ID {
		t.Fatalf("verify latest while the profile is locked: %+v, %v; want %s", v, err, newer.ID)
	}
	if ids := snapshotIDs(t, m, "work"); slices.Contains(ids, newer.ID) {
		t.Fatalf("verify added %s to the catalog while the profile was locked: %q", newer.ID, ids)
	}
	// A row whose archive is gone: a busy profile's rows stay as they are.
	gone := catalog.Snapshot{ID: "work-20200101T000000Z-gone", Profile: "work", Store: catalog.StoreName(storage.ID(m.Store)),
		ObjectKey: "work/work-20200101T000000Z-gone.tar.zst", ManifestKey: "work/work-20200101T000000Z-gone.manifest.json",
		CreatedAt: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := m.Catalog.UpsertSnapshot(ctx, gone); err != nil {
		t.Fatal(err)
	}
	res, err := p.Rebuild(ctx, false)
	if errcode.Of(err) != errcode.ProfileInUse || !slices.Equal(res.Busy, []string{"work"}) {
		t.Fatalf("rebuild while the profile is locked: %+v, %v [%s]; want profile_in_use naming work", res, err, errcode.Of(err))
	}
	if ids := snapshotIDs(t, m, "work"); slices.Contains(ids, newer.ID) || !slices.Contains(ids, gone.ID) {
		t.Fatalf("rebuild changed the rows of work while it was locked: %q", ids)
	}
	if h := errcode.HintOf(err); !strings.Contains(h, "`director profile list`") {
		t.Errorf("hint %q", h)
	}
	held.Unlock()

	if v, err := p.Verify(ctx, "work", "latest"); err != nil || v.ID != newer.ID {
		t.Fatalf("verify latest: %+v, %v", v, err)
	}
	if ids := snapshotIDs(t, m, "work"); !slices.Contains(ids, newer.ID) {
		t.Fatalf("verify with the lock free did not add %s: %q", newer.ID, ids)
	}
	if res, err := p.Rebuild(ctx, false); err != nil || len(res.Busy) != 0 || !slices.Equal(res.Removed, []string{gone.ID}) {
		t.Fatalf("rebuild: %+v, %v; want %s removed", res, err, gone.ID)
	}
}

// pruneDuring is a store that runs prune once, right after the first full
// listing (onList), or right after opening the first manifest of "work"
// (onGet): a prune on the same machine overtaking a rebuild.
type pruneDuring struct {
	storage.Store
	onList, onGet bool
	prune         func()
	done          bool
}

func (s *pruneDuring) List(ctx context.Context, prefix string) ([]storage.Object, error) {
	objs, err := s.Store.List(ctx, prefix)
	if s.onList && prefix == "" && !s.done {
		s.done = true
		s.prune()
	}
	return objs, err
}

func (s *pruneDuring) Get(ctx context.Context, key string) (io.ReadCloser, storage.Object, error) {
	rc, o, err := s.Store.Get(ctx, key)
	if s.onGet && strings.HasPrefix(key, "work/") && strings.HasSuffix(key, ".manifest.json") && !s.done {
		s.done = true
		s.prune() // the open file still reads after its unlink
	}
	return rc, o, err
}

// A rebuild that a prune overtakes adds no row for a snapshot the prune
// deleted: it reads each profile's snapshots again, and under the profile's
// lock. It re-added pruned rows, which then pointed at deleted archives.
// Under the lock the prune of the second case waits, and gives up
// (profile_in_use) or runs after the rebuild.
func TestRebuildOvertakenByPrune(t *testing.T) {
	for _, tc := range []struct {
		name          string
		onList, onGet bool
	}{
		{"after the listing", true, false},
		{"while a manifest is read", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			m := newTestManager(t)
			if err := m.Create(ctx, "work"); err != nil {
				t.Fatal(err)
			}
			writeProfile(t, m.Dir("work"), "v")
			for range 3 {
				if _, err := m.Snapshot(ctx, "work", SnapshotOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			r := sameMachine(m)
			r.Store = &pruneDuring{Store: m.Store, onList: tc.onList, onGet: tc.onGet, prune: func() {
				if _, err := m.Prune(ctx, "work", 1, 0); err != nil && errcode.Of(err) != errcode.ProfileInUse {
					t.Errorf("prune: %v", err)
				}
			}}
			if _, err := r.Rebuild(ctx, false); err != nil {
				t.Fatal(err)
			}
			snaps, err := m.Snapshots(ctx, "work")
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range snaps {
				if _, err := m.Store.Stat(ctx, s.ObjectKey); err != nil {
					t.Errorf("row %s points at %s: %v", s.ID, s.ObjectKey, err)
				}
			}
			if len(snaps) == 0 {
				t.Error("no rows left")
			}
		})
	}
}

// strayArchive makes profile "work" in m with one snapshot, then takes its
// row and its manifest away, as a snapshot killed before its manifest, or a
// prune or delete killed between the two deletes, leaves it: an archive no
// row names, a stray.
func strayArchive(t *testing.T, m *Manager) *SnapshotResult {
	t.Helper()
	ctx := context.Background()
	if err := m.Create(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("work"), "v")
	s, err := m.Snapshot(ctx, "work", SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Catalog.DeleteSnapshot(ctx, catalog.StoreName(storage.ID(m.Store)), s.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.Store.Delete(ctx, s.ManifestKey); err != nil {
		t.Fatal(err)
	}
	return s
}

// A delete --with-snapshots killed between a snapshot's manifest and its
// archive leaves the archive (with its cookies), no row and no profile
// directory. Prune, which the hints name for strays, removes it once it is
// StrayGrace old: it said the profile did not exist and had no snapshots.
func TestPruneRemovesStraysOfAProfileNoLongerHere(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	s := strayArchive(t, m)
	// And the directory, as the killed delete did.
	if err := os.RemoveAll(m.Dir("work")); err != nil {
		t.Fatal(err)
	}
	back := time.Now().Add(-StrayGrace - time.Minute)
	if err := os.Chtimes(filepath.Join(strings.TrimPrefix(m.Store.String(), "file://"), filepath.FromSlash(s.ObjectKey)), back, back); err != nil {
		t.Fatal(err)
	}
	res, err := m.Prune(ctx, "work", 1, 0)
	if err != nil {
		t.Fatalf("prune: %v", err)
	}
	if !slices.Equal(res.Strays, []string{s.ObjectKey}) {
		t.Fatalf("prune: %+v, want the stray %s removed", res, s.ObjectKey)
	}
	if left := storeKeys(t, m.Store, "work/"); len(left) != 0 {
		t.Fatalf("the store still holds %v", left)
	}
	// Now there is nothing: a mistyped name as before.
	if _, err := m.Prune(ctx, "work", 1, 0); errcode.Of(err) != errcode.ProfileNotFound {
		t.Fatalf("prune of nothing: %v, want profile_not_found", err)
	}
}

// The clock probe of a prune killed before its deferred delete (and a
// killed `store check`'s probe) is removed by the next prune, once
// StrayGrace old; a young one may be a running command's. Also a prune
// that finds no stray: a probe left after its strays were gone stayed for
// good, and a store holding only probes no longer lists as empty.
func TestPruneRemovesOldProbes(t *testing.T) {
	for _, stray := range []bool{true, false} {
		t.Run(fmt.Sprintf("stray=%v", stray), func(t *testing.T) { testPruneRemovesOldProbes(t, stray) })
	}
}

func testPruneRemovesOldProbes(t *testing.T, stray bool) {
	ctx := context.Background()
	m := newTestManager(t)
	if stray {
		strayArchive(t, m) // so that prune reads the store's clock
	} else {
		if err := m.Create(ctx, "work"); err != nil {
			t.Fatal(err)
		}
		writeProfile(t, m.Dir("work"), "v")
		if _, err := m.Snapshot(ctx, "work", SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	root := strings.TrimPrefix(m.Store.String(), "file://")
	for key, age := range map[string]time.Duration{
		storage.CheckPrefix + "clock-deadbeef":            2 * StrayGrace,
		storage.CheckPrefix + "20261124T000000Z-abcd1234": 2 * StrayGrace,
		storage.CheckPrefix + "clock-youngone":            0,
	} {
		if err := m.Store.Put(ctx, key, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
		when := time.Now().Add(-age)
		if err := os.Chtimes(filepath.Join(root, filepath.FromSlash(key)), when, when); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Prune(ctx, "work", 1, 0); err != nil {
		t.Fatal(err)
	}
	if left := storeKeys(t, m.Store, storage.CheckPrefix); !slices.Equal(left, []string{storage.CheckPrefix + "clock-youngone"}) {
		t.Fatalf("probes left: %v, want only the young one", left)
	}
}
