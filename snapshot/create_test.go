package snapshot

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"director/errcode"
)

func TestCreateDetectsChangeAfterWalk(t *testing.T) {
	for name, change := range map[string]func(p string) error{
		"grown": func(p string) error {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			f.WriteString("more")
			return f.Close()
		},
		"same size, mtime put back": func(p string) error {
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			if err := os.WriteFile(p, bytes.Repeat([]byte("X"), int(fi.Size())), 0o600); err != nil {
				return err
			}
			return os.Chtimes(p, fi.ModTime(), fi.ModTime())
		},
		"removed": os.Remove,
		"replaced by a symlink to a file of the same size outside": func(p string) error {
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			outside := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(p)))), "outside")
			if err := os.WriteFile(outside, bytes.Repeat([]byte("S"), int(fi.Size())), 0o600); err != nil {
				return err
			}
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Symlink(outside, p)
		},
	} {
		t.Run(name, func(t *testing.T) {
			src := t.TempDir()
			writeTree(t, src, profileTree())
			_, err := Create(context.Background(), src, io.Discard, CreateOptions{hooks: createHooks{
				afterScan: func() { must(t, change(filepath.Join(src, "Default", "Network", "Cookies"))) },
			}})
			wantCode(t, err, errcode.ProfileInUse)
		})
	}
}

// A file written to while it is being read fails the snapshot, even when
// the writer keeps its size and puts its mtime back: the copy would mix two
// versions of it.
func TestCreateDetectsChangeDuringRead(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, profileTree())
	p := filepath.Join(src, "Default", "History")
	must(t, os.WriteFile(p, bytes.Repeat([]byte("h"), 3*hasherBufferSize), 0o600))
	fi, err := os.Stat(p)
	must(t, err)
	_, err = Create(context.Background(), src, io.Discard, CreateOptions{hooks: createHooks{afterRead: func(rel string) {
		if rel == "Default/History" {
			must(t, os.WriteFile(p, bytes.Repeat([]byte("X"), 3*hasherBufferSize), 0o600))
			must(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
		}
	}}})
	wantCode(t, err, errcode.ProfileInUse)
}

// TestCopyFileRefusesSymlink covers the other window: a file that becomes a
// symlink after the walk listed it and before it is opened to be archived.
// Following it would archive the target's bytes under the profile's name.
func TestCopyFileRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "secret"), []byte("not the profile's"), 0o600))
	prof := filepath.Join(dir, "profile")
	must(t, os.Mkdir(prof, 0o700))
	must(t, os.Symlink(filepath.Join(dir, "secret"), filepath.Join(prof, "Cookies")))
	f := File{Path: "Cookies", Type: TypeFile, Size: 17}
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	fh := newFileHasher([]File{f})
	err := copyFile(prof, tw, &tar.Header{Name: f.Path, Typeflag: tar.TypeReg, Size: f.Size}, &f, fileState{size: f.Size}, fh, 0, nil, nil, nil)
	fh.wait()
	wantCode(t, err, errcode.ProfileInUse)
	if fh.files[0].SHA256 != "" || out.Len() != 0 || bytes.Contains(out.Bytes(), []byte("profile's")) {
		t.Errorf("archived or hashed the symlink's target: sha256 %q, %d bytes written", f.SHA256, out.Len())
	}
}

func TestCreateRefusesWhatRestoreWould(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string]string{"Local State": "{}", "Default/evil": "->/etc/passwd"})
	_, err := Create(context.Background(), src, io.Discard, CreateOptions{})
	wantCode(t, err, errcode.InvalidInput)
	// Excluding the entry makes the profile archivable.
	if _, err := Create(context.Background(), src, io.Discard, CreateOptions{Excludes: []string{"Default/evil"}}); err != nil {
		t.Fatal(err)
	}
}

