package snapshot

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"

	"director/errcode"
)

// Defaults of ExtractOptions.
const (
	DefaultMaxArchiveBytes  = 500 << 20
	DefaultMaxUnpackedBytes = 4 << 30
	DefaultMaxFiles         = 200_000
	DefaultMaxManifestBytes = 64 << 20
)

// decoderMaxWindow bounds the zstd window a stream may ask for, and so the
// decoder's memory. Create writes frameWindow(frameChunk).
const decoderMaxWindow = 16 << 20

// ExtractOptions bounds what reading an archive may cost (zero fields take
// the defaults above) and may name the manifest the archive must match.
type ExtractOptions struct {
	MaxArchiveBytes  int64 // compressed bytes read from the stream
	MaxUnpackedBytes int64 // decompressed bytes (the tar stream), a bomb guard
	MaxFiles         int   // entries in the manifest, and (from version 3) the directories they imply
	MaxManifestBytes int64 // size of the manifest entry
	// Expect, when set, is the manifest stored beside the archive: the
	// archive's own manifest must list the same entries, and every file
	// must have the sha256 Expect gives it, so that a damaged file is named.
	// Without it an archive of version 2 or later is checked against its
	// own digest.
	Expect *Manifest
	// ManifestRead, if set, is given the archive's own manifest once it
	// has been read and parsed, before the entries that follow: a caller
	// then knows which profile an archive that fails later belongs to.
	ManifestRead func(m *Manifest)
}

// maxDigestBytes bounds the DigestPath entry; Create writes about 80 bytes.
const maxDigestBytes = 4 << 10

