package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"director/errcode"
)

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// fuzzSeeds are valid and nearly valid tar streams (uncompressed).
func fuzzSeeds(t testing.TB) [][]byte {
	es := append(slices.Clone(okEntries), symlink("Default/l", "Preferences"), dir("Default/sub"), file("Default/sub/x", "xyz"))
	var seeds [][]byte
	defer func() { archiveVersion = FormatVersion }()
	for _, v := range []int{1, 2, FormatVersion} {
		archiveVersion = v
		seeds = append(seeds,
			tarOf(t, manifestOf(es), es),
			tarOf(t, manifestOf(okEntries), okEntries),
			tarOf(t, manifestOf(okEntries), append(slices.Clone(okEntries), symlink("Default/up", ".."))))
	}
	// Format 3 as Create writes it: no directory that holds an entry.
	archiveVersion = FormatVersion
	bare := []entry{file("Default/Preferences", "{}"), symlink("Default/l", "Preferences"), file("Default/sub/x", "xyz"), dir("empty"), file("Local State", "{}")}
	seeds = append(seeds, tarOf(t, manifestOf(bare), bare))
	return seeds
}

// FuzzRestore feeds arbitrary bytes to Restore over an existing profile. Input
// that starts with the zstd magic goes in as is; anything else is taken as a
// tar stream and compressed first, so that the fuzzer reaches the tar and
// manifest checks instead of stopping at zstd's checksums. Restore must never
// panic, never touch anything outside its temporary directory, and either
// succeed or leave the old profile exactly as it was.
//
// Each input costs a few file-system operations, so run it with a short
// minimisation time, on tmpfs if there is one:
//
//	TMPDIR=/dev/shm go test -run '^$' -fuzz '^FuzzRestore$' -fuzztime 60s -fuzzminimizetime 5s ./snapshot
func FuzzRestore(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
		f.Add(zstdOf(f, s))
	}
	// One tree per fuzzing process, rebuilt only after a successful restore.
	base := f.TempDir()
	parent := filepath.Join(base, "profiles")
	profile := filepath.Join(parent, "work")
	old := map[string]string{"Local State": "old", "Default/Preferences": "old prefs"}
	writeTree(f, profile, old)
	must(f, os.WriteFile(filepath.Join(base, "outside"), []byte("outside"), 0o600))
	before := dirState(f, profile)
	opts := RestoreOptions{ExtractOptions: ExtractOptions{MaxArchiveBytes: 1 << 20, MaxUnpackedBytes: 8 << 20, MaxFiles: 1000, MaxManifestBytes: 1 << 20}}

	f.Fuzz(func(t *testing.T, data []byte) {
		arc := data
		if !bytes.HasPrefix(data, zstdMagic) {
			arc = zstdOf(t, data)
		}
		m, err := Restore(context.Background(), bytes.NewReader(arc), profile, opts)
		if e := entries(t, parent); !slices.Equal(e, []string{"work"}) {
			t.Fatalf("parent holds %v after Restore (err %v)", e, err)
		}
		if e := entries(t, base); !slices.Equal(e, []string{"outside", "profiles"}) {
			t.Fatalf("base holds %v after Restore (err %v)", e, err)
		}
		if b, _ := os.ReadFile(filepath.Join(base, "outside")); string(b) != "outside" {
			t.Fatal("a file outside the profile changed")
		}
		if err != nil {
			switch errcode.Of(err) {
			case errcode.UnsafeArchive, errcode.SnapshotCorrupt:
			default:
				t.Fatalf("unexpected code %s: %v", errcode.Of(err), err)
			}
			if !mapsEqual(before, dirState(t, profile)) {
				t.Fatalf("failed restore (%v) changed the profile", err)
			}
			return
		}
		// Success: the profile is exactly what the manifest lists and
		// the directories it implies, and no symlink in it leads outside.
		got := dirState(t, profile)
		if len(got) != m.Entries()+1 {
			t.Fatalf("restored %d entries, the manifest lists %d and implies %d", len(got)-1, len(m.Files), m.Entries()-len(m.Files))
		}
		for _, f := range m.Files {
			p := filepath.FromSlash(f.Path)
			if !strings.HasPrefix(got[p], f.Type) {
				t.Fatalf("%s restored as %q, manifest says %s", f.Path, got[p], f.Type)
			}
			for d := filepath.Dir(p); d != "."; d = filepath.Dir(d) {
				if !strings.HasPrefix(got[d], "dir ") {
					t.Fatalf("%s, above %s, restored as %q", d, f.Path, got[d])
				}
			}
			if f.Type == TypeSymlink {
				if r, err := filepath.EvalSymlinks(filepath.Join(profile, p)); err == nil {
					if rel, err := filepath.Rel(profile, r); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
						t.Fatalf("symlink %s resolves outside the profile to %s", f.Path, r)
					}
				}
			}
		}
		must(t, os.RemoveAll(profile))
		writeTree(t, profile, old)
	})
}

// FuzzParseManifest checks that the parser never panics, and that whatever it
// accepts is safe: clean relative paths, parents first, symlinks inside.
func FuzzParseManifest(f *testing.F) {
	es := append(slices.Clone(okEntries), symlink("Default/l", "Preferences"), symlink("Default/up", ".."), symlink("x", "Default/up/Default"))
	b, err := json.Marshal(manifestOf(es))
	must(f, err)
	f.Add(b)
	f.Add([]byte(`{"format_version":1,"files":[{"path":"a","type":"dir","mode":448},{"path":"a/b","type":"symlink","link":"../a/../a"}]}`))
	f.Add([]byte(`{"format_version":1,"files":[{"path":"../x","type":"file"}]}`))
	f.Add([]byte(`{"format_version":3,"file_count":1,"files":[{"path":"a/b/c","type":"file"},{"path":"a/d","type":"symlink","link":"b"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			if c := errcode.Of(err); c != errcode.UnsafeArchive && c != errcode.SnapshotCorrupt {
				t.Fatalf("unexpected code %s: %v", c, err)
			}
			return
		}
		seen := map[string]string{}  // listed path -> type
		implied := map[string]bool{} // directories above listed paths, not listed before them
		for _, fl := range m.Files {
			if checkPath(fl.Path) != nil || seen[fl.Path] != "" || implied[fl.Path] {
				t.Fatalf("accepted bad or duplicate path %q, or one listed after entries inside it", fl.Path)
			}
			for d := filepath.Dir(fl.Path); d != "."; d = filepath.Dir(d) {
				if typ := seen[d]; typ != "" {
					if typ != TypeDir {
						t.Fatalf("accepted %q inside %s %q", fl.Path, typ, d)
					}
					break
				}
				if m.FormatVersion < 3 {
					t.Fatalf("accepted %q before its directory in a version %d manifest", fl.Path, m.FormatVersion)
				}
				if err := checkPath(d); err != nil {
					t.Fatalf("accepted %q, inside %q, which no entry may be: %v", fl.Path, d, err)
				}
				implied[d] = true
			}
			seen[fl.Path] = fl.Type
			// Escaping: the cleaned target is ".." or under "../"; a name
			// that only starts with two dots ("..0") is inside.
			resolved := filepath.Clean(filepath.Join(filepath.Dir(fl.Path), fl.Link))
			if fl.Type == TypeSymlink && (strings.HasPrefix(fl.Link, "/") || resolved == ".." || strings.HasPrefix(resolved, "../")) {
				t.Fatalf("accepted escaping symlink %q -> %q", fl.Path, fl.Link)
			}
		}
	})
}
