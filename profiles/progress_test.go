package profiles

import (
	"context"
	"io"
	"slices"
	"testing"
)

// recordingProgress is a Progress that records the phases it is told.
type recordingProgress struct{ phases *[]string }

func (p recordingProgress) Reader(r io.Reader) io.Reader { return r }
func (p recordingProgress) Finish()                      {}
func (p recordingProgress) Status(phase string)          { *p.phases = append(*p.phases, phase) }

// A restore's progress display is told what follows the download, so that a
// bar standing at 100% is not all a user sees while a large profile is
// synced and the old one removed.
func TestRestoreTellsProgressWhatFollowsTheDownload(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("work"), "x")
	if _, err := m.Snapshot(ctx, "work", SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	var phases []string
	m.NewProgress = func(string, int64) Progress { return recordingProgress{&phases} }
	if _, err := m.Restore(ctx, "work", "latest", RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"syncing to disk", "removing the old profile"}; !slices.Equal(phases, want) {
		t.Errorf("phases %q, want %q", phases, want)
	}
}