func (o ExtractOptions) withDefaults() ExtractOptions {
	if o.MaxArchiveBytes <= 0 {
		o.MaxArchiveBytes = DefaultMaxArchiveBytes
	}
	if o.MaxUnpackedBytes <= 0 {
		o.MaxUnpackedBytes = DefaultMaxUnpackedBytes
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.MaxManifestBytes <= 0 {
		o.MaxManifestBytes = DefaultMaxManifestBytes
	}
	return o
}

// Verify reads an archive stream to its end without writing anything and
// checks every entry against the manifest: paths, types, sizes, nothing
// extra, nothing missing, and every file's sha256 (against the manifest in
// a version 1 archive, against the digest entry from version 2 on, and
// against opts.Expect when set). It returns the manifest with every file's
// SHA256 (and, from version 2, FilesSHA256) filled in.
func Verify(ctx context.Context, r io.Reader, opts ExtractOptions) (*Manifest, error) {
	return readArchive(ctx, r, opts, discardSink{})
}

// sink receives the checked entries of an archive, parents first.
type sink interface {
	// bound is told, once the manifest has been read, how many entries
	// (listed and implied) the archive creates.
	bound(entries int)
	mkdir(f *File) error
	symlink(f *File) error
	create(f *File) (io.WriteCloser, error)
}

type discardSink struct{}

func (discardSink) bound(int)                            {}
func (discardSink) mkdir(*File) error                    { return nil }
func (discardSink) symlink(*File) error                  { return nil }
func (discardSink) create(*File) (io.WriteCloser, error) { return nopWriteCloser{io.Discard}, nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// limitedReader counts the bytes read through it, fails once more than max
// have been read, and watches ctx. It remembers its own failure, so that the
// caller can tell it from whatever error the layers above made of it.
type limitedReader struct {
	r    io.Reader
	ctx  context.Context
	max  int64
	over func() error // the error for passing max
	// source marks the reader of the caller's stream: its errors are kept
	// (with their codes). The decoder's errors are classified later.
	source bool

	mu  sync.Mutex // the zstd decoder reads from its own goroutine
	n   int64
	err error
}

func (l *limitedReader) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return 0, l.err
	}
	if err := l.ctx.Err(); err != nil {
		l.err = ctxErr(err, "reading the archive")
		return 0, l.err
	}
	// Up to one byte past max, which proves the stream longer; left+1
	// would overflow for a max of math.MaxInt64 (l.n never passes max
	// here: that failed above).
	if left := l.max - l.n; int64(len(p))-1 > left {
		p = p[:left+1]
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	if l.n > l.max {
		l.err = l.over()
		return n, l.err
	}
	if l.source && err != nil && err != io.EOF {
		// The source's own error (a network failure, say) keeps its code.
		if errcode.Of(err) == errcode.Internal {
			err = internal(err, "reading the archive")
		}
		l.err = err
	}
	return n, err
}

func (l *limitedReader) failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// archiveReader walks one archive stream.
type archiveReader struct {
	in, unpacked *limitedReader
	// need is what the tar stream of the manifest's entries can unpack to
	// (unpackedBound), once the manifest has been read.
	need int64
}

// classify turns an error from the zstd or tar layers into a coded one.
func (a *archiveReader) classify(err error, where string) error {
	if e := a.in.failure(); e != nil {
		return e
	}
	if e := a.unpacked.failure(); e != nil {
		return e
	}
	if errcode.Of(err) != errcode.Internal {
		return err
	}
	if errors.Is(err, tar.ErrInsecurePath) {
		return unsafeArchive("%s: %v", where, err)
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return corrupt(err, "%s", where)
}

func readArchive(ctx context.Context, r io.Reader, opts ExtractOptions, out sink) (*Manifest, error) {
	opts = opts.withDefaults()
	a := &archiveReader{
		in: &limitedReader{r: r, ctx: ctx, source: true, max: opts.MaxArchiveBytes, over: func() error {
			return unsafeArchive("the archive is larger than the %d-byte limit", opts.MaxArchiveBytes)
		}},
	}
	zr, err := zstd.NewReader(a.in,
		zstd.WithDecoderConcurrency(2),
		zstd.WithDecoderMaxWindow(decoderMaxWindow),
		zstd.WithDecoderMaxMemory(decoderMaxWindow))
	if err != nil {
		return nil, internal(err, "starting zstd decoder")
	}
	defer zr.Close()
	a.unpacked = &limitedReader{r: zr, ctx: ctx, max: opts.MaxUnpackedBytes, over: func() error {
		if a.need > opts.MaxUnpackedBytes {
			// The manifest's entries can unpack to that much: not a bomb.
			return overUnpacked(errcode.UnsafeArchive, hintAltered, opts.MaxUnpackedBytes, a.need,
				"unsafe archive: the archive unpacks to more than the %d-byte limit", opts.MaxUnpackedBytes)
		}
		return unsafeArchive("the archive unpacks to more than the %d-byte limit (a decompression bomb?)", opts.MaxUnpackedBytes)
	}}
	tr := tar.NewReader(a.unpacked)

	m, err := a.readManifest(tr, opts)
	if err != nil {
		return nil, err
	}
	out.bound(m.Entries())
	if opts.ManifestRead != nil {
		opts.ManifestRead(m)
	}
	want, err := expectedHashes(m, opts.Expect)
	if err != nil {
		return nil, err
	}
	index := make(map[string]int, len(m.Files))
	for i := range m.Files {
		index[m.Files[i].Path] = i
	}
	seen := make([]bool, len(m.Files))
	made := make(map[string]bool, m.implied) // implied directories created so far
	sums := make([][sha256.Size]byte, len(m.Files))
	var digest *Digest
	differs := -1 // the first file whose hash differs from opts.Expect's
	h := sha256.New()
	buf := make([]byte, 256<<10)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, a.classify(err, "reading the tar stream")
		}
		name := hdr.Name
		if hdr.Typeflag == tar.TypeDir {
			name = strings.TrimSuffix(name, "/")
		}
		if digest != nil {
			return nil, unsafeArchive("entry %q follows %s, which must be the last entry", name, DigestPath)
		}
		if name == DigestPath && m.FormatVersion >= 2 {
			if digest, err = a.readDigest(tr, hdr); err != nil {
				return nil, err
			}
			continue
		}
		if err := checkEntryType(hdr); err != nil {
			return nil, err
		}
		if err := checkPath(name); err != nil {
			return nil, err
		}
		i, ok := index[name]
		if !ok {
			return nil, unsafeArchive("entry %q is not in the manifest", name)
		}
		if seen[i] {
			return nil, unsafeArchive("entry %q appears twice", name)
		}
		seen[i] = true
		f := &m.Files[i]
		if want := tarType(f.Type); hdr.Typeflag != want {
			return nil, unsafeArchive("entry %q is a %s in the archive but a %s in the manifest", name, typeName(hdr.Typeflag), f.Type)
		}
		if d := path.Dir(name); d != "." {
			if err := makeParents(d, name, index, seen, made, out); err != nil {
				return nil, err
			}
		}
		switch f.Type {
		case TypeDir:
			err = out.mkdir(f)
		case TypeSymlink:
			if hdr.Linkname != f.Link {
				return nil, unsafeArchive("symlink %q points to %q in the archive but to %q in the manifest", name, hdr.Linkname, f.Link)
			}
			err = out.symlink(f)
		case TypeFile:
			if hdr.Size > f.Size {
				return nil, unsafeArchive("entry %q holds %d bytes, more than the %d the manifest says", name, hdr.Size, f.Size)
			}
			if hdr.Size < f.Size {
				return nil, corrupt(nil, "entry %q holds %d bytes, fewer than the %d the manifest says", name, hdr.Size, f.Size)
			}
			var w io.WriteCloser
			if w, err = out.create(f); err != nil {
				break
			}
			h.Reset()
			_, err = io.CopyBuffer(io.MultiWriter(w, h), tr, buf)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				if errcode.Of(err) == errcode.Internal && !isWriteErr(err) {
					err = a.classify(err, fmt.Sprintf("reading %q", name))
				}
				break
			}
			h.Sum(sums[i][:0])
			if want != nil && want[i] != "" && hex.EncodeToString(sums[i][:]) != want[i] {
				if m.FormatVersion == 1 {
					return nil, corrupt(nil, "content of %q does not match its sha256 in the manifest", name)
				}
				// The stored manifest's word against the archive's:
				// its digest, at the end, tells which one is wrong.
				if differs < 0 {
					differs = i
				}
			}
		}
		if err != nil {
			return nil, err
		}
	}
	for i, ok := range seen {
		if !ok {
			missing := 0
			for _, s := range seen[i:] {
				if !s {
					missing++
				}
			}
			if missing == 1 {
				return nil, corrupt(nil, "the archive lacks %q, listed in the manifest", m.Files[i].Path)
			}
			return nil, corrupt(nil, "the archive lacks %q and %d more entries listed in the manifest", m.Files[i].Path, missing-1)
		}
	}
	for i := range m.Files {
		if m.Files[i].Type == TypeFile {
			m.Files[i].SHA256 = hex.EncodeToString(sums[i][:])
		}
	}
	if m.FormatVersion >= 2 {
		if digest == nil {
			return nil, corrupt(nil, "the archive ends without its digest entry %s", DigestPath)
		}
		m.FilesSHA256 = filesDigest(m.Files)
		switch {
		case m.FilesSHA256 != digest.FilesSHA256 && differs >= 0:
			return nil, corrupt(nil, "content of %q does not match its sha256 in the manifest", m.Files[differs].Path)
		case m.FilesSHA256 != digest.FilesSHA256:
			return nil, corrupt(nil, "the files' sha256 digest %s does not match the archive's %s: a file was altered", m.FilesSHA256, digest.FilesSHA256)
		case differs >= 0:
			return nil, errcode.New(errcode.SnapshotCorrupt, "the stored manifest gives %q another sha256 than the archive holds, which matches the archive's own digest",
				m.Files[differs].Path).WithHint(hintStoredManifest)
		}
	}
	// Read to the end: the zstd checksum of the last frame is checked only
	// there, and nothing but tar's zero padding may follow the last entry.
	for {
		n, err := a.unpacked.Read(buf)
		if !allZero(buf[:n]) {
			return nil, corrupt(nil, "data follows the end of the tar archive")
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, a.classify(err, "reading the end of the archive")
		}
	}
	return m, nil
}

