package profiles

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"director/errcode"
)

// recordingProgress is a Progress that records the phases it is told.
type recordingProgress struct{ phases *[]string }

func (p recordingProgress) Reader(r io.Reader) io.Reader { return r }
func (p recordingProgress) Add(int64)                    {}
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

// A restore refused once its archive has been read (an --archive file older
// than a login the profile holds that no snapshot has) reports no phase: it
// said "syncing to disk" and then refused, which left a user watching the
// sync of a profile that was never going to be swapped in.
func TestRefusedRestoreClaimsNoPhase(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	key, _ := objectKeys("work", snapshotOf(t, m, "work"), false)
	archive := filepath.Join(filepath.Dir(m.Root), "snapshots", filepath.FromSlash(key))
	m.Now = func() time.Time { return time.Now().Add(time.Minute) } // a login after the snapshot
	if err := m.MarkUnsaved(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	var phases []string
	m.NewProgress = func(string, int64) Progress { return recordingProgress{&phases} }
	_, err := m.Restore(ctx, "work", "", RestoreOptions{Archive: archive})
	if errcode.Of(err) != errcode.InvalidInput || !strings.Contains(err.Error(), "no snapshot has") {
		t.Fatalf("restore of an older --archive over an unsaved login: %v, want it refused", err)
	}
	if len(phases) != 0 {
		t.Errorf("a refused restore reported phases %q", phases)
	}
}

// countingProgress records the total it was made for, the bytes it was
// told, and whether it was finished.
type countingProgress struct {
	label    string
	total    int64
	added    int64
	finished bool
}

func (p *countingProgress) Reader(r io.Reader) io.Reader { return r }
func (p *countingProgress) Add(n int64)                  { p.added += n }
func (p *countingProgress) Finish()                      { p.finished = true }

// A snapshot's progress display is made for the bytes of the files it
// archives, which the walk knows before archiving, and told all of them, so
// that a terminal shows bytes done of a total and a percentage; it was made
// for an unknown total (-1: a spinner).
func TestSnapshotProgressHasATotal(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	if err := m.Create(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	writeProfile(t, m.Dir("work"), "x")
	var made []*countingProgress
	m.NewProgress = func(label string, total int64) Progress {
		p := &countingProgress{label: label, total: total}
		made = append(made, p)
		return p
	}
	res, err := m.Snapshot(ctx, "work", SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(made) != 1 {
		t.Fatalf("%d progress displays made, want 1", len(made))
	}
	p := made[0]
	if p.label != "snapshot work" || p.total != res.RawSize || p.added != res.RawSize || !p.finished {
		t.Errorf("progress %+v, want label %q, total and bytes told %d (the raw size), finished", *p, "snapshot work", res.RawSize)
	}
}
