package snapshot

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"director/errcode"
)

// entry is one tar entry of a hand-built archive.
type entry struct {
	name, body, link string
	typ              byte
	size             int64 // header size when it should differ from len(body)
}

func file(name, body string) entry      { return entry{name: name, body: body, typ: tar.TypeReg} }
func dir(name string) entry             { return entry{name: name + "/", typ: tar.TypeDir} }
func symlink(name, target string) entry { return entry{name: name, link: target, typ: tar.TypeSymlink} }

// archiveVersion is the format manifestOf and tarOf write.
// TestHostileArchives runs its table once per version it reads.
var archiveVersion = FormatVersion

// manifestOf lists entries as Create returns them: the stored copy, with
// every file's sha256 (and, from version 2, their digest).
func manifestOf(es []entry) *Manifest {
	m := &Manifest{FormatVersion: archiveVersion, ID: "t", Profile: "t", CreatedAt: time.Unix(0, 0).UTC(), OS: "linux", Excludes: []string{}}
	for _, e := range es {
		f := File{Path: strings.TrimSuffix(e.name, "/"), Mode: 0o600}
		switch e.typ {
		case tar.TypeDir:
			f.Type, f.Mode = TypeDir, 0o700
		case tar.TypeSymlink:
			f.Type, f.Link = TypeSymlink, e.link
		default:
			s := sha256.Sum256([]byte(e.body))
			f.Type, f.Size, f.SHA256 = TypeFile, int64(len(e.body)), hex.EncodeToString(s[:])
			m.FileCount++
			m.RawSize += f.Size
		}
		m.Files = append(m.Files, f)
	}
	if m.FormatVersion >= 2 {
		m.FilesSHA256 = filesDigest(m.Files)
	}
	return m
}

// tarOf writes a tar stream as Create lays it out: unless m is nil, m's
// archive copy first, then es, then (from version 2) the digest entry with
// m's FilesSHA256.
func tarOf(t testing.TB, m *Manifest, es []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if m != nil {
		own := m
		if m.FormatVersion >= 2 {
			own = m.inArchive()
		}
		b, err := json.Marshal(own)
		must(t, err)
		es = append([]entry{file(ManifestPath, string(b))}, es...)
		if m.FormatVersion >= 2 {
			d, err := json.Marshal(Digest{FilesSHA256: m.FilesSHA256})
			must(t, err)
			es = append(es, file(DigestPath, string(d)))
		}
	}
	for _, e := range es {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: 0o600, Size: int64(len(e.body)), Format: tar.FormatPAX}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if e.size != 0 {
			h.Size = e.size
		}
		must(t, tw.WriteHeader(h))
		if len(e.body) > 0 {
			tw.Write([]byte(e.body)) // may be short or long on purpose; the error is irrelevant
		}
	}
	tw.Flush()
	if m != nil || len(es) > 0 {
		tw.Close()
	}
	return buf.Bytes()
}