func (a *archiveReader) readManifest(tr *tar.Reader, opts ExtractOptions) (*Manifest, error) {
	hdr, err := tr.Next()
	if err == io.EOF {
		return nil, corrupt(nil, "the archive is empty")
	}
	if err != nil {
		return nil, a.classify(err, "reading the first entry")
	}
	if hdr.Name != ManifestPath || hdr.Typeflag != tar.TypeReg {
		return nil, unsafeArchive("the first entry is %q, not the manifest %s", hdr.Name, ManifestPath)
	}
	if hdr.Size > opts.MaxManifestBytes {
		return nil, unsafeArchive("the manifest is %d bytes, over the %d-byte limit", hdr.Size, opts.MaxManifestBytes)
	}
	// Its size is known and bounded: one buffer of it, not ReadAll's
	// doublings (128 MiB for a 64 MiB manifest).
	b := make([]byte, hdr.Size)
	if _, err := io.ReadFull(tr, b); err != nil {
		return nil, a.classify(err, "reading the manifest")
	}
	// Counted before the manifest is decoded: 64 MiB of JSON listing a
	// million entries took 380 MB to decode only to be refused.
	// (ParseManifest counts against DefaultMaxFiles itself.)
	if opts.MaxFiles < DefaultMaxFiles && countEntries(b, opts.MaxFiles) > opts.MaxFiles {
		return nil, unsafeArchive("the manifest lists more than %d entries, the limit", opts.MaxFiles)
	}
	m, err := ParseManifest(b)
	if err != nil {
		return nil, err
	}
	if n := m.Entries(); n > opts.MaxFiles {
		if n > len(m.Files) {
			return nil, unsafeArchive("the manifest's %d entries imply %d directories more: %d in all, over the limit of %d", len(m.Files), n-len(m.Files), n, opts.MaxFiles)
		}
		return nil, unsafeArchive("the manifest lists %d entries, over the limit of %d", n, opts.MaxFiles)
	}
	a.need = unpackedBound(m, len(b))
	if m.RawSize > opts.MaxUnpackedBytes {
		return nil, overUnpacked(errcode.UnsafeArchive, hintAltered, opts.MaxUnpackedBytes, a.need,
			"unsafe archive: the manifest declares %d bytes, over the %d-byte unpacked limit", m.RawSize, opts.MaxUnpackedBytes)
	}
	return m, nil
}

