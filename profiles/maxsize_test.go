package profiles

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"filippo.io/age"

	"director/errcode"
	"director/internal/bytesize"
	"director/snapshot"
	"director/storage"
)

// The --max-size an error suggests is enough: a snapshot refused for its
// size names a --max-size that then takes it, even when nothing in the
// profile compresses and it is encrypted, and a restore refused for the
// snapshot's size names one that then restores it.
func TestMaxSizeErrorsSuggestEnough(t *testing.T) {
	ctx := context.Background()
	suggestion := func(t *testing.T, err error) int64 {
		t.Helper()
		return suggestedSize(t, err, "--max-size", "DIRECTOR_MAX_SIZE")
	}
	for _, c := range []struct {
		name    string
		encrypt bool
	}{{"plain", false}, {"encrypted", true}} {
		t.Run(c.name, func(t *testing.T) {
			m := newTestManager(t)
			id, err := age.GenerateX25519Identity()
			if err != nil {
				t.Fatal(err)
			}
			if c.encrypt {
				m.Recipients, m.Identities = []age.Recipient{id.Recipient()}, []age.Identity{id}
			}
			if err := m.Create(ctx, "big"); err != nil {
				t.Fatal(err)
			}
			writeProfile(t, m.Dir("big"), "x")
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range 40 { // incompressible, in files of 1-64 KiB
				b := make([]byte, 1<<10+rng.IntN(63<<10))
				for j := range b {
					b[j] = byte(rng.Uint32())
				}
				p := filepath.Join(m.Dir("big"), "Default", "IndexedDB", "blobs", strconv.Itoa(i))
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, b, 0o600); err != nil {
					t.Fatal(err)
				}
			}

			m.MaxSize = 64 << 10
			_, err = m.Snapshot(ctx, "big", SnapshotOptions{})
			if errcode.Of(err) != errcode.InvalidInput || !errors.Is(err, storage.ErrTooLarge) || !strings.Contains(err.Error(), "larger than --max-size, 64KiB") {
				t.Fatalf("snapshot over --max-size = %v (code %s), want invalid_input saying it is larger than --max-size", err, errcode.Of(err))
			}
			m.MaxSize = suggestion(t, err)
			res, err := m.Snapshot(ctx, "big", SnapshotOptions{})
			if err != nil {
				t.Fatalf("snapshot with the suggested --max-size %d: %v", m.MaxSize, err)
			}

			m.MaxSize = 64 << 10
			_, err = m.Restore(ctx, "big", "latest", RestoreOptions{})
			if errcode.Of(err) != errcode.UnsafeArchive {
				t.Fatalf("restore over --max-size = %v, want unsafe_archive", err)
			}
			if m.MaxSize = suggestion(t, err); m.MaxSize < res.ArchiveSize || m.MaxSize > res.ArchiveSize+res.ArchiveSize/100+1 {
				t.Errorf("restore suggests --max-size %d, the archive is %d bytes: want that or at most 1%% more", m.MaxSize, res.ArchiveSize)
			}
			if _, err := m.Restore(ctx, "big", "latest", RestoreOptions{}); err != nil {
				t.Fatalf("restore with the suggested --max-size %d: %v", m.MaxSize, err)
			}
		})
	}
}

// suggestedSize is the size err's hint suggests for flag (or its variable
// env), as the user would paste it; the test fails when there is none, or
// it does not parse.
func suggestedSize(t *testing.T, err error, flag, env string) int64 {
	t.Helper()
	re := regexp.MustCompile("set " + regexp.QuoteMeta(flag) + ` \(or ` + env + `\) to (\S+) or more`)
	mt := re.FindStringSubmatch(errcode.HintOf(err))
	if mt == nil {
		t.Fatalf("error %v: hint %q suggests no %s", err, errcode.HintOf(err), flag)
	}
	n, perr := bytesize.Parse(mt[1])
	if perr != nil {
		t.Fatalf("hint %q suggests a %s that does not parse: %v", errcode.HintOf(err), flag, perr)
	}
	return n
}

// TestOverUnpackedSuggestsOnlySizesThatParse: the hint of an archive over
// --max-unpacked names a size that takes it, which the flag must accept;
// near 8 EiB, where the rounded size would pass what the flag takes (only
// a hostile manifest claims that much), it names the bytes and says not to
// restore it.
func TestOverUnpackedSuggestsOnlySizesThatParse(t *testing.T) {
	for _, need := range []int64{2 << 20, 5<<30 + 1, 1 << 62, math.MaxInt64 - 1<<40, math.MaxInt64} {
		for _, snapshotting := range []bool{false, true} {
			err := overUnpacked(&errcode.Error{Code: errcode.UnsafeArchive,
				Err: &snapshot.UnpackedLimitError{Limit: 1 << 20, Need: need}}, snapshotting)
			var ee *errcode.Error
			if !errors.As(err, &ee) {
				t.Fatalf("need %d: %v is not an errcode.Error", need, err)
			}
			m := regexp.MustCompile(`--max-unpacked \(or DIRECTOR_MAX_UNPACKED\) to (\S+) or more`).FindStringSubmatch(ee.Hint)
			if m == nil {
				t.Fatalf("need %d: hint %q names no size", need, ee.Hint)
			}
			if hostile := need > 8388607<<40 && !snapshotting; hostile != strings.Contains(ee.Hint, "do not restore it") {
				t.Errorf("need %d: hint %q; want it to say not to restore only near 8 EiB", need, ee.Hint)
			}
			got, perr := bytesize.Parse(m[1])
			if perr != nil || got < need {
				t.Errorf("need %d: hint names %s: %d, %v; want a size the flag takes, at least the need", need, m[1], got, perr)
			}
		}
	}
}
