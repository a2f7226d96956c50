package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"director/errcode"
)

// Small files go to writer goroutines, large ones are written in line: a
// restore must give back every size on both sides of the cut, byte for byte,
// and in directories made just before the files queued for them.
func TestRestoreWritesSmallAndLargeFiles(t *testing.T) {
	tree := map[string]string{}
	sizes := []int{0, 1, 4095, smallFileMax - 1, smallFileMax, smallFileMax + 1, 3 * smallFileMax}
	for i := range 300 { // more files than buffers, so the reader waits on writers
		n := sizes[i%len(sizes)]
		body := (fmt.Sprintf("%05d", i) + strings.Repeat(string(rune('a'+i%26)), n))[:n]
		tree[fmt.Sprintf("Default/d%02d/sub/f%03d", i%17, i)] = body
	}
	src := t.TempDir()
	writeTree(t, src, tree)
	_, arc := createArchive(t, src, CreateOptions{Excludes: []string{}})

	dst := filepath.Join(t.TempDir(), "p")
	if _, err := Restore(context.Background(), bytes.NewReader(arc), dst, RestoreOptions{}); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	want, have := dirState(t, src), dirState(t, dst)
	for p, w := range want {
		if h := have[p]; h != normaliseMode(w) {
			t.Errorf("%s: restored %.40q, want %.40q", p, h, normaliseMode(w))
		}
	}
	if len(have) != len(want) {
		t.Errorf("restored %d entries, want %d", len(have), len(want))
	}
}

// A file the filesystem refuses fails the restore with the path named, on
// a writer goroutine (small file) or in line (large file) alike, and the old
// profile and the directory around it are left as they were.
func TestRestoreWriteFailureLeavesProfile(t *testing.T) {
	long := strings.Repeat("x", 300) // over NAME_MAX (255): the kernel refuses the create
	var many []entry
	many = append(many, dir("Default"))
	for i := range 100 {
		many = append(many, file(fmt.Sprintf("Default/f%03d", i), strings.Repeat("z", 1000+i)))
	}
	for _, tc := range []struct {
		name string
		bad  entry
	}{
		{"small file, written by a writer goroutine", file("Default/"+long, "small")},
		{"large file, written in line", file("Default/"+long, strings.Repeat("L", smallFileMax+1))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := slices.Concat(many[:50], []entry{tc.bad}, many[50:])
			assertRestoreFails(t, bytes.NewReader(archiveOf(t, manifestOf(es), es)), RestoreOptions{}, errcode.Internal)
		})
	}
}

// After a writer fails, the sink refuses new entries with that error and
// still drains what is queued, so the reader never blocks on a dead writer.
func TestWriterSinkStopsAfterFailure(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	must(t, err)
	defer root.Close()
	s := newWriterSink(root, restoreWriters)
	must(t, s.mkdir(&File{Path: "gone", Type: TypeDir}))
	// The directory vanishes before the writers open it: every create in it fails.
	must(t, os.Rename(filepath.Join(dir, "gone"), filepath.Join(dir, "elsewhere")))

	var sinkErr error
	for i := 0; i < 10*writerBuffers && sinkErr == nil; i++ {
		f := &File{Path: fmt.Sprintf("gone/f%d", i), Type: TypeFile, Size: 3}
		w, err := s.create(f)
		if err != nil {
			sinkErr = err
			break
		}
		if _, err := w.Write([]byte("abc")); err != nil {
			t.Fatal(err)
		}
		sinkErr = w.Close()
	}
	werr := s.wait()
	if werr == nil || !strings.Contains(werr.Error(), "gone/f") {
		t.Fatalf("wait = %v, want the failed create named", werr)
	}
	wantCode(t, werr, errcode.Internal)
	if sinkErr == nil {
		t.Errorf("%d files queued after the first failure without an error", 10*writerBuffers)
	}
	if err := s.mkdir(&File{Path: "later", Type: TypeDir}); err == nil {
		t.Error("mkdir after a writer failed succeeded")
	}
	if e := entries(t, filepath.Join(dir, "elsewhere")); len(e) != 0 {
		t.Errorf("files written after the failure: %v", e)
	}
}

// Once the archive has been read, Restore says what it still does (a
// progress bar of the download stands at 100% meanwhile): syncing to disk,
// then, after the swap, removing the old profile when there was one; and
// nothing when it fails before, or when BeforeSwap refuses the archive (it
// said "syncing to disk" and then refused).
func TestRestoreReportsPhasesAfterReading(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, profileTree())
	_, arc := createArchive(t, src, CreateOptions{})
	refuse := func(*Manifest) error { return errcode.New(errcode.InvalidInput, "refused") }
	for _, c := range []struct {
		name       string
		old        bool
		archive    []byte
		beforeSwap func(*Manifest) error
		want       []string
	}{
		{"new profile", false, arc, nil, []string{"syncing to disk"}},
		{"over an old profile", true, arc, nil, []string{"syncing to disk", "removing the old profile"}},
		{"truncated archive", true, arc[:len(arc)/2], nil, nil},
		{"refused before the swap", true, arc, refuse, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "p")
			if c.old {
				writeTree(t, dst, map[string]string{"Local State": "{}"})
			}
			var got []string
			_, err := Restore(context.Background(), bytes.NewReader(c.archive), dst, RestoreOptions{
				BeforeSwap: c.beforeSwap,
				Status:     func(p string) { got = append(got, p) },
			})
			if (err != nil) != (c.want == nil) {
				t.Fatalf("Restore: %v", err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("phases %q, want %q", got, c.want)
			}
		})
	}
}