// readDigest reads the DigestPath entry of an archive of version 2 or later.
func (a *archiveReader) readDigest(tr *tar.Reader, hdr *tar.Header) (*Digest, error) {
	if hdr.Typeflag != tar.TypeReg {
		return nil, unsafeArchive("%s is a %s, not a file", DigestPath, typeName(hdr.Typeflag))
	}
	if hdr.Size > maxDigestBytes {
		return nil, unsafeArchive("%s is %d bytes, over the %d-byte limit", DigestPath, hdr.Size, maxDigestBytes)
	}
	b, err := io.ReadAll(tr)
	if err != nil {
		return nil, a.classify(err, "reading "+DigestPath)
	}
	var d Digest
	if err := decodeStrict(b, &d, DigestPath); err != nil {
		return nil, err
	}
	if !isSHA256Hex(d.FilesSHA256) {
		return nil, corrupt(nil, "%s holds no valid files_sha256", DigestPath)
	}
	return &d, nil
}

// expectedHashes checks the archive's manifest m against the stored one
// (expect, may be nil) and returns the sha256 each file must have, by
// index, or nil when only the digest entry can tell.
func expectedHashes(m, expect *Manifest) ([]string, error) {
	var want []string
	switch {
	case m.FormatVersion == 1:
		want = make([]string, len(m.Files))
		for i := range m.Files {
			want[i] = m.Files[i].SHA256
		}
	case m.FilesSHA256 != "":
		return nil, corrupt(nil, "the archive's manifest lists file hashes; a version %d archive keeps them in %s", m.FormatVersion, DigestPath)
	}
	if expect == nil {
		return want, nil
	}
	if expect.ID != m.ID || len(expect.Files) != len(m.Files) {
		return nil, errcode.New(errcode.SnapshotCorrupt, "the stored manifest (id %s, %d entries) describes another archive than this one (id %s, %d entries)",
			expect.ID, len(expect.Files), m.ID, len(m.Files)).WithHint(hintStoredManifest)
	}
	if want == nil {
		want = make([]string, len(m.Files))
	}
	for i := range m.Files {
		g, e := &m.Files[i], &expect.Files[i]
		if g.Path != e.Path || g.Type != e.Type || g.Mode != e.Mode || g.Size != e.Size || g.Link != e.Link ||
			(want[i] != "" && e.SHA256 != "" && want[i] != e.SHA256) {
			return nil, errcode.New(errcode.SnapshotCorrupt, "the stored manifest and the archive's own differ at entry %q", e.Path).WithHint(hintStoredManifest)
		}
		if want[i] == "" {
			want[i] = e.SHA256
		}
	}
	return want, nil
}

