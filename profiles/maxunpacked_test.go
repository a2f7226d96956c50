package profiles

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"director/errcode"
)

// MaxUnpacked is the bound of snapshot's up-front refusal and of restore's
// and verify's bomb guard, and each refusal names --max-unpacked with a
// size that then takes the snapshot (small bounds keep the test fast: the
// default, 4 GiB, is snapshot's, tested there).
func TestMaxUnpackedIsASetting(t *testing.T) {
	ctx := context.Background()
	suggestion := func(t *testing.T, what string, err error, code errcode.Code) int64 {
		t.Helper()
		if errcode.Of(err) != code {
			t.Fatalf("%s over --max-unpacked: %v (code %s), want %s", what, err, errcode.Of(err), code)
		}
		return suggestedSize(t, err, "--max-unpacked", "DIRECTOR_MAX_UNPACKED")
	}
	m := newTestManager(t)
	if err := m.Create(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("big"), "x")
	for i := range 20 {
		p := filepath.Join(m.Dir("big"), "Default", "IndexedDB", "blobs", strconv.Itoa(i))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat("blob", 4<<10)), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	m.MaxUnpacked = 64 << 10 // the profile holds 320 KiB
	_, err := m.Snapshot(ctx, "big", SnapshotOptions{})
	m.MaxUnpacked = suggestion(t, "snapshot", err, errcode.InvalidInput)
	if !strings.Contains(errcode.HintOf(err), "every machine that restores it") {
		t.Errorf("snapshot hint %q does not say restoring machines need it too", errcode.HintOf(err))
	}
	if objs, _ := m.Store.List(ctx, "big/"); len(objs) != 0 {
		t.Fatalf("a refused snapshot left %d objects", len(objs))
	}
	res, err := m.Snapshot(ctx, "big", SnapshotOptions{})
	if err != nil {
		t.Fatalf("snapshot with the suggested --max-unpacked %d: %v", m.MaxUnpacked, err)
	}

	before := readTree(t, m.Dir("big"))
	m.MaxUnpacked = 64 << 10
	_, err = m.Verify(ctx, "big", res.ID)
	m.MaxUnpacked = suggestion(t, "verify", err, errcode.UnsafeArchive)
	if _, err := m.Verify(ctx, "big", res.ID); err != nil {
		t.Fatalf("verify with the suggested --max-unpacked %d: %v", m.MaxUnpacked, err)
	}

	m.MaxUnpacked = 64 << 10
	_, err = m.Restore(ctx, "big", res.ID, RestoreOptions{})
	m.MaxUnpacked = suggestion(t, "restore", err, errcode.UnsafeArchive)
	sameTree(t, readTree(t, m.Dir("big")), before)
	if _, err := m.Restore(ctx, "big", res.ID, RestoreOptions{}); err != nil {
		t.Fatalf("restore with the suggested --max-unpacked %d: %v", m.MaxUnpacked, err)
	}
}