// sparseTar is okEntries plus "Default/hole", a PAX sparse file (GNU tar's
// format 1.0, as `tar --sparse --format=pax` writes it) of size zero bytes
// that are all one hole: 512 bytes in the archive. archive/tar reads such
// an entry as size bytes of zeros, but cannot write one, so its headers are
// written by hand.
func sparseTar(t testing.TB, size int64) []byte {
	t.Helper()
	zeros := sha256.New()
	_, _ = io.CopyN(zeros, zeroReader{}, size)
	m := manifestOf(okEntries)
	m.Files = append(m.Files, File{Path: "Default/hole", Type: TypeFile, Mode: 0o600, Size: size, SHA256: hex.EncodeToString(zeros.Sum(nil))})
	m.FileCount++
	m.RawSize += size
	if m.FormatVersion >= 2 {
		m.FilesSHA256 = filesDigest(m.Files)
	}
	full := tarOf(t, m, okEntries)
	// tarOf ends with the digest entry (version 2) and two zero blocks;
	// the sparse entry goes before them both.
	var tail []byte
	if m.FormatVersion >= 2 {
		d, err := json.Marshal(Digest{FilesSHA256: m.FilesSHA256})
		must(t, err)
		tail = tarOf(t, nil, []entry{file(DigestPath, string(d))})
		tail = tail[:len(tail)-1024]
	}
	body := full[:len(full)-1024-len(tail)]
	var recs bytes.Buffer
	for _, kv := range [][2]string{{"GNU.sparse.major", "1"}, {"GNU.sparse.minor", "0"}, {"GNU.sparse.name", "Default/hole"}, {"GNU.sparse.realsize", fmt.Sprint(size)}} {
		rec := " " + kv[0] + "=" + kv[1] + "\n"
		n := len(rec) + 1
		for len(fmt.Sprint(n))+len(rec) != n {
			n++
		}
		fmt.Fprintf(&recs, "%d%s", n, rec)
	}
	out := append([]byte{}, body...)
	out = append(out, rawTarHeader("PaxHeaders/hole", tar.TypeXHeader, int64(recs.Len()))...)
	out = append(out, padBlock(recs.Bytes())...)
	sparseMap := padBlock([]byte(fmt.Sprintf("1\n%d\n0\n", size)))
	out = append(out, rawTarHeader("GNUSparseFile.0/hole", tar.TypeReg, int64(len(sparseMap)))...)
	out = append(out, sparseMap...)
	out = append(out, tail...)
	return append(out, make([]byte, 1024)...)
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// rawTarHeader is a ustar header block that archive/tar would not write.
func rawTarHeader(name string, typ byte, size int64) []byte {
	b := make([]byte, 512)
	copy(b[0:100], name)
	copy(b[100:], "0000600\x00")
	copy(b[108:], "0000000\x00")
	copy(b[116:], "0000000\x00")
	copy(b[124:], fmt.Sprintf("%011o\x00", size))
	copy(b[136:], "00000000000\x00")
	b[156] = typ
	copy(b[257:], "ustar\x0000")
	copy(b[148:156], "        ")
	sum := 0
	for _, c := range b {
		sum += int(c)
	}
	copy(b[148:], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

func padBlock(b []byte) []byte {
	return append(b, make([]byte, (512-len(b)%512)%512)...)
}

func zstdOf(t testing.TB, b []byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	must(t, err)
	return enc.EncodeAll(b, nil)
}

func archiveOf(t testing.TB, m *Manifest, es []entry) []byte { return zstdOf(t, tarOf(t, m, es)) }

var okEntries = []entry{dir("Default"), file("Default/Preferences", "{}"), file("Local State", "{}")}

// hostileCase is an archive that Verify and Restore must refuse with code,
// under opts.
type hostileCase struct {
	name string
	arc  func(t *testing.T) []byte
	opts ExtractOptions
	code errcode.Code
}

// check runs Verify on the case's archive and a Restore over an existing
// profile (assertRestoreFails), and returns Verify's error.
func (tt hostileCase) check(t *testing.T) error {
	t.Helper()
	arc := tt.arc(t)
	_, err := Verify(context.Background(), bytes.NewReader(arc), tt.opts)
	wantCode(t, err, tt.code)
	assertRestoreFails(t, bytes.NewReader(arc), RestoreOptions{ExtractOptions: tt.opts}, tt.code)
	t.Logf("%v", err)
	return err
}

func TestHostileArchives(t *testing.T) {
	good := append(slices.Clone(okEntries), file("Default/Cookies", strings.Repeat("cookie", 1000)))
	zeros := strings.Repeat("\x00", 64<<20)
	tests := []hostileCase{
		{"absolute path in tar", func(t *testing.T) []byte {
			return archiveOf(t, manifestOf(okEntries), append(slices.Clone(okEntries), file("/tmp/evil", "x")))
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"absolute path in manifest", func(t *testing.T) []byte {
			es := append(slices.Clone(okEntries), file("/tmp/evil", "x"))
			return archiveOf(t, manifestOf(es), es)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"dot-dot path", func(t *testing.T) []byte {
			es := append(slices.Clone(okEntries), file("../evil", "x"))
			return archiveOf(t, manifestOf(es), es)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"dot-dot inside path", func(t *testing.T) []byte {
			return archiveOf(t, manifestOf(okEntries), append(slices.Clone(okEntries), file("Default/../../evil", "x")))
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"symlink escape relative", func(t *testing.T) []byte {
			es := append(slices.Clone(okEntries), symlink("Default/out", "../../outside"))
			return archiveOf(t, manifestOf(es), es)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"symlink escape through symlink chain", func(t *testing.T) []byte {
			es := append(slices.Clone(okEntries), symlink("Default/up", ".."), symlink("out", "Default/up/.."))
			return archiveOf(t, manifestOf(es), es)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"symlink absolute target", func(t *testing.T) []byte {
			es := append(slices.Clone(okEntries), symlink("Default/passwd", "/etc/passwd"))
			return archiveOf(t, manifestOf(es), es)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"symlink target differs from manifest", func(t *testing.T) []byte {
			es := append(slices.Clone(okEntries), symlink("Default/l", "Preferences"))
			m := manifestOf(es)
			es[len(es)-1].link = "/etc/passwd"
			return archiveOf(t, m, es)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"entry through a symlinked dir", func(t *testing.T) []byte {
			es := append(slices.Clone(okEntries), symlink("d", "Default"), file("d/Preferences2", "x"))
			return archiveOf(t, manifestOf(es), es)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"entry through a symlink listed as a dir", func(t *testing.T) []byte {
			es := append(slices.Clone(okEntries), dir("d"), file("d/x", "x"))
			m := manifestOf(es)
			es[len(okEntries)] = symlink("d", "Default")
			return archiveOf(t, m, es)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"hardlink", func(t *testing.T) []byte {
			return archiveOf(t, manifestOf(okEntries), append(slices.Clone(okEntries), entry{name: "Default/h", typ: tar.TypeLink, link: "Local State"}))
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"char device", func(t *testing.T) []byte {
			return archiveOf(t, manifestOf(okEntries), append(slices.Clone(okEntries), entry{name: "Default/null", typ: tar.TypeChar}))
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"block device", func(t *testing.T) []byte {
			return archiveOf(t, manifestOf(okEntries), append(slices.Clone(okEntries), entry{name: "Default/sda", typ: tar.TypeBlock}))
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"fifo", func(t *testing.T) []byte {
			return archiveOf(t, manifestOf(okEntries), append(slices.Clone(okEntries), entry{name: "Default/fifo", typ: tar.TypeFifo}))
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"Chrome's lock of another host", func(t *testing.T) []byte {
			es := append(slices.Clone(okEntries), symlink("SingletonLock", "otherhost-4242"))
			return archiveOf(t, manifestOf(es), es)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"a dead Chrome's DevTools port", func(t *testing.T) []byte {
			es := append(slices.Clone(okEntries), file("DevToolsActivePort", "9222\n/devtools/browser/x"))
			return archiveOf(t, manifestOf(es), es)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"path longer than a profile can hold", func(t *testing.T) []byte {
			es, p := slices.Clone(okEntries), "Default"
			for len(p) <= MaxPathLen {
				p += "/d"
				es = append(es, dir(p))
			}
			es = append(es, file(p+"/f", "x"))
			return archiveOf(t, manifestOf(es), es)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"duplicate entry", func(t *testing.T) []byte {
			return archiveOf(t, manifestOf(okEntries), append(slices.Clone(okEntries), file("Local State", "{}")))
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"duplicate in manifest", func(t *testing.T) []byte {
			m := manifestOf(okEntries)
			m.Files = append(m.Files, m.Files[2])
			m.FileCount++
			m.RawSize += 2
			return archiveOf(t, m, okEntries)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"entry not in manifest", func(t *testing.T) []byte {
			return archiveOf(t, manifestOf(okEntries), append(slices.Clone(okEntries), file("Default/extra", "x")))
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"entry larger than manifest says", func(t *testing.T) []byte {
			m := manifestOf(okEntries)
			es := slices.Clone(okEntries)
			es[1] = file("Default/Preferences", "{} and much more")
			return archiveOf(t, m, es)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"hash mismatch", func(t *testing.T) []byte {
			m := manifestOf(okEntries)
			es := slices.Clone(okEntries)
			es[1] = file("Default/Preferences", "[]")
			return archiveOf(t, m, es)
		}, ExtractOptions{}, errcode.SnapshotCorrupt},
		{"missing file", func(t *testing.T) []byte {
			return archiveOf(t, manifestOf(okEntries), okEntries[:2])
		}, ExtractOptions{}, errcode.SnapshotCorrupt},
		{"manifest not first", func(t *testing.T) []byte {
			b, _ := json.Marshal(manifestOf(okEntries))
			return archiveOf(t, nil, append([]entry{file("Local State", "{}"), file(ManifestPath, string(b))}, okEntries[:2]...))
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"no manifest at all", func(t *testing.T) []byte {
			return archiveOf(t, nil, okEntries)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"manifest over size bound", func(t *testing.T) []byte {
			return archiveOf(t, manifestOf(okEntries), okEntries)
		}, ExtractOptions{MaxManifestBytes: 100}, errcode.UnsafeArchive},
		{"too many files", func(t *testing.T) []byte {
			return archiveOf(t, manifestOf(okEntries), okEntries)
		}, ExtractOptions{MaxFiles: 2}, errcode.UnsafeArchive},
		{"oversized archive", func(t *testing.T) []byte {
			return archiveOf(t, manifestOf(good), good)
		}, ExtractOptions{MaxArchiveBytes: 300}, errcode.UnsafeArchive},
		{"bomb declared in manifest", func(t *testing.T) []byte {
			es := append(slices.Clone(okEntries), file("Default/zeros", zeros))
			return archiveOf(t, manifestOf(es), es)
		}, ExtractOptions{MaxUnpackedBytes: 8 << 20}, errcode.UnsafeArchive},
		{"bomb after the tar end", func(t *testing.T) []byte {
			return zstdOf(t, append(tarOf(t, manifestOf(okEntries), okEntries), zeros...))
		}, ExtractOptions{MaxUnpackedBytes: 8 << 20}, errcode.UnsafeArchive},
		{"data after the tar end", func(t *testing.T) []byte {
			return zstdOf(t, append(tarOf(t, manifestOf(okEntries), okEntries), "trailing"...))
		}, ExtractOptions{}, errcode.SnapshotCorrupt},
		{"truncated stream", func(t *testing.T) []byte {
			b := archiveOf(t, manifestOf(good), good)
			return b[:len(b)*2/3]
		}, ExtractOptions{}, errcode.SnapshotCorrupt},
		{"truncated at the frame end", func(t *testing.T) []byte {
			b := archiveOf(t, manifestOf(good), good)
			return b[:len(b)-2]
		}, ExtractOptions{}, errcode.SnapshotCorrupt},
		{"bit flip in the compressed stream", func(t *testing.T) []byte {
			b := archiveOf(t, manifestOf(good), good)
			b[len(b)/2] ^= 0x10
			return b
		}, ExtractOptions{}, errcode.SnapshotCorrupt},
		{"not zstd", func(t *testing.T) []byte {
			return tarOf(t, manifestOf(okEntries), okEntries)
		}, ExtractOptions{}, errcode.SnapshotCorrupt},
		{"empty input", func(t *testing.T) []byte { return nil }, ExtractOptions{}, errcode.SnapshotCorrupt},
		{"sparse entry (holes no limit counts)", func(t *testing.T) []byte {
			return zstdOf(t, sparseTar(t, 64<<20))
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"unknown format version", func(t *testing.T) []byte {
			m := manifestOf(okEntries)
			m.FormatVersion = FormatVersion + 1
			return archiveOf(t, m, okEntries)
		}, ExtractOptions{}, errcode.SnapshotCorrupt},
	}
	defer func() { archiveVersion = FormatVersion }()
	for _, v := range []int{1, 2, FormatVersion} {
		archiveVersion = v
		for _, tt := range tests {
			t.Run(fmt.Sprintf("v%d/%s", v, tt.name), func(t *testing.T) {
				if err := tt.check(t); errcode.HintOf(err) == "" {
					t.Errorf("error %q has no hint", err)
				}
			})
		}
	}
}

// Format 3 lists no directory that holds a listed entry: its path implies
// it. A restore creates implied directories 0700, outermost first, and
// refuses a manifest or stream that would make one anything else, or put an
// entry below a file or a symlink. Each case is a version 3 archive without
// the directory entries Create leaves out.
func TestImpliedDirectories(t *testing.T) {
	if FormatVersion < 3 {
		t.Fatal("format 3 is the first with implied directories")
	}
	// implied lists es as Create does: every directory with a listed entry
	// below it left out.
	implied := func(es []entry) []entry {
		var out []entry
		for i, e := range es {
			if e.typ == tar.TypeDir && i+1 < len(es) && strings.HasPrefix(es[i+1].name, e.name) {
				continue
			}
			out = append(out, e)
		}
		return out
	}
	deep := implied([]entry{dir("Default"), dir("Default/Network"), file("Default/Network/Cookies", "c"),
		dir("Default/Session Storage"), file("Local State", "{}"), dir("empty")})
	if len(deep) != 4 {
		t.Fatalf("implied left %d entries, want 4", len(deep))
	}
	t.Run("restores", func(t *testing.T) {
		parent := t.TempDir()
		dst := filepath.Join(parent, "p")
		if _, err := Restore(context.Background(), bytes.NewReader(archiveOf(t, manifestOf(deep), deep)), dst, RestoreOptions{}); err != nil {
			t.Fatalf("Restore: %v", err)
		}
		got := dirState(t, dst)
		want := map[string]string{".": "dir -rwx------", "Default": "dir -rwx------", "Default/Network": "dir -rwx------",
			"Default/Session Storage": "dir -rwx------", "empty": "dir -rwx------"}
		for p, w := range want {
			if got[filepath.FromSlash(p)] != w {
				t.Errorf("%s restored as %q, want %q", p, got[filepath.FromSlash(p)], w)
			}
		}
		if b, err := os.ReadFile(filepath.Join(dst, "Default", "Network", "Cookies")); err != nil || string(b) != "c" {
			t.Errorf("Cookies: %q, %v", b, err)
		}
		if len(got) != len(want)+2 {
			t.Errorf("restored %d entries, want %d: %v", len(got), len(want)+2, got)
		}
	})
	tests := []hostileCase{
		{"an implied directory listed later as a symlink", func(t *testing.T) []byte {
			es := append(slices.Clone(deep), symlink("Default", "elsewhere"))
			return archiveOf(t, manifestOf(es), es)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"an implied directory listed later as a file", func(t *testing.T) []byte {
			es := append(slices.Clone(deep), file("Default", "x"))
			return archiveOf(t, manifestOf(es), es)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"an implied directory listed later as a directory", func(t *testing.T) []byte {
			es := append(slices.Clone(deep), dir("Default/Network"))
			return archiveOf(t, manifestOf(es), es)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"an implied directory as a stream entry", func(t *testing.T) []byte {
			return archiveOf(t, manifestOf(deep), append(slices.Clone(deep), dir("Default")))
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"a file below a listed file", func(t *testing.T) []byte {
			es := append(slices.Clone(deep), file("Local State/x", "x"))
			return archiveOf(t, manifestOf(es), es)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"a file two levels below a symlink", func(t *testing.T) []byte {
			es := append(slices.Clone(deep), symlink("out", ".."), file("out/d/passwd", "x"))
			return archiveOf(t, manifestOf(es), es)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"a file before its listed directory in the stream", func(t *testing.T) []byte {
			es := append(slices.Clone(deep), dir("listed"), file("listed/x", "x"))
			m := manifestOf(es)
			n := len(es)
			es[n-2], es[n-1] = es[n-1], es[n-2]
			return archiveOf(t, m, es)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"a Chrome runtime file's name as an implied directory", func(t *testing.T) []byte {
			es := append(slices.Clone(deep), file("SingletonLock/x", "x"))
			return archiveOf(t, manifestOf(es), es)
		}, ExtractOptions{}, errcode.UnsafeArchive},
		{"implied directories over the entry limit", func(t *testing.T) []byte {
			es := []entry{file("a/b/c/d/e/f/g/h/i/j/k", "x")}
			return archiveOf(t, manifestOf(es), es)
		}, ExtractOptions{MaxFiles: 10}, errcode.UnsafeArchive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t) })
	}
	// The same archive as version 2, which lists every directory, is refused.
	defer func() { archiveVersion = FormatVersion }()
	archiveVersion = 2
	arc := archiveOf(t, manifestOf(deep), deep)
	_, err := Verify(context.Background(), bytes.NewReader(arc), ExtractOptions{})
	wantCode(t, err, errcode.UnsafeArchive)
}

// assertRestoreFails restores r over an existing profile and checks the
// error code, that the profile is byte-for-byte as it was, and that nothing
// new appeared beside it or outside.
func assertRestoreFails(t *testing.T, r io.Reader, opts RestoreOptions, code errcode.Code) {
	t.Helper()
	base := t.TempDir()
	parent := filepath.Join(base, "profiles")
	profile := filepath.Join(parent, "work")
	writeTree(t, profile, map[string]string{"Local State": "old", "Default/Preferences": "old prefs", "Default/l": "->Preferences"})
	must(t, os.WriteFile(filepath.Join(base, "outside"), []byte("outside"), 0o600))
	before, beforeBase := dirState(t, profile), dirState(t, base)

	_, err := Restore(context.Background(), r, profile, opts)
	wantCode(t, err, code)
	if after := dirState(t, profile); !mapsEqual(before, after) {
		t.Errorf("profile changed:\nbefore %v\nafter  %v", before, after)
	}
	if e := entries(t, parent); !slices.Equal(e, []string{"work"}) {
		t.Errorf("parent holds %v", e)
	}
	if after := dirState(t, base); !mapsEqual(beforeBase, after) {
		t.Errorf("tree around the profile changed:\nbefore %v\nafter  %v", beforeBase, after)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// failingReader returns err after n bytes.
type failingReader struct {
	r   io.Reader
	n   int
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, f.err
	}
	if len(p) > f.n {
		p = p[:f.n]
	}
	n, err := f.r.Read(p)
	f.n -= n
	return n, err
}

func bigArchive(t *testing.T) []byte {
	src := t.TempDir()
	genTree(t, src, 8<<20, 1)
	_, arc := createArchive(t, src, CreateOptions{})
	return arc
}

func TestInterruptedRestoreLeavesProfile(t *testing.T) {
	arc := bigArchive(t)
	t.Run("reader fails midway", func(t *testing.T) {
		boom := errors.New("connection reset")
		assertRestoreFails(t, &failingReader{r: bytes.NewReader(arc), n: len(arc) / 2, err: boom}, RestoreOptions{}, errcode.Internal)
	})
	t.Run("reader error keeps its code", func(t *testing.T) {
		boom := errcode.New(errcode.StorageUnavailable, "bucket went away")
		assertRestoreFails(t, &failingReader{r: bytes.NewReader(arc), n: len(arc) / 2, err: boom}, RestoreOptions{}, errcode.StorageUnavailable)
	})
	t.Run("context cancelled midway", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		r := &cancelAfter{r: bytes.NewReader(arc), n: len(arc) / 2, cancel: cancel}
		base := t.TempDir()
		profile := filepath.Join(base, "work")
		writeTree(t, profile, map[string]string{"Local State": "old"})
		before := dirState(t, profile)
		_, err := Restore(ctx, r, profile, RestoreOptions{})
		if err == nil || !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want a cancellation", err)
		}
		if !mapsEqual(before, dirState(t, profile)) {
			t.Error("profile changed")
		}
		if e := entries(t, base); !slices.Equal(e, []string{"work"}) {
			t.Errorf("parent holds %v", e)
		}
	})
	t.Run("BeforeSwap refuses", func(t *testing.T) {
		refuse := errcode.New(errcode.SnapshotCorrupt, "archive sha256 differs")
		var saw *Manifest
		assertRestoreFails(t, bytes.NewReader(arc), RestoreOptions{BeforeSwap: func(m *Manifest) error {
			saw = m
			return refuse
		}}, errcode.SnapshotCorrupt)
		if saw == nil || saw.FileCount == 0 {
			t.Error("BeforeSwap did not see the manifest")
		}
	})
}

type cancelAfter struct {
	r      io.Reader
	n      int
	cancel func()
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	if c.n <= 0 {
		c.cancel()
	}
	n, err := c.r.Read(p)
	c.n -= n
	return n, err
}

// A restore opens each directory about once in the order Create writes,
// and an archive whose entries jump between deep directories, which would
// make every file reopen its directories from the root, is refused once it
// has opened 16 directories for each entry (a 99 KB archive of that kind
// took a minute to restore).
func TestOpenBudget(t *testing.T) {
	t.Run("Create's order stays well inside", func(t *testing.T) {
		src := t.TempDir()
		genTree(t, src, 4<<20, 3)
		writeTree(t, src, profileTree())
		// A deep, wide corner: 40 levels, a file and 70 sibling
		// directories at each, more than the sinks keep open.
		p := filepath.Join(src, "Default", "Extensions")
		for i := range 40 {
			p = filepath.Join(p, fmt.Sprintf("n%02d", i))
			for k := range 70 {
				must(t, os.MkdirAll(filepath.Join(p, fmt.Sprintf("s%02d", k)), 0o700))
				must(t, os.WriteFile(filepath.Join(p, fmt.Sprintf("s%02d", k), "f"), []byte("x"), 0o600))
			}
			must(t, os.WriteFile(filepath.Join(p, "index.js"), []byte("x"), 0o600))
		}
		m, arc := createArchive(t, src, CreateOptions{Excludes: []string{}})
		root, err := os.OpenRoot(t.TempDir())
		must(t, err)
		defer root.Close()
		out := newWriterSink(root, restoreWriters)
		_, err = readArchive(context.Background(), bytes.NewReader(arc), ExtractOptions{}, out)
		if werr := out.wait(); err == nil {
			err = werr
		}
		must(t, err)
		bound := int64(dirOpensPerEntry*m.Entries() + dirOpensSlack)
		used := bound - out.main.opens.left.Load()
		t.Logf("%d entries (%d listed): %d directory opens", m.Entries(), len(m.Files), used)
		if used > 2*int64(m.Entries()) {
			t.Errorf("restoring %d entries in Create's order opened directories %d times; want at most 2 per entry", m.Entries(), used)
		}
	})
	t.Run("entries that jump between deep directories", func(t *testing.T) {
		var es []entry
		for i := range 400 {
			for _, top := range []string{"p", "q"} {
				es = append(es, file(top+"/"+strings.Repeat("a/", 1400)+fmt.Sprintf("x%d", i), "1"))
			}
		}
		arc := archiveOf(t, manifestOf(es), es)
		_, err := Verify(context.Background(), bytes.NewReader(arc), ExtractOptions{})
		must(t, err) // nothing wrong with it but the cost of writing it
		assertRestoreFails(t, bytes.NewReader(arc), RestoreOptions{}, errcode.UnsafeArchive)
	})
}