// makeParents checks that the directory dir, which holds entry name, and
// those above it exist: each is a listed directory the stream has already
// given, or a directory the manifest implies (version 3), which it creates,
// outermost first, unless an earlier entry made it. validate has checked
// that a listed one is a directory and that no entry lists an implied one.
func makeParents(dir, name string, index map[string]int, seen []bool, made map[string]bool, out sink) error {
	var todo []string
	for d := dir; d != "." && !made[d]; d = parentDir(d) {
		if j, ok := index[d]; ok {
			if !seen[j] {
				return unsafeArchive("entry %q comes before its directory %q", name, d)
			}
			break
		}
		todo = append(todo, d)
	}
	for i := len(todo) - 1; i >= 0; i-- {
		if err := out.mkdir(&File{Path: todo[i], Type: TypeDir, Mode: 0o700}); err != nil {
			return err
		}
		made[todo[i]] = true
	}
	return nil
}

func checkEntryType(hdr *tar.Header) error {
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			// archive/tar fills its holes with zeros that no limit on the
			// archive's bytes counts; director never writes one.
			return unsafeArchive("entry %q is a sparse file, which director never writes", hdr.Name)
		}
	}
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeDir, tar.TypeSymlink:
		return nil
	case tar.TypeLink:
		return unsafeArchive("entry %q is a hard link (to %q)", hdr.Name, hdr.Linkname)
	case tar.TypeChar, tar.TypeBlock:
		return unsafeArchive("entry %q is a device file", hdr.Name)
	case tar.TypeFifo:
		return unsafeArchive("entry %q is a fifo", hdr.Name)
	default:
		return unsafeArchive("entry %q has unsupported tar type %q", hdr.Name, hdr.Typeflag)
	}
}

func tarType(t string) byte {
	switch t {
	case TypeDir:
		return tar.TypeDir
	case TypeSymlink:
		return tar.TypeSymlink
	}
	return tar.TypeReg
}

func typeName(t byte) string {
	switch t {
	case tar.TypeDir:
		return TypeDir
	case tar.TypeSymlink:
		return TypeSymlink
	}
	return TypeFile
}

func allZero(b []byte) bool {
	return len(bytes.TrimLeft(b, "\x00")) == 0
}

// writeErr marks a failure of the local disk, as opposed to the stream.
type writeErr struct{ error }

func (e writeErr) Unwrap() error { return e.error }

func isWriteErr(err error) bool {
	var w writeErr
	return errors.As(err, &w)
}

// rootSink writes the entries under an os.Root: nothing can land outside it,
// whatever symlinks the tree holds. os.Root resolves a path one component at
// a time, so the sink keeps the recently used parent directories open, each
// as an os.Root of its own opened through the root, and creates entries with
// a single call relative to their parent.
type rootSink struct {
	root  *os.Root
	dirs  map[string]*os.Root // parent path -> open directory
	opens *openBudget         // shared by the sinks of one restore; nil: no bound
}

const maxOpenDirs = 64

