package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"director/errcode"
)

// A version 2 archive ends with its digest entry: each way of getting that
// entry wrong, and each disagreement with the stored manifest, fails Verify
// and Restore with the right code and leaves the old profile alone.
func TestDigestEntry(t *testing.T) {
	m := manifestOf(okEntries)
	own, err := json.Marshal(m.inArchive())
	must(t, err)
	digest := func(sum string) entry { return file(DigestPath, `{"files_sha256":"`+sum+`"}`) }
	// raw lays out a version 2 archive by hand: the archive's own manifest
	// first, then es as given (no digest added).
	raw := func(es ...entry) []byte {
		return archiveOf(t, nil, append([]entry{file(ManifestPath, string(own))}, es...))
	}
	tamper := func(f func(*Manifest)) *Manifest {
		c := manifestOf(okEntries)
		f(c)
		return c
	}
	for _, tc := range []struct {
		name   string
		arc    []byte
		expect *Manifest
		code   errcode.Code
		msg    string
	}{
		{"no digest", raw(okEntries...), nil, errcode.SnapshotCorrupt, "without its digest"},
		{"wrong digest", raw(append(slices.Clone(okEntries), digest(zeros64))...), nil, errcode.SnapshotCorrupt, "a file was altered"},
		{"altered file, digest as made", raw(okEntries[0], file("Default/Preferences", "[]"), okEntries[2], digest(m.FilesSHA256)), nil, errcode.SnapshotCorrupt, "a file was altered"},
		{"digest before the last file", raw(okEntries[0], okEntries[1], digest(m.FilesSHA256), okEntries[2]), nil, errcode.UnsafeArchive, "must be the last entry"},
		{"digest twice", raw(append(slices.Clone(okEntries), digest(m.FilesSHA256), digest(m.FilesSHA256))...), nil, errcode.UnsafeArchive, "must be the last entry"},
		{"digest is a directory", raw(append(slices.Clone(okEntries), dir(DigestPath))...), nil, errcode.UnsafeArchive, "not a file"},
		{"digest is a symlink", raw(append(slices.Clone(okEntries), symlink(DigestPath, "/etc/passwd"))...), nil, errcode.UnsafeArchive, "not a file"},
		{"digest over its bound", raw(append(slices.Clone(okEntries), file(DigestPath, strings.Repeat(" ", maxDigestBytes+1)))...), nil, errcode.UnsafeArchive, "limit"},
		{"digest not JSON", raw(append(slices.Clone(okEntries), file(DigestPath, "nope"))...), nil, errcode.SnapshotCorrupt, "not valid JSON"},
		{"digest with an unknown field", raw(append(slices.Clone(okEntries), file(DigestPath, `{"files_sha256":"`+m.FilesSHA256+`","x":1}`))...), nil, errcode.SnapshotCorrupt, "not valid JSON"},
		{"digest not a sha256", raw(append(slices.Clone(okEntries), digest("abc"))...), nil, errcode.SnapshotCorrupt, "no valid files_sha256"},
		{"hashes in the archive's own manifest", func() []byte {
			b, err := json.Marshal(m) // the stored copy, hashes and all
			must(t, err)
			return archiveOf(t, nil, append([]entry{file(ManifestPath, string(b))}, append(slices.Clone(okEntries), digest(m.FilesSHA256))...))
		}(), nil, errcode.SnapshotCorrupt, "keeps them in"},
		{"stored manifest of another snapshot", archiveOf(t, m, okEntries), tamper(func(c *Manifest) { c.ID = "other" }), errcode.SnapshotCorrupt, "describes another archive"},
		{"stored manifest lists another size", archiveOf(t, m, okEntries), tamper(func(c *Manifest) { c.Files[1].Size = 3 }), errcode.SnapshotCorrupt, `differ at entry "Default/Preferences"`},
		{"stored manifest lists another hash", archiveOf(t, m, okEntries), tamper(func(c *Manifest) { c.Files[2].SHA256 = zeros64 }), errcode.SnapshotCorrupt, `stored manifest gives "Local State" another sha256`},
		{"altered file named by the stored manifest", raw(okEntries[0], okEntries[1], file("Local State", "[]"), digest(m.FilesSHA256)), m, errcode.SnapshotCorrupt, `content of "Local State" does not match`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := ExtractOptions{Expect: tc.expect}
			_, err := Verify(context.Background(), bytes.NewReader(tc.arc), opts)
			wantCode(t, err, tc.code)
			if err != nil && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
			assertRestoreFails(t, bytes.NewReader(tc.arc), RestoreOptions{ExtractOptions: opts}, tc.code)
		})
	}
}

// The digest path is reserved: a version 1 archive that carries it is
// refused, as any entry under .director is.
func TestDigestEntryInVersion1Archive(t *testing.T) {
	archiveVersion = 1
	defer func() { archiveVersion = FormatVersion }()
	m := manifestOf(okEntries)
	arc := archiveOf(t, m, append(slices.Clone(okEntries), file(DigestPath, `{"files_sha256":"`+zeros64+`"}`)))
	_, err := Verify(context.Background(), bytes.NewReader(arc), ExtractOptions{})
	wantCode(t, err, errcode.UnsafeArchive)
}

// Archives written before version 2 still verify and restore, against
// their own manifest and against the stored one.
func TestReadsVersion1Archives(t *testing.T) {
	archiveVersion = 1
	defer func() { archiveVersion = FormatVersion }()
	es := append(slices.Clone(okEntries), file("Default/Cookies", strings.Repeat("cookie", 1000)))
	m := manifestOf(es)
	arc := archiveOf(t, m, es)
	for _, opts := range []ExtractOptions{{}, {Expect: m}} {
		got, err := Verify(context.Background(), bytes.NewReader(arc), opts)
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if got.FormatVersion != 1 || got.Files[3].SHA256 != m.Files[3].SHA256 {
			t.Errorf("Verify returned version %d, hash %q", got.FormatVersion, got.Files[3].SHA256)
		}
	}
	dst := t.TempDir() + "/p"
	if _, err := Restore(context.Background(), bytes.NewReader(arc), dst, RestoreOptions{}); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got := dirState(t, dst)["Default/Cookies"]; !strings.HasSuffix(got, " "+m.Files[3].SHA256) {
		t.Errorf("restored Cookies: %s, want content with sha256 %s", got, m.Files[3].SHA256)
	}
	// A flipped file is still named by its hash in the manifest.
	bad := slices.Clone(es)
	bad[3] = file("Default/Cookies", strings.Repeat("COOKIE", 1000))
	_, err := Verify(context.Background(), bytes.NewReader(archiveOf(t, m, bad)), ExtractOptions{})
	wantCode(t, err, errcode.SnapshotCorrupt)
	if err != nil && !strings.Contains(err.Error(), `"Default/Cookies"`) {
		t.Errorf("error %q does not name the file", err)
	}
}
