package profiles

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"

	"director/errcode"
)

// TestDamagedArchiveFileIsCorrupt: a local --archive file that is damaged
// (cut short, a byte altered after the header) is snapshot_corrupt with a
// hint naming the file and the profile, whether it is encrypted or not, and
// the profile is untouched. An encrypted one was decrypt_failed, "modified
// or truncated in the store", with `director profile snapshots NAME`. A
// key problem stays decrypt_failed.
func TestDamagedArchiveFileIsCorrupt(t *testing.T) {
	ctx := context.Background()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := age.GenerateX25519Identity()
	archives := map[bool][]byte{}
	for _, encrypted := range []bool{false, true} {
		m := newTestManager(t)
		if encrypted {
			m.Recipients = []age.Recipient{id.Recipient()}
		}
		if err := m.Create(ctx, "work"); err != nil {
			t.Fatal(err)
		}
		writeProfile(t, m.Dir("work"), "cookie")
		noise := make([]byte, 300<<10) // several age chunks of 64 KiB
		rand.Read(noise)
		if err := os.WriteFile(filepath.Join(m.Dir("work"), "Default", "Web Data"), noise, 0o600); err != nil {
			t.Fatal(err)
		}
		res, err := m.Snapshot(ctx, "work", SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rc, _, err := m.Store.Get(ctx, res.ObjectKey)
		if err != nil {
			t.Fatal(err)
		}
		archives[encrypted], _ = io.ReadAll(rc)
		rc.Close()
	}
	flip := func(b []byte, at int) []byte {
		c := append([]byte(nil), b...)
		c[at] ^= 0x40
		return c
	}
	half := func(b []byte) []byte { return b[:len(b)/2] }
	// list is the command the hint gives for the store's snapshots: those
	// of the profile the archive was taken of (work), whatever profile it
	// is restored as; of every profile when its manifest could not be read.
	// Restored as work3, the hint said `director profile snapshots work3`:
	// "no snapshots of work3".
	const list = "`director profile snapshots work`"
	tests := []struct {
		name      string
		encrypted bool
		damage    func(b []byte) []byte
		ids       []age.Identity
		code      errcode.Code
		into      string // the profile restored, work when ""
		list      string
	}{
		{"plain, cut in half", false, half, nil, errcode.SnapshotCorrupt, "", list},
		{"plain, byte altered", false, func(b []byte) []byte { return flip(b, len(b)/2) }, nil, errcode.SnapshotCorrupt, "", list},
		{"encrypted, cut in half", true, half, []age.Identity{id}, errcode.SnapshotCorrupt, "", list},
		{"encrypted, cut in its last chunk", true, func(b []byte) []byte { return b[:len(b)-7] }, []age.Identity{id}, errcode.SnapshotCorrupt, "", list},
		{"encrypted, byte altered", true, func(b []byte) []byte { return flip(b, len(b)/2) }, []age.Identity{id}, errcode.SnapshotCorrupt, "", list},
		{"encrypted, whole, another key", true, func(b []byte) []byte { return b }, []age.Identity{other}, errcode.DecryptFailed, "", ""},
		{"encrypted, whole, no key", true, func(b []byte) []byte { return b }, nil, errcode.DecryptFailed, "", ""},
		{"plain, cut in half, restored as another profile", false, half, nil, errcode.SnapshotCorrupt, "work3", list},
		{"encrypted, cut in half, restored as another profile", true, half, []age.Identity{id}, errcode.SnapshotCorrupt, "work3", list},
		{"plain, cut in its manifest, restored as another profile", false, func(b []byte) []byte { return b[:64] }, nil, errcode.SnapshotCorrupt, "work3",
			"`director profile snapshots` lists those of every profile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestManager(t)
			m.Identities = tt.ids
			into := tt.into
			if into == "" {
				into = "work"
			}
			if err := m.Create(ctx, into); err != nil {
				t.Fatal(err)
			}
			writeProfile(t, m.Dir(into), "local")
			before := readTree(t, m.Dir(into))
			file := filepath.Join(t.TempDir(), "arch.tar.zst")
			if tt.encrypted {
				file += ".age"
			}
			if err := os.WriteFile(file, tt.damage(archives[tt.encrypted]), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := m.Restore(ctx, into, "", RestoreOptions{Archive: file, Force: true})
			if errcode.Of(err) != tt.code {
				t.Fatalf("restore: %v (%s), want %s", err, errcode.Of(err), tt.code)
			}
			h := errcode.HintOf(err)
			if strings.Contains(h, "NAME") || strings.Contains(h, "<profile>") || strings.Contains(h, "in the store") {
				t.Errorf("hint %q holds a placeholder or blames the store", h)
			}
			if tt.code == errcode.SnapshotCorrupt {
				if !strings.Contains(h, "the file "+file+" is damaged") || !strings.Contains(h, tt.list) || strings.Contains(h, "snapshots work3") {
					t.Errorf("hint %q does not name the file and the store's snapshots to restore instead (%s)", h, tt.list)
				}
				if !strings.Contains(err.Error(), file) {
					t.Errorf("message %q does not name the file", err)
				}
				// A store snapshot of work cannot be restored as work3:
				// the hint says it restores as work, replacing it here.
				if tt.into == "work3" && tt.list == list && !strings.Contains(h, "restores as its own profile, work, and replaces that profile") {
					t.Errorf("hint %q does not say a snapshot of work restores as work", h)
				}
			}
			sameTree(t, readTree(t, m.Dir(into)), before)
		})
	}
}

// TestNamedHint: the <profile> of a hint written where the name was not
// known is the profile's name; other hints and errors are as they were.
func TestNamedHint(t *testing.T) {
	base := errors.New("cause")
	tests := []struct {
		name     string
		err      error
		profile  string
		wantHint string
	}{
		{"placeholder", errcode.Hinted(base, errcode.SnapshotCorrupt, "see `director profile snapshots <profile>`", "bad"), "work", "see `director profile snapshots work`"},
		{"no placeholder", errcode.Hinted(base, errcode.SnapshotCorrupt, "see `director profile list`", "bad"), "work", "see `director profile list`"},
		{"invalid name left alone", errcode.Hinted(base, errcode.SnapshotCorrupt, "`director profile snapshots <profile>`", "bad"), "Bad Name", "`director profile snapshots <profile>`"},
		{"no hint", base, "work", ""},
		{"nil", nil, "work", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := namedHint(tt.err, tt.profile)
			if errcode.HintOf(got) != tt.wantHint {
				t.Errorf("hint %q, want %q", errcode.HintOf(got), tt.wantHint)
			}
			if tt.err == nil {
				if got != nil {
					t.Errorf("namedHint(nil) = %v", got)
				}
				return
			}
			if got.Error() != tt.err.Error() || errcode.Of(got) != errcode.Of(tt.err) || !errors.Is(got, base) {
				t.Errorf("namedHint changed the error: %v (%s), was %v (%s)", got, errcode.Of(got), tt.err, errcode.Of(tt.err))
			}
		})
	}
}