func newRootSink(root *os.Root, opens *openBudget) *rootSink {
	return &rootSink{root: root, dirs: map[string]*os.Root{}, opens: opens}
}

// openBudget bounds how many directories the sinks of one restore open.
// In the order Create writes (each directory's entries together) a
// directory is opened about once, again only after the cache of open
// directories filled up; an archive whose entries jump between deep
// directories makes every file reopen its directories from the root, up to
// 1,500 deep: a 99 KB archive of 6,000 files took a minute to restore
// before this bound.
type openBudget struct {
	left atomic.Int64
}

// dirOpensPerEntry and dirOpensSlack make the bound: a restore of n
// entries may open 16n+4096 directories, several times what Create's order
// takes on the deepest real profiles (TestOpenBudget).
const (
	dirOpensPerEntry = 16
	dirOpensSlack    = 4096
)

func newOpenBudget() *openBudget {
	b := &openBudget{}
	b.left.Store(1 << 62) // until bound says otherwise
	return b
}

func (b *openBudget) bound(entries int) {
	b.left.Store(dirOpensPerEntry*int64(entries) + dirOpensSlack)
}

func (b *openBudget) spend() error {
	if b == nil || b.left.Add(-1) >= 0 {
		return nil
	}
	return unsafeArchive("the archive's entries jump between directories so often that restoring them would open directories more than %d times for each entry (a directory bomb?)", dirOpensPerEntry)
}

func (s *rootSink) bound(entries int) { s.opens.bound(entries) }

// parent returns the directory that holds p and p's last component.
func (s *rootSink) parent(p string) (*os.Root, string, error) {
	dir, base := path.Split(p)
	if dir == "" {
		return s.root, base, nil
	}
	d, err := s.openDir(strings.TrimSuffix(dir, "/"))
	if errcode.Of(err) == errcode.UnsafeArchive {
		return nil, "", err // the open budget
	}
	if err != nil {
		return nil, "", wrapWrite(err, p)
	}
	return d, base, nil
}

// openDir opens dir relative to its own parent, itself cached: one openat
// per directory instead of one per path component.
func (s *rootSink) openDir(dir string) (*os.Root, error) {
	if d := s.dirs[dir]; d != nil {
		return d, nil
	}
	up, base := s.root, dir
	if i := strings.LastIndexByte(dir, '/'); i >= 0 {
		var err error
		if up, err = s.openDir(dir[:i]); err != nil {
			return nil, err
		}
		base = dir[i+1:]
	}
	if err := s.opens.spend(); err != nil {
		return nil, err
	}
	d, err := up.OpenRoot(base)
	if err != nil {
		return nil, err
	}
	if len(s.dirs) >= maxOpenDirs {
		// Forget everything but what is in use: d's ancestors get reopened
		// on demand. Closing up would not invalidate d.
		s.close()
	}
	s.dirs[dir] = d
	return d, nil
}

func (s *rootSink) close() {
	for k, d := range s.dirs {
		d.Close()
		delete(s.dirs, k)
	}
}

func (s *rootSink) mkdir(f *File) error {
	d, base, err := s.parent(f.Path)
	if err != nil {
		return err
	}
	return wrapWrite(d.Mkdir(base, 0o700), f.Path)
}

func (s *rootSink) symlink(f *File) error {
	d, base, err := s.parent(f.Path)
	if err != nil {
		return err
	}
	return wrapWrite(d.Symlink(f.Link, base), f.Path)
}

func (s *rootSink) create(f *File) (io.WriteCloser, error) {
	d, base, err := s.parent(f.Path)
	if err != nil {
		return nil, err
	}
	fh, err := d.OpenFile(base, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, wrapWrite(err, f.Path)
	}
	return fileWriter{fh, f.Path}, nil
}

type fileWriter struct {
	f    *os.File
	name string
}

func (w fileWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	return n, wrapWrite(err, w.name)
}

func (w fileWriter) Close() error { return wrapWrite(w.f.Close(), w.name) }

func wrapWrite(err error, name string) error {
	if err == nil {
		return nil
	}
	return writeErr{internal(err, "writing %q", name)}
}