func TestCreateErrors(t *testing.T) {
	_, err := Create(context.Background(), filepath.Join(t.TempDir(), "nope"), io.Discard, CreateOptions{})
	wantCode(t, err, errcode.ProfileNotFound)
	_, err = Create(context.Background(), t.TempDir(), io.Discard, CreateOptions{Excludes: []string{"[bad"}})
	wantCode(t, err, errcode.InvalidInput)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Create(ctx, t.TempDir(), io.Discard, CreateOptions{})
	if err == nil {
		t.Fatal("cancelled Create succeeded")
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	time.Sleep(time.Millisecond)
	src := t.TempDir()
	writeTree(t, src, profileTree())
	_, err = Create(ctx, src, io.Discard, CreateOptions{})
	wantCode(t, err, errcode.Timeout)
}

func TestPatterns(t *testing.T) {
	sel, err := newSelector(DefaultExcludes(), []string{"/Default/Cache/keep"})
	must(t, err)
	for rel, want := range map[string]bool{
		"Cache":                                 true,
		"Default/Cache":                         true,
		"Profile 1/Cache/Cache_Data/x":          true,
		"Default/Cache/keep":                    false,
		"Default/Cache/keep/x":                  false,
		"Default/Service Worker/CacheStorage/a": true,
		"Default/Service Worker/Database":       false,
		"Service Worker/CacheStorage":           true,
		"BrowserMetrics-spare.pma":              true,
		"Default/Network/Cookies":               false,
		"Default/Local Storage/leveldb/CURRENT": false,
		"Default/IndexedDB/x/Cache":             true,
		"Default/Code Cache/js/index":           true,
		"Default/DevToolsActivePort":            true,
		"SingletonLock":                         true,
		".director/manifest.json":               true,
		"Default/.director":                     false,
		"Local State":                           false,
		"Default/Preferences":                   false,
		"Default/CacheStorageNotReally":         false,
	} {
		if got := sel.excluded(rel); got != want {
			t.Errorf("excluded(%q) = %v, want %v", rel, got, want)
		}
	}
	// Runtime files stay out even when an include names them.
	sel, err = newSelector(nil, []string{"SingletonLock", "*"})
	must(t, err)
	if !sel.excluded("SingletonLock") {
		t.Error("an include re-included SingletonLock")
	}
}

// links is a manifest of n symlinks at the root, each to target.
func links(n int, target string) string {
	m := Manifest{FormatVersion: 2}
	for i := range n {
		m.Files = append(m.Files, File{Path: fmt.Sprintf("l%d", i), Type: TypeSymlink, Link: target})
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// validate bounds the entries, listed and implied, however they are made
// up, so that Create refuses a profile that no restore would accept. (Past
// a MiB of JSON, ParseManifest counts the entries before it decodes them.)
func TestValidateBoundsEntries(t *testing.T) {
	flat := func(n int, dir string) *Manifest {
		m := &Manifest{FormatVersion: FormatVersion}
		for i := range n {
			m.Files = append(m.Files, File{Path: fmt.Sprintf("%sf%d", dir, i), Type: TypeFile, Mode: 0o600})
		}
		m.FileCount = n
		return m
	}
	for _, tc := range []struct {
		name string
		m    *Manifest
		ok   bool
	}{
		{"at the limit, at the root", flat(DefaultMaxFiles, ""), true},
		{"one over, at the root", flat(DefaultMaxFiles+1, ""), false},
		{"at the limit with the directory implied", flat(DefaultMaxFiles-1, "d/"), true},
		{"one over with the directory implied", flat(DefaultMaxFiles, "d/"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.m.validate()
			if tc.ok {
				must(t, err)
				return
			}
			wantCode(t, err, errcode.UnsafeArchive)
		})
	}
}

// deepManifest is a version 3 manifest of n empty files, each under dirs
// directories that no other file's path shares: n×dirs implied directories.
func deepManifest(n, dirs int) string {
	m := Manifest{FormatVersion: 3, FileCount: n}
	for i := range n {
		m.Files = append(m.Files, File{Path: fmt.Sprintf("d%d/", i) + strings.Repeat("a/", dirs-1) + "f", Type: TypeFile})
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func TestParseManifest(t *testing.T) {
	m := manifestOf(okEntries)
	b, err := json.Marshal(m)
	must(t, err)
	// variant is m's JSON after f has changed a copy of it.
	variant := func(f func(c *Manifest)) string {
		c := manifestOf(okEntries)
		f(c)
		b, err := json.Marshal(c)
		must(t, err)
		return string(b)
	}
	for name, valid := range map[string]string{
		"stored copy":                        string(b),
		"archive's copy":                     variant(func(c *Manifest) { *c = *c.inArchive() }),
		"version 1":                          variant(func(c *Manifest) { c.FormatVersion, c.FilesSHA256 = 1, "" }),
		"empty, stored":                      `{"format_version":2,"files":[],"files_sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}`,
		"empty, archive's":                   `{"format_version":2,"files":[]}`,
		"longest symlink":                    links(3, strings.Repeat("x/", MaxLinkLen/2-1)+"x"),
		"unicode note":                       variant(func(c *Manifest) { c.Note = "après la connexion ✓" }),
		"older multi-line note":              variant(func(c *Manifest) { c.Note = "before\tthe\nupgrade" }),
		"older note with a CR and an escape": variant(func(c *Manifest) { c.Note = "nightly\r\x1b[31m" }),
		"odd host":                           variant(func(c *Manifest) { c.Host = "a\nb" }),
		"version 3, implied directories":     `{"format_version":3,"file_count":1,"files":[{"path":"a/b/c","type":"file"},{"path":"a/d","type":"dir"}]}`,
		"version 3, listed and implied":      `{"format_version":3,"file_count":1,"files":[{"path":"a","type":"dir"},{"path":"a/b/c","type":"file"}]}`,
	} {
		if _, err := ParseManifest([]byte(valid)); err != nil {
			t.Errorf("valid manifest (%s): %v", name, err)
		}
	}
	for name, tc := range map[string]struct {
		json string
		code errcode.Code
	}{
		"trailing data":               {string(b) + "{}", errcode.SnapshotCorrupt},
		"unknown field":               {`{"format_version":1,"files":[],"surprise":1}`, errcode.SnapshotCorrupt},
		"version 0":                   {`{"files":[]}`, errcode.SnapshotCorrupt},
		"dot path":                    {`{"format_version":1,"files":[{"path":".","type":"dir"}]}`, errcode.UnsafeArchive},
		"reserved":                    {`{"format_version":1,"files":[{"path":".director","type":"dir"}]}`, errcode.UnsafeArchive},
		"bad type":                    {`{"format_version":1,"files":[{"path":"a","type":"fifo"}]}`, errcode.UnsafeArchive},
		"setuid":                      {`{"format_version":1,"files":[{"path":"a","type":"dir","mode":2496}]}`, errcode.UnsafeArchive},
		"bad hash":                    {`{"format_version":1,"file_count":1,"files":[{"path":"a","type":"file","sha256":"zz"}]}`, errcode.SnapshotCorrupt},
		"totals":                      {`{"format_version":1,"files":[{"path":"a","type":"file","size":1,"sha256":"` + zeros64 + `"}]}`, errcode.SnapshotCorrupt},
		"symlink loop":                {`{"format_version":1,"files":[{"path":"a","type":"symlink","link":"b"},{"path":"b","type":"symlink","link":"a/.."}]}`, errcode.UnsafeArchive},
		"empty link":                  {`{"format_version":1,"files":[{"path":"a","type":"symlink"}]}`, errcode.SnapshotCorrupt},
		"dir with size":               {`{"format_version":1,"files":[{"path":"a","type":"dir","size":3}]}`, errcode.SnapshotCorrupt},
		"hashes without their digest": {variant(func(c *Manifest) { c.FilesSHA256 = "" }), errcode.SnapshotCorrupt},
		"digest of other hashes":      {variant(func(c *Manifest) { c.FilesSHA256 = zeros64 }), errcode.SnapshotCorrupt},
		"digest with a hash missing":  {variant(func(c *Manifest) { c.Files[1].SHA256 = "" }), errcode.SnapshotCorrupt},
		"digest without hashes": {variant(func(c *Manifest) {
			c.FilesSHA256 = zeros64
			*c = Manifest{FormatVersion: 2, Files: c.inArchive().Files, FileCount: c.FileCount, RawSize: c.RawSize, FilesSHA256: zeros64}
		}), errcode.SnapshotCorrupt},
		"version 1 with a digest":  {variant(func(c *Manifest) { c.FormatVersion = 1 }), errcode.SnapshotCorrupt},
		"version 1 without a hash": {variant(func(c *Manifest) { *c = *c.inArchive(); c.FormatVersion = 1 }), errcode.SnapshotCorrupt},
		"a later version":          {variant(func(c *Manifest) { c.FormatVersion = FormatVersion + 1 }), errcode.SnapshotCorrupt},
		"negative size":            {`{"format_version":1,"file_count":1,"size":-1,"files":[{"path":"a","type":"file","size":-1,"sha256":"` + zeros64 + `"}]}`, errcode.SnapshotCorrupt},
		// A hostile manifest's long, many symlinks kept its check busy for
		// hours (the work grew with the square of a target's length).
		// Commands print these fields: an ESC would drive the terminal.
		"escape in the id":                       {variant(func(c *Manifest) { c.ID = "x\x1b[31mRED" }), errcode.SnapshotCorrupt},
		"C1 control in chrome_version":           {variant(func(c *Manifest) { c.ChromeVersion = "999\u009b2J" }), errcode.SnapshotCorrupt},
		"escape in the profile":                  {variant(func(c *Manifest) { c.Profile = "t\x1b[2J" }), errcode.SnapshotCorrupt},
		"symlink target longer than Linux keeps": {links(1, strings.Repeat("x/", MaxLinkLen/2)+"xx"), errcode.UnsafeArchive},
		"symlinks too many to check":             {links(200, strings.Repeat("x/", MaxLinkLen/2-1)+"x"), errcode.UnsafeArchive},
		// Format 3 leaves out directories that hold listed entries; no
		// earlier format does, and an implied one is never listed later,
		// nor anything but a directory.
		"version 2, a directory left out":          {`{"format_version":2,"file_count":1,"files":[{"path":"a/b","type":"file"}]}`, errcode.UnsafeArchive},
		"version 3, an implied directory listed":   {`{"format_version":3,"file_count":1,"files":[{"path":"a/b","type":"file"},{"path":"a","type":"dir"}]}`, errcode.UnsafeArchive},
		"version 3, an implied directory a link":   {`{"format_version":3,"file_count":1,"files":[{"path":"a/b","type":"file"},{"path":"a","type":"symlink","link":"x"}]}`, errcode.UnsafeArchive},
		"version 3, an implied directory a file":   {`{"format_version":3,"file_count":2,"files":[{"path":"a/b","type":"file"},{"path":"a","type":"file"}]}`, errcode.UnsafeArchive},
		"version 3, an entry inside a file":        {`{"format_version":3,"file_count":2,"files":[{"path":"a","type":"file"},{"path":"a/b","type":"file"}]}`, errcode.UnsafeArchive},
		"version 3, an entry below a symlink":      {`{"format_version":3,"file_count":1,"files":[{"path":"a","type":"symlink","link":"x"},{"path":"a/b/c","type":"file"}]}`, errcode.UnsafeArchive},
		"version 3, implied directories too many":  {deepManifest(DefaultMaxFiles/1000+1, 1000), errcode.UnsafeArchive},
		"version 3, a runtime file's name implied": {`{"format_version":3,"file_count":1,"files":[{"path":"SingletonLock/x","type":"file"}]}`, errcode.UnsafeArchive},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseManifest([]byte(tc.json))
			wantCode(t, err, tc.code)
		})
	}
}

// A manifest of a format newer than this build's is a snapshot a newer
// director wrote, not a damaged one: ParseManifest says so (NewerFormatError,
// an upgrade hint) whatever fields the newer format added, where they come
// in the object. Version 0 and malformed JSON are still damage.
func TestParseManifestNewerFormat(t *testing.T) {
	next := FormatVersion + 1
	for _, tc := range []struct {
		name    string
		json    string
		version int // the NewerFormatError's, 0 for none
	}{
		{"a later version", fmt.Sprintf(`{"format_version":%d,"files":[]}`, next), next},
		{"a later version with a field this build lacks", fmt.Sprintf(`{"format_version":%d,"files":[],"chunk_index":[1,2]}`, next), next},
		{"the new field first", fmt.Sprintf(`{"signature":"x","format_version":%d,"files":[{"path":"a","type":"blob"}]}`, next+5), next + 5},
		{"a field this build lacks, version 1", `{"format_version":1,"files":[],"chunk_index":[1,2]}`, 0},
		{"version 0", `{"files":[]}`, 0},
		{"a later version, not JSON", fmt.Sprintf(`{"format_version":%d,"files":[`, next), 0},
		{"a version that is not a number", `{"format_version":"3","files":[]}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseManifest([]byte(tc.json))
			wantCode(t, err, errcode.SnapshotCorrupt)
			var nf *NewerFormatError
			if got := errors.As(err, &nf); got != (tc.version != 0) {
				t.Fatalf("ParseManifest = %v; NewerFormatError in its chain: %v, want %v", err, got, tc.version != 0)
			}
			if tc.version == 0 {
				return
			}
			if nf.Version != tc.version {
				t.Errorf("NewerFormatError.Version = %d, want %d", nf.Version, tc.version)
			}
			if msg := err.Error(); !strings.Contains(msg, "newer director") || strings.Contains(msg, "corrupt") {
				t.Errorf("message %q: want one that says a newer director wrote it, not that it is corrupt", msg)
			}
			if h := errcode.HintOf(err); !strings.Contains(h, "upgrade director") {
				t.Errorf("hint %q does not say to upgrade director", h)
			}
		})
	}
}

const zeros64 = "0000000000000000000000000000000000000000000000000000000000000000"

// The walk lists what filepath.WalkDir would, in its order, on any number
// of goroutines: every entry after its parent, siblings by name, an
// excluded directory only above a re-included path.
func TestScanTreeOrderOnAnyConcurrency(t *testing.T) {
	src := t.TempDir()
	tree := profileTree()
	tree["Profile 1/Cache/sub/deep/keep-too"] = "x"
	tree["Profile 1/Cache/sub/drop"] = "x"
	writeTree(t, src, tree)
	genTree(t, filepath.Join(src, "Default", "IndexedDB", "gen"), 2<<20, 3)
	sel, err := newSelector(DefaultExcludes(), []string{"Profile 1/Cache/keep-me", "Profile 1/Cache/sub/deep"})
	must(t, err)

	// The reference: filepath.WalkDir, listing an excluded directory only
	// when a listed entry is under it.
	var want []string
	pendingExcluded := map[string]bool{}
	must(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		must(t, err)
		rel := filepath.ToSlash(strings.TrimPrefix(strings.TrimPrefix(p, src), "/"))
		if rel == "" {
			return nil
		}
		if sel.never(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if sel.excluded(rel) {
			if d.IsDir() {
				pendingExcluded[rel] = true
			}
			return nil
		}
		var anc []string
		for a := path.Dir(rel); a != "."; a = path.Dir(a) {
			if pendingExcluded[a] {
				anc = append([]string{a}, anc...)
				delete(pendingExcluded, a)
			}
		}
		want = append(want, anc...)
		want = append(want, rel)
		return nil
	}))
	for _, conc := range []int{1, 2, 3, 8} {
		files, states, err := scanTree(context.Background(), src, sel, true, conc)
		must(t, err)
		var got []string
		for i, f := range files {
			got = append(got, f.Path)
			if f.Type == TypeFile && (states[i].size != f.Size || states[i].stamp == (statStamp{})) {
				t.Errorf("conc %d: %s has state %+v for size %d", conc, f.Path, states[i], f.Size)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("conc %d: walk listed\n%v\nwant\n%v", conc, got, want)
		}
	}
	if !slices.Contains(want, "Profile 1/Cache/sub/deep/keep-too") || slices.Contains(want, "Profile 1/Cache/sub/drop") || len(want) < 100 {
		t.Errorf("the reference walk is not testing includes: %v", want)
	}
}

// Every compressing worker holds an encoder and a chunk slot (about 18 MB),
// so a snapshot's memory must not grow with the machine's cores: by default
// Create starts at most maxDefaultWorkers of them, and exactly the number
// asked for when CreateOptions.Concurrency is set. The archive is the same
// whatever the number.
func TestCreateCompressWorkersBounded(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, profileTree())
	genTree(t, filepath.Join(src, "Default", "IndexedDB", "gen"), 10<<20, 7)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var want []byte
	for _, c := range []struct {
		procs, concurrency, workers int
	}{
		{1, 0, 1},
		{2, 0, 2},
		{4, 0, maxDefaultWorkers},
		{8, 0, maxDefaultWorkers},
		{64, 0, maxDefaultWorkers},
		{8, 4, 4},
		{1, 3, 3},
	} {
		runtime.GOMAXPROCS(c.procs)
		got := -1
		_, arc := createArchive(t, src, CreateOptions{ID: "w", Profile: "p", Host: "h", CreatedAt: time.Unix(1, 0), Concurrency: c.concurrency,
			hooks: createHooks{frameWorkers: func(n int) { got = n }}})
		if got != c.workers {
			t.Errorf("GOMAXPROCS %d, Concurrency %d: %d compressing workers, want %d", c.procs, c.concurrency, got, c.workers)
		}
		if want == nil {
			want = arc
		} else if !bytes.Equal(arc, want) {
			t.Errorf("GOMAXPROCS %d, Concurrency %d: the archive differs from the one-worker archive", c.procs, c.concurrency)
		}
	}
	if maxDefaultWorkers < 2 {
		t.Errorf("maxDefaultWorkers = %d: a two-core machine would compress on one", maxDefaultWorkers)
	}
}

// Create refuses, before it writes anything, a profile whose archive a
// restore would refuse for unpacking to more than its limit, so that no
// snapshot is stored that cannot be restored; whatever it accepts under a
// limit, Verify and Restore accept under the same limit.
func TestCreateRefusesTooBigToRestore(t *testing.T) {
	t.Run("over the default limit", func(t *testing.T) {
		src := t.TempDir()
		writeTree(t, src, profileTree())
		big := filepath.Join(src, "Default", "IndexedDB", "huge.ldb")
		must(t, os.MkdirAll(filepath.Dir(big), 0o700))
		f, err := os.Create(big)
		must(t, err)
		must(t, f.Truncate(DefaultMaxUnpackedBytes+1)) // sparse: only its size is read before the refusal
		must(t, f.Close())
		var out bytes.Buffer
		_, err = Create(context.Background(), src, &out, CreateOptions{})
		wantCode(t, err, errcode.InvalidInput)
		if err == nil || !strings.Contains(err.Error(), "too big to restore") || !strings.Contains(errcode.HintOf(err), "exclude") {
			t.Errorf("Create = %v (hint %q), want too big to restore, with a hint to exclude", err, errcode.HintOf(err))
		}
		if out.Len() != 0 {
			t.Errorf("Create wrote %d bytes before refusing", out.Len())
		}
	})
	t.Run("at the limit", func(t *testing.T) {
		src := t.TempDir()
		tree := map[string]string{"Local State": "{}"}
		for i := range 200 {
			tree[fmt.Sprintf("Default/%s/f%03d", strings.Repeat("long-name-", 12), i)] = strings.Repeat("v", i*37)
		}
		writeTree(t, src, tree)
		_, arc := createArchive(t, src, CreateOptions{Excludes: []string{}})
		zr, err := zstd.NewReader(bytes.NewReader(arc))
		must(t, err)
		unpacked, err := io.Copy(io.Discard, zr)
		zr.Close()
		must(t, err)
		refused, accepted := 0, 0
		for limit := unpacked - 4096; limit <= unpacked+1<<20; limit += 64 << 10 {
			var out bytes.Buffer
			_, err := Create(context.Background(), src, &out, CreateOptions{Excludes: []string{}, MaxUnpackedBytes: limit})
			if err != nil {
				wantCode(t, err, errcode.InvalidInput)
				refused++
				continue
			}
			accepted++
			opts := ExtractOptions{MaxUnpackedBytes: limit}
			if _, err := Verify(context.Background(), bytes.NewReader(out.Bytes()), opts); err != nil {
				t.Errorf("limit %d (the archive unpacks to %d): Create accepted, Verify refused: %v", limit, unpacked, err)
			}
			if _, err := Restore(context.Background(), bytes.NewReader(out.Bytes()), filepath.Join(t.TempDir(), "p"), RestoreOptions{ExtractOptions: opts}); err != nil {
				t.Errorf("limit %d: Create accepted, Restore refused: %v", limit, err)
			}
		}
		if refused == 0 || accepted == 0 {
			t.Errorf("%d limits refused, %d accepted: the test misses one side", refused, accepted)
		}
	})
}

// A refusal for the unpacked-size limit carries, as an UnpackedLimitError,
// a limit that takes the archive: Create under that limit writes it, and
// Verify and Restore, which refuse it under a lower one (the manifest
// declares more, or the stream unpacks to more), take it under the Need
// their own refusal names. A bomb (a stream that unpacks to more than its
// manifest's entries can) names none.
func TestUnpackedLimitErrorNamesALimitThatWorks(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	tree := map[string]string{"Local State": "{}"}
	for i := range 50 {
		tree[fmt.Sprintf("Default/IndexedDB/f%03d", i)] = strings.Repeat("v", 1000+i)
	}
	writeTree(t, src, tree)
	need := func(t *testing.T, err error, code errcode.Code) int64 {
		t.Helper()
		wantCode(t, err, code)
		var e *UnpackedLimitError
		if !errors.As(err, &e) || e.Need <= e.Limit {
			t.Fatalf("error %v carries no UnpackedLimitError with a Need over its Limit (%+v)", err, e)
		}
		return e.Need
	}

	var out bytes.Buffer
	_, err := Create(ctx, src, &out, CreateOptions{Excludes: []string{}, MaxUnpackedBytes: 8 << 10})
	limit := need(t, err, errcode.InvalidInput)
	out.Reset()
	if _, err := Create(ctx, src, &out, CreateOptions{Excludes: []string{}, MaxUnpackedBytes: limit}); err != nil {
		t.Fatalf("Create under the limit its refusal named, %d: %v", limit, err)
	}
	arc := out.Bytes()
	for _, c := range []struct {
		name  string
		limit int64
	}{
		{"the manifest declares more", 8 << 10},        // under the files' 51 KB
		{"the stream unpacks to more", 50*1000 + 1300}, // over the files, under their headers
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Verify(ctx, bytes.NewReader(arc), ExtractOptions{MaxUnpackedBytes: c.limit})
			n := need(t, err, errcode.UnsafeArchive)
			if _, err := Verify(ctx, bytes.NewReader(arc), ExtractOptions{MaxUnpackedBytes: n}); err != nil {
				t.Errorf("Verify under the limit its refusal named, %d: %v", n, err)
			}
			dst := filepath.Join(t.TempDir(), "p")
			_, err = Restore(ctx, bytes.NewReader(arc), dst, RestoreOptions{ExtractOptions: ExtractOptions{MaxUnpackedBytes: c.limit}})
			n = need(t, err, errcode.UnsafeArchive)
			if _, err := Restore(ctx, bytes.NewReader(arc), dst, RestoreOptions{ExtractOptions: ExtractOptions{MaxUnpackedBytes: n}}); err != nil {
				t.Errorf("Restore under the limit its refusal named, %d: %v", n, err)
			}
		})
	}
}

// recordedProgress records what Create tells its Progress.
type recordedProgress struct {
	starts []int64
	added  int64
	early  bool // Add before Start
}

func (p *recordedProgress) Start(total int64) { p.starts = append(p.starts, total) }
func (p *recordedProgress) Add(n int64) {
	p.early = p.early || len(p.starts) == 0
	p.added += n
}

// Create tells its Progress the bytes of file data to archive before it
// writes any, and then all of them as they are archived, so that a
// snapshot can show how far it is (it showed a spinner: the archive's size
// is not known in advance, the files' is once the walk is done).
func TestCreateReportsProgress(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, profileTree())
	big := make([]byte, 3*hasherBufferSize+17) // several reads of one file
	for i := range big {
		big[i] = byte(i * 31)
	}
	must(t, os.WriteFile(filepath.Join(src, "Default", "big"), big, 0o600))
	p := &recordedProgress{}
	var out bytes.Buffer
	m, err := Create(context.Background(), src, &out, CreateOptions{Progress: p})
	must(t, err)
	if len(p.starts) != 1 || p.starts[0] != m.RawSize || p.early {
		t.Errorf("Start calls %v (an Add before Start: %v), want one, with the raw size %d, before any Add", p.starts, p.early, m.RawSize)
	}
	if p.added != m.RawSize {
		t.Errorf("Add counted %d bytes, want the raw size %d", p.added, m.RawSize)
	}
}

// A limit that would not take the archive (a hostile manifest's sizes can
// add up past int64, to a negative bound) is never named as one that does.
func TestOverUnpackedNamesOnlyALimitOverTheOld(t *testing.T) {
	for _, c := range []struct {
		need  int64
		names bool
	}{{11, true}, {10, false}, {-5, false}} {
		err := overUnpacked(errcode.UnsafeArchive, hintAltered, 10, c.need, "over %d", 10)
		var e *UnpackedLimitError
		wantCode(t, err, errcode.UnsafeArchive)
		if errors.As(err, &e) != c.names || err.Error() != "over 10" || errcode.HintOf(err) != hintAltered {
			t.Errorf("need %d: %v (hint %q), UnpackedLimitError %v; want one only when need is over the limit", c.need, err, errcode.HintOf(err), e)
		}
	}
}

// The largest limits a size setting takes (--max-size and --max-unpacked
// of 8 EiB less a byte, math.MaxInt64) bound nothing: Verify and Restore
// read the archive as under the defaults (a limit one byte past them
// overflowed to a negative slice bound, and they panicked).
func TestLargestLimitsTakeTheArchive(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, profileTree())
	_, arc := createArchive(t, src, CreateOptions{})
	opts := ExtractOptions{MaxArchiveBytes: math.MaxInt64, MaxUnpackedBytes: math.MaxInt64}
	if _, err := Verify(context.Background(), bytes.NewReader(arc), opts); err != nil {
		t.Errorf("Verify: %v", err)
	}
	dst := filepath.Join(t.TempDir(), "p")
	if _, err := Restore(context.Background(), bytes.NewReader(arc), dst, RestoreOptions{ExtractOptions: opts}); err != nil {
		t.Errorf("Restore: %v", err)
	}
}

func TestSizeText(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{1024, "1.0 KiB"},
		{100000, "97.7 KiB"},
		{5 << 20, "5.0 MiB"},
		{4 << 30, "4.0 GiB"},
	} {
		if got := SizeText(c.n); got != c.want {
			t.Errorf("SizeText(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

// An archive keeps only the owner's permission bits, in the manifest and in
// the tar headers alike: files Chrome made world-readable (under umask 022)
// come out 0600-like from a plain `tar -x`, and the archive still verifies.
func TestCreateKeepsOwnerBitsOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p")
	writeTree(t, dir, map[string]string{"Last Version": "156", "Default/Preferences": "{}", "Default/run.sh": "#!/bin/sh", "Default/Empty/": ""})
	for p, mode := range map[string]os.FileMode{"Last Version": 0o644, "Default/run.sh": 0o755, "Default/Empty": 0o755, "Default/Preferences": 0o600} {
		must(t, os.Chmod(filepath.Join(dir, filepath.FromSlash(p)), mode))
	}
	man, arc := createArchive(t, dir, CreateOptions{Excludes: []string{}})
	// Default holds entries, so it is implied, not listed (format 3); the
	// empty directory is listed.
	want := map[string]uint32{"Last Version": 0o600, "Default/run.sh": 0o700, "Default/Empty": 0o700, "Default/Preferences": 0o600}
	for _, f := range man.Files {
		if w, ok := want[f.Path]; ok && f.Mode != w {
			t.Errorf("manifest: %s mode %o, want %o", f.Path, f.Mode, w)
		}
	}
	zr, err := zstd.NewReader(bytes.NewReader(arc))
	must(t, err)
	defer zr.Close()
	tr := tar.NewReader(zr)
	seen := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		must(t, err)
		if w, ok := want[strings.TrimSuffix(h.Name, "/")]; ok {
			seen++
			if uint32(h.Mode) != w {
				t.Errorf("tar header: %s mode %o, want %o", h.Name, h.Mode, w)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("found %d of the %d entries in the tar stream", seen, len(want))
	}
	if _, err := Verify(context.Background(), bytes.NewReader(arc), ExtractOptions{}); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

// TestCountEntries: the entry count checked before a big manifest is
// decoded counts the objects of its top-level "files" array (any case of
// the key, as the decoder reads it), nothing nested elsewhere, and stops
// past the limit; a small manifest is left to the decoder.
func TestCountEntries(t *testing.T) {
	pad := strings.Repeat("p", 1<<20) // over the size worth counting
	entries := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"path":"f%d","type":"file","x":{"y":[{},{}]}}`, i)
		}
		return b.String()
	}
	for _, c := range []struct {
		name, json  string
		limit, want int
	}{
		{"small", `{"files":[` + entries(10) + `]}`, 5, 0},
		{"counted", `{"note":"` + pad + `","files":[` + entries(10) + `]}`, 100, 10},
		{"key in another case", `{"note":"` + pad + `","FiLeS":[` + entries(7) + `]}`, 100, 7},
		{"nested files not counted", `{"note":"` + pad + `","x":{"files":[{},{},{}]},"files":[` + entries(2) + `]}`, 100, 2},
		{"stops past the limit", `{"note":"` + pad + `","files":[` + entries(1000) + `]}`, 5, 6},
		{"not JSON", pad, 5, 0},
	} {
		if got := countEntries([]byte(c.json), c.limit); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// TestParseManifestCountsFirst: a stored manifest (read by adoption and
// rebuild, not from an archive) listing more entries than any snapshot may
// is refused before it is decoded entry by entry.
func TestParseManifestCountsFirst(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"format_version":2,"files":[`)
	for i := range DefaultMaxFiles + 1 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"path":"f%d","type":"file"}`, i)
	}
	b.WriteString(`]}`)
	_, err := ParseManifest([]byte(b.String()))
	wantCode(t, err, errcode.UnsafeArchive)
	if !strings.Contains(err.Error(), "more than 200000 entries") {
		t.Fatalf("got %v", err)
	}
}

// Create ends a compressed block where a large file's data starts, where the
// data after it starts, and where compressible data follows random data
// (blockEnder): the places where klauspost's encoder would otherwise keep a
// block's literals raw.
func TestBlockEnderRules(t *testing.T) {
	random := randomBytes(31, 4<<10)
	text := textBytes(4 << 10)
	small := []byte("tiny")
	type file struct {
		size  int64
		first []byte
	}
	for _, tc := range []struct {
		name  string
		files []file
		want  []int // indexes of the files whose data starts a block
	}{
		{"text only", []file{{4 << 10, text}, {4 << 10, text}, {4 << 10, text}}, nil},
		{"random only", []file{{4 << 10, random}, {4 << 10, random}}, nil},
		{"text, then random: no end", []file{{4 << 10, text}, {4 << 10, random}}, nil},
		{"random, then text", []file{{4 << 10, random}, {4 << 10, text}, {4 << 10, text}}, []int{1}},
		{"a small file between says nothing", []file{{4 << 10, random}, {4, small}, {4 << 10, text}}, []int{2}},
		{"a large file and the one after it", []file{{4 << 10, text}, {blockEndMin, text}, {4 << 10, text}, {4 << 10, text}}, []int{1, 2}},
		{"two large files in a row", []file{{blockEndMin, random}, {1 << 30, text}, {4 << 10, text}}, []int{0, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			i := 0
			b := &blockEnder{end: func() { got = append(got, i) }}
			for ; i < len(tc.files); i++ {
				b.atData(tc.files[i].size, tc.files[i].first)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("blocks end at the data of files %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLooksRandom(t *testing.T) {
	enc, err := zstd.NewWriter(nil)
	must(t, err)
	compressed := enc.EncodeAll(textBytes(64<<10), nil)
	sqlite := make([]byte, 1024)
	copy(sqlite, "SQLite format 3\x00\x10\x00\x01\x01\x00\x40\x20\x20")
	for _, tc := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"random", randomBytes(41, randomSample), true},
		{"compressed", compressed[len(compressed)-randomSample:], true},
		{"JSON", textBytes(randomSample), false},
		{"letters", lettersBytes(42, randomSample), false},
		{"zeros", make([]byte, randomSample), false},
		{"an SQLite page", sqlite, false},
	} {
		if got := looksRandom(tc.b); got != tc.want {
			t.Errorf("looksRandom(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
