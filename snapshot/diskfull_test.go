package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"director/errcode"
	"director/internal/testenv"
)

// A restore that fills the disk says so: it names the disk (the directory
// the profile lives in) and what to do, not "report it", and leaves the old
// profile and nothing else, whether a large file written in line or small
// files on the writer goroutines hit the end of the disk.
func TestRestoreDiskFull(t *testing.T) {
	random := func(n int, seed uint64) string {
		rng := rand.New(rand.NewPCG(seed, 1))
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return string(b)
	}
	large := map[string]string{"Local State": "{}", "Default/IndexedDB/big.ldb": random(6<<20, 1)}
	small := map[string]string{"Local State": "{}"}
	for i := range 300 {
		small[fmt.Sprintf("Default/Storage/d%02d/f%03d", i%13, i)] = random(24<<10, uint64(i))
	}
	for _, c := range []struct {
		name string
		tree map[string]string
		old  bool
	}{
		{"large file over an old profile", large, true},
		{"small files over an old profile", small, true},
		{"large file, no profile yet", large, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := t.TempDir()
			writeTree(t, src, c.tree)
			_, arc := createArchive(t, src, CreateOptions{Excludes: []string{}})

			disk := testenv.SmallDisk(t, 4<<20)
			parent := filepath.Join(disk, "browser-profiles")
			dst := filepath.Join(parent, "p")
			var before map[string]string
			if c.old {
				writeTree(t, dst, map[string]string{"Local State": `{"old":true}`, "Default/Cookies": strings.Repeat("c", 50<<10)})
				before = dirState(t, dst)
			}
			_, err := Restore(context.Background(), bytes.NewReader(arc), dst, RestoreOptions{})
			if err == nil {
				t.Fatal("Restore succeeded on a 4 MiB disk")
			}
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Restore = %v, want ENOSPC in the chain", err)
			}
			wantCode(t, err, errcode.Internal)
			if msg := err.Error(); !strings.HasPrefix(msg, "no space left on the disk holding "+parent+": ") {
				t.Errorf("message %q does not start by naming the full disk %s", msg, parent)
			}
			if hint := errcode.HintOf(err); !strings.Contains(hint, "df -h "+parent) || !strings.Contains(hint, "old profile is untouched") {
				t.Errorf("hint %q: want df -h %s and that the old profile is untouched", hint, parent)
			}
			want := []string{}
			if c.old {
				want = []string{"p"}
				if after := dirState(t, dst); !mapsEqual(after, before) {
					t.Errorf("the old profile changed: %v, was %v", after, before)
				}
			}
			if got := entries(t, parent); !slices.Equal(got, want) {
				t.Errorf("%s holds %v after the failed restore, want %v", parent, got, want)
			}
		})
	}
}

// TestDiskFullNamesTheDisk runs everywhere (TestRestoreDiskFull needs root
// to mount its small disk): a full file system or quota, however wrapped,
// names the disk and keeps the cause; any other error passes unchanged.
func TestDiskFullNamesTheDisk(t *testing.T) {
	other := errors.New("read-only file system")
	for _, c := range []struct {
		name string
		err  error
		full bool
	}{
		{"ENOSPC", &os.PathError{Op: "write", Path: "/p/.x.restore-1/Default/Cookies", Err: syscall.ENOSPC}, true},
		{"EDQUOT wrapped", fmt.Errorf("writing: %w", &os.PathError{Op: "write", Path: "f", Err: syscall.EDQUOT}), true},
		{"other", other, false},
		{"nil", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := diskFull(c.err, "/p")
			if !c.full {
				if got != c.err {
					t.Fatalf("diskFull(%v) = %v, want it unchanged", c.err, got)
				}
				return
			}
			if !strings.Contains(got.Error(), "no space left on the disk holding /p") || !errors.Is(got, c.err) ||
				!strings.Contains(errcode.HintOf(got), "df -h /p") || !strings.Contains(errcode.HintOf(got), "old profile is untouched") {
				t.Errorf("diskFull = %v (hint %q)", got, errcode.HintOf(got))
			}
		})
	}
}
