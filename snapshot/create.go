package snapshot

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/klauspost/compress/zstd"

	"director/errcode"
)

// DefaultLevel is the zstd level Create uses when CreateOptions.Level is 0:
// klauspost's SpeedDefault (about zstd -3). Chosen by measurement
// (go run ./bench -level N -restore=false, 150 MB tree): level 3 is as fast
// as `tar -I 'zstd -3 -T0'` and about 10x faster than `tar czf`; level 7
// (SpeedBetterCompression) is about 1.5% smaller but 1.5x slower.
const DefaultLevel = 3

// frameChunk is how much of the tar stream one worker compresses at a time
// (see frameWriter). Bigger chunks compress a little better and cost memory:
// the peak is about (workers+1) × 2 × frameChunk plus one encoder (history
// and tables, about 3 × frameChunk at SpeedBetterCompression) per worker.
// The zstd window Create declares, and its encoders keep to, is
// frameWindow(frameChunk): well under the decoder's bound (decoderMaxWindow)
// and under what `zstd -d` accepts without --long.
const frameChunk = 4 << 20

// maxDefaultWorkers bounds the compressing workers Create starts when
// CreateOptions.Concurrency is 0, whatever the number of cores: every worker
// holds an encoder and a chunk slot, about 18 MB between them, so peak RSS
// grew with the cores. Measured with a 600 MB bench tree through the CLI
// (GOMAXPROCS=N director profile snapshot, /usr/bin/time -v): 2 workers
// 83 MB to the file store and 92 MB to S3 (age, 16 MiB parts), 3 workers
// 91 / 108 MB, 4 workers 107 / 125 MB, 8 workers 174 / 191 MB, 16 workers
// 301 / 319 MB. Two keep a snapshot under 100 MB on any machine; the walk
// still uses every core.
const maxDefaultWorkers = 2

// ownerPerm are the permission bits an archive keeps: the owner's. A
// profile holds live credentials, and Chrome creates some of its files with
// the umask of whoever started it (0644 under 022); group and other bits
// kept in the archive would make a plain `tar -x` of it give them away.
// Restore makes every file 0600 and directory 0700 whatever the archive says.
const ownerPerm fs.FileMode = 0o700

// blockEnder decides where Create ends a compressed block
// (frameWriter.endBlock): where a file's data starts, if the file is large
// (blockEndMin), if it follows a large one, or if its first bytes are
// compressible and the previous file's first bytes were random. klauspost's
// level 3 keeps a block's literals raw unless Huffman coding saves a
// sixteenth of them, so a block that holds random bytes and then the start
// of a text file codes neither; zstd's threshold is about a sixty-fourth.
// Measured on six generated 150 MB trees and two real Chromium profiles
// against `tar -I 'zstd -3 -T0'` (docs/design-notes.md): the large-file rule
// took 6 to 22 KB off every tree and 13 to 22 KB off the profiles, the
// random-then-text rule 8 to 17 KB more. Ending a block before random data
// too was 17 to 39 KB larger on the generated trees (many small random
// files, each then a short block with tables of its own).
type blockEnder struct {
	end                   func()
	prevLarge, prevRandom bool
}

// blockEndMin is the size from which a file's data, and the data after it,
// start a block. 128 KiB and 1 MiB measured within 1 KB of it.
const blockEndMin = 512 << 10

// randomSample is how many of a file's first bytes tell whether its data
// looks random; a smaller file does not change what the last one said.
const randomSample = 1 << 10

// looksRandom says whether a sample of randomSample bytes looks random:
// whether its collision entropy, -log2 of the chance that two of its bytes
// picked at random are equal, is over 7 bits. Uniformly random bytes
// measure about 7.7 over 1 KiB, text and databases well under 6. It counts
// and sums squares, no logarithms: a few hundred nanoseconds a file.
func looksRandom(sample []byte) bool {
	var h [256]uint32
	for _, c := range sample {
		h[c]++
	}
	var sq uint64
	for _, c := range h {
		sq += uint64(c) * uint64(c)
	}
	// sum(c²)/n² < 2⁻⁷
	n := uint64(len(sample))
	return sq<<7 < n*n
}

// atData is called with the first bytes read of a file of size bytes,
// before they are written, and ends a block there if it should.
func (b *blockEnder) atData(size int64, first []byte) {
	large := size >= blockEndMin
	end := large || b.prevLarge
	b.prevLarge = large
	if len(first) >= randomSample {
		random := looksRandom(first[:randomSample])
		end = end || b.prevRandom && !random
		b.prevRandom = random
	}
	if end {
		b.end()
	}
}

// compressWorkers is the number of compressing workers for a requested
// Concurrency: the request when given, else GOMAXPROCS up to
// maxDefaultWorkers.
func compressWorkers(requested int) int {
	if requested > 0 {
		return requested
	}
	return max(1, min(runtime.GOMAXPROCS(0), maxDefaultWorkers))
}

// CreateOptions configures Create.
type CreateOptions struct {
	ID, Profile, Note string
	Host              string    // "" = os.Hostname()
	CreatedAt         time.Time // zero = now
	// Excludes are patterns (see DefaultExcludes for the syntax) left out of
	// the archive. nil means DefaultExcludes(); an empty non-nil slice
	// excludes nothing. The runtime files are excluded regardless.
	Excludes []string
	// Includes re-include paths that Excludes left out.
	Includes []string
	// Level is a zstd level (1..22, mapped onto the encoder's four speeds);
	// 0 means DefaultLevel.
	Level int
	// MaxUnpackedBytes is the unpacked (tar) size over which a restore
	// refuses the archive (ExtractOptions.MaxUnpackedBytes); Create refuses
	// a profile whose archive would unpack to more. 0 means
	// DefaultMaxUnpackedBytes.
	MaxUnpackedBytes int64
	// Progress, when set, follows the archiving of the files' data.
	Progress Progress
	// Concurrency is the number of goroutines that walk the profile and of
	// compressing workers (one chunk each at a time); 0 means GOMAXPROCS
	// walkers and at most maxDefaultWorkers compressing workers, which
	// bounds the memory a snapshot takes on a machine with many cores.
	Concurrency int

	// hooks are for this package's tests.
	hooks createHooks
}

// createHooks let a test act at points of Create: afterScan between the
// walk and the archiving, afterRead after each read of a file being
// archived, frameWorkers when the frame writer starts its workers.
type createHooks struct {
	afterScan    func()
	afterRead    func(rel string)
	frameWorkers func(workers int)
}

// Progress follows Create: Start is told the bytes of file data to archive
// (the manifest's RawSize) once the walk has listed them, before anything is
// written, and Add each part of that data once it is in the tar stream, on
// the goroutine that called Create.
type Progress interface {
	Start(total int64)
	Add(n int64)
}

// fileState is what Create remembers of a file between the walk and its
// archiving, to notice a file that changed in between or while it was read.
type fileState struct {
	size  int64
	stamp statStamp
}

// Create walks the profile tree at dir and writes a zstd-compressed tar
// stream to w. Its first entry is ManifestPath, listing every other entry
// with its type, mode and size, but for directories that hold an entry (the
// paths under them imply them: dropImpliedDirs); each entry follows in the
// same order, each file hashed while it is read
// (one read per file); the last entry is DigestPath, the digest of the
// files' hashes. A file that changes after the walk, or while it is read,
// fails the snapshot (profile_in_use). The returned manifest is the one to
// store beside the archive, with every file's SHA256 and FilesSHA256 set;
// ArchiveKey, ArchiveSize and ArchiveSHA256 are empty: the caller measures
// its output stream.
// The stream is one zstd frame whose chunks of frameChunk bytes of tar are
// compressed by Concurrency workers in parallel, each with the end of the
// chunk before it as history (see frameWriter). Create does not close w.
func Create(ctx context.Context, dir string, w io.Writer, opts CreateOptions) (*Manifest, error) {
	excludes := opts.Excludes
	if excludes == nil {
		excludes = DefaultExcludes()
	}
	sel, err := newSelector(excludes, opts.Includes)
	if err != nil {
		return nil, err
	}
	conc := opts.Concurrency
	if conc <= 0 {
		conc = runtime.GOMAXPROCS(0)
	}
	level := opts.Level
	if level == 0 {
		level = DefaultLevel
	}
	if level < 1 || level > 22 {
		return nil, errcode.New(errcode.InvalidInput, "zstd level %d is out of range", level).WithHint("use a level from 1 to 22")
	}

	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errcode.New(errcode.ProfileNotFound, "profile directory %s does not exist", dir).
			WithHint("check the profile name with `director profile list`")
	case err != nil:
		return nil, internal(err, "reading profile directory %s", dir)
	case !st.IsDir():
		return nil, errcode.New(errcode.InvalidInput, "%s is not a directory", dir)
	}

	files, states, err := scanTree(ctx, dir, sel, len(opts.Includes) > 0, conc)
	if err != nil {
		return nil, err
	}
	files, states = dropImpliedDirs(files, states)
	if opts.hooks.afterScan != nil {
		opts.hooks.afterScan()
	}

	m := &Manifest{
		FormatVersion: FormatVersion,
		ID:            opts.ID,
		Profile:       opts.Profile,
		CreatedAt:     opts.CreatedAt,
		Host:          opts.Host,
		OS:            runtime.GOOS,
		ChromeVersion: chromeVersion(dir),
		Note:          opts.Note,
		Excludes:      excludes,
		Includes:      opts.Includes,
		Files:         files,
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = time.Now()
	}
	m.CreatedAt = m.CreatedAt.UTC()
	if m.Host == "" {
		m.Host, _ = os.Hostname()
	}
	for i := range files {
		if files[i].Type == TypeFile {
			m.FileCount++
			m.RawSize += files[i].Size
		}
	}
	if err := m.validate(); err != nil {
		// What Restore would refuse is the profile's problem here, not an archive's.
		var e *errcode.Error
		if errors.As(err, &e) {
			err = &errcode.Error{Code: errcode.InvalidInput, Msg: "profile cannot be archived safely: " + strings.TrimPrefix(e.Msg, "unsafe archive: "),
				Hint: "remove that entry from the profile or exclude it with an exclude pattern"}
		}
		return nil, err
	}
	mjson, err := json.Marshal(m.inArchive())
	if err != nil {
		return nil, internal(err, "encoding manifest")
	}
	// A restore refuses an archive that unpacks to more than its limit (a
	// bomb guard): such a profile is refused here, before anything is
	// written, rather than stored as a snapshot no restore accepts.
	maxUnpacked := opts.MaxUnpackedBytes
	if maxUnpacked <= 0 {
		maxUnpacked = DefaultMaxUnpackedBytes
	}
	// The limit it names leaves a MiB of room, rounded up to a MiB: the
	// manifest of the next try differs (its time, at least).
	if need := unpackedBound(m, len(mjson)); need > maxUnpacked {
		return nil, overUnpacked(errcode.InvalidInput,
			"leave the biggest files out with an exclude pattern (--exclude GLOB); `du -ah` in the profile directory, sorted with `sort -h`, lists them",
			maxUnpacked, (need+2<<20-1)&^(1<<20-1),
			"profile %s is too big to restore: its %d files hold %s, and with their tar headers that is over the %s (%d bytes) a restore unpacks",
			dir, m.FileCount, SizeText(m.RawSize), SizeText(maxUnpacked), maxUnpacked)
	}

	workers := compressWorkers(opts.Concurrency)
	if opts.hooks.frameWorkers != nil {
		opts.hooks.frameWorkers(workers)
	}
	fw, err := newFrameWriter(ctx, w, zstd.EncoderLevelFromZstd(level), frameChunk, workers)
	if err != nil {
		return nil, err
	}
	defer fw.abort()
	if opts.Progress != nil {
		opts.Progress.Start(m.RawSize)
	}
	if err := writeTar(ctx, dir, fw, m, mjson, states, opts.Progress, opts.hooks.afterRead); err != nil {
		return nil, err
	}
	if err := fw.Close(); err != nil {
		return nil, err
	}
	return m, nil
}

// scanTree lists the entries to archive in filepath.WalkDir's order
// (lexical, parents before children), each regular file with the size, mode
// and stat stamp its lstat gives. With includes it descends into excluded
// directories to find re-included paths, and lists an excluded directory
// only when something under it is listed.
//
// The walk is all system calls (a Chrome profile has thousands of
// directories) and nothing can be written before it ends, since the manifest
// goes first, so conc goroutines read directories from a shared queue and
// the lists are joined in order at the end. Measured on the 150 MB bench
// tree (3,301 files in 2,260 directories): 55 ms on one goroutine, 33 ms on
// two.
func scanTree(ctx context.Context, dir string, sel *selector, descendExcluded bool, conc int) ([]File, []fileState, error) {
	w := &walker{ctx: ctx, root: dir, sel: sel, descend: descendExcluded, scans: map[string]*dirScan{}, todo: []string{""}, pending: 1}
	w.cond = sync.NewCond(&w.mu)
	var wg sync.WaitGroup
	for range max(conc, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.work()
		}()
	}
	wg.Wait()
	if w.err != nil {
		return nil, nil, w.err
	}
	var files []File
	var states []fileState
	w.join("", &files, &states)
	return files, states, nil
}

// dropImpliedDirs leaves out of files (in scanTree's order) every directory
// that holds a listed entry: from format 3 the paths under it imply it. In
// that order a directory's first entry, if it has one, follows it at once.
// The archive is smaller by a tar header and a manifest entry per directory
// (2,260 of the 150 MB bench tree's 5,561 entries: 32 KB of its archive),
// and a restore creates the directory 0700 all the same.
func dropImpliedDirs(files []File, states []fileState) ([]File, []fileState) {
	n := 0
	for i := range files {
		if files[i].Type == TypeDir && i+1 < len(files) && strings.HasPrefix(files[i+1].Path, files[i].Path+"/") {
			continue
		}
		files[n], states[n] = files[i], states[i]
		n++
	}
	return files[:n], states[:n]
}

// walker walks one tree for scanTree.
type walker struct {
	ctx     context.Context
	root    string
	sel     *selector
	descend bool

	mu      sync.Mutex
	cond    *sync.Cond          // signalled when todo grows or pending drops
	todo    []string            // directories to read
	pending int                 // directories queued or being read
	scans   map[string]*dirScan // by directory
	err     error               // the first error; stops the walk
}

// dirScan is what one directory holds, in name order.
type dirScan struct {
	entries  []File
	states   []fileState
	excluded []bool // an excluded directory walked for includes
}

func (w *walker) work() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		for len(w.todo) == 0 && w.pending > 0 && w.err == nil {
			w.cond.Wait()
		}
		if w.pending == 0 || w.err != nil {
			w.cond.Broadcast()
			return
		}
		rel := w.todo[len(w.todo)-1]
		w.todo = w.todo[:len(w.todo)-1]
		w.mu.Unlock()
		sc, err := w.read(rel)
		w.mu.Lock()
		w.pending--
		if err != nil && w.err == nil {
			w.err = err
		}
		if err == nil {
			w.scans[rel] = sc
			for i, f := range sc.entries {
				if f.Type == TypeDir {
					w.todo = append(w.todo, sc.entries[i].Path)
					w.pending++
				}
			}
		}
		w.cond.Broadcast()
	}
}

// read lists one directory ("" for the root).
func (w *walker) read(rel string) (*dirScan, error) {
	if err := w.ctx.Err(); err != nil {
		return nil, ctxErr(err, "snapshot")
	}
	ds, err := os.ReadDir(filepath.Join(w.root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, internal(err, "reading profile")
	}
	sc := &dirScan{}
	for _, d := range ds {
		r := d.Name()
		if rel != "" {
			r = rel + "/" + r
		}
		if w.sel.never(r) {
			continue
		}
		excluded := w.sel.excluded(r)
		if excluded && !(d.IsDir() && w.descend) {
			continue
		}
		f := File{Path: r}
		switch t := d.Type(); {
		case t.IsDir():
			f.Type = TypeDir
		case t.IsRegular():
			f.Type = TypeFile
		case t&fs.ModeSymlink != 0:
			f.Type = TypeSymlink
			if f.Link, err = os.Readlink(filepath.Join(w.root, filepath.FromSlash(r))); err != nil {
				return nil, changedOr(err, r)
			}
		default:
			continue // sockets, fifos, devices: nothing a profile needs
		}
		fi, err := d.Info()
		if err != nil {
			return nil, changedOr(err, r)
		}
		if fi.Mode().Type() != d.Type() {
			return nil, changed(r)
		}
		f.Mode = uint32(fi.Mode().Perm() & ownerPerm)
		var st fileState
		if f.Type == TypeFile {
			f.Size = fi.Size()
			st = fileState{size: f.Size, stamp: stampOf(fi)}
		}
		sc.entries = append(sc.entries, f)
		sc.states = append(sc.states, st)
		sc.excluded = append(sc.excluded, excluded)
	}
	return sc, nil
}

// join appends the subtree under rel in order and says whether it added
// anything.
func (w *walker) join(rel string, files *[]File, states *[]fileState) bool {
	sc := w.scans[rel]
	added := false
	for i, f := range sc.entries {
		mark := len(*files)
		*files = append(*files, f)
		*states = append(*states, sc.states[i])
		sub := f.Type == TypeDir && w.join(f.Path, files, states)
		if sc.excluded[i] && !sub {
			*files, *states = (*files)[:mark], (*states)[:mark]
			continue
		}
		added = true
	}
	return added
}

func changed(rel string) error {
	return errcode.New(errcode.ProfileInUse, "%s changed while the snapshot was being taken", rel).WithHint(hintBusy)
}

// openListed opens a regular file the walk listed, without following a
// symlink that has taken its place since.
func openListed(dir, rel string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, filepath.FromSlash(rel)), os.O_RDONLY|openNoFollow, 0)
}

func changedOr(err error, rel string) error {
	if errors.Is(err, fs.ErrNotExist) || isSymlinkLoop(err) {
		return changed(rel)
	}
	return internal(err, "reading %s", rel)
}

// writeTar writes the manifest entry, every listed entry, and the digest
// entry. Each regular file is hashed on the way (filling in its SHA256 in m)
// by a fileHasher, so that the reading goroutine only reads and copies.
// prog, when not nil, is told the file data as it is written.
func writeTar(ctx context.Context, dir string, w io.Writer, m *Manifest, mjson []byte, states []fileState, prog Progress, afterRead func(rel string)) error {
	tw := tar.NewWriter(w)
	mtime := m.CreatedAt.Truncate(time.Second)
	if err := writeEntry(tw, ManifestPath, mjson, mtime); err != nil {
		return err
	}
	fh := newFileHasher(m.Files)
	defer fh.wait()
	var ends *blockEnder
	if fw, ok := w.(*frameWriter); ok {
		ends = &blockEnder{end: fw.endBlock}
	}
	for i := range m.Files {
		if err := ctx.Err(); err != nil {
			return ctxErr(err, "snapshot")
		}
		f := &m.Files[i]
		hdr := &tar.Header{Name: f.Path, Mode: int64(f.Mode), ModTime: mtime}
		switch f.Type {
		case TypeDir:
			hdr.Typeflag, hdr.Name = tar.TypeDir, f.Path+"/"
		case TypeSymlink:
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, f.Link
		case TypeFile:
			hdr.Typeflag, hdr.Size = tar.TypeReg, f.Size
		}
		if f.Type != TypeFile {
			if err := tw.WriteHeader(hdr); err != nil {
				return writeFailed(err)
			}
			continue
		}
		if err := copyFile(dir, tw, hdr, f, states[i], fh, i, prog, afterRead, ends); err != nil {
			return err
		}
	}
	fh.wait()
	m.FilesSHA256 = filesDigest(m.Files)
	dj, err := json.Marshal(Digest{FilesSHA256: m.FilesSHA256})
	if err != nil {
		return internal(err, "encoding digest")
	}
	if err := writeEntry(tw, DigestPath, dj, mtime); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return writeFailed(err)
	}
	return nil
}

// writeEntry writes one of the archive's own .director entries.
func writeEntry(tw *tar.Writer, name string, b []byte, mtime time.Time) error {
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o600, Size: int64(len(b)), ModTime: mtime, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return writeFailed(err)
	}
	if _, err := tw.Write(b); err != nil {
		return writeFailed(err)
	}
	return nil
}

// copyFile archives file i, f, handing its bytes to fh as well, and fails
// (profile_in_use) if it is not the file the walk saw, or changes while it
// is copied: the size and stat stamp (inode, mtime, ctime; any write moves
// the ctime) are checked when it is opened and again after the copy. It
// opens without following symlinks, so a file swapped for a symlink since
// the walk never gets another file's bytes archived under its name. prog,
// when not nil, is told the bytes once they are written; ends, when not
// nil, sees the file's first bytes before they are written (blockEnder).
func copyFile(dir string, tw *tar.Writer, hdr *tar.Header, f *File, st fileState, fh *fileHasher, i int, prog Progress, afterRead func(rel string), ends *blockEnder) error {
	in, err := openListed(dir, f.Path)
	if err != nil {
		return changedOr(err, f.Path)
	}
	defer in.Close()
	same := func() error {
		fi, err := in.Stat()
		if err != nil {
			return internal(err, "reading %s", f.Path)
		}
		if !fi.Mode().IsRegular() || fi.Size() != st.size || stampOf(fi) != st.stamp {
			return changed(f.Path)
		}
		return nil
	}
	if err := same(); err != nil {
		return err
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return writeFailed(err)
	}
	var n int64
	for n < f.Size {
		buf := fh.buffer()
		k, err := in.Read(buf[:min(int64(len(buf)), f.Size-n)])
		if n == 0 && ends != nil {
			ends.atData(f.Size, buf[:k])
		}
		fh.add(buf[:k])
		if afterRead != nil {
			afterRead(f.Path)
		}
		if k > 0 {
			if _, werr := tw.Write(buf[:k]); werr != nil {
				return writeFailed(werr)
			}
			n += int64(k)
			if prog != nil {
				prog.Add(int64(k))
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return internal(err, "reading %s", f.Path)
		}
	}
	if n != f.Size {
		return changed(f.Path)
	}
	if err := same(); err != nil {
		return err
	}
	fh.end(i)
	return nil
}

// fileHasher computes the sha256 of the files Create archives on a
// goroutine of its own, from the buffers the reading goroutine fills: the
// reading goroutine reads a buffer, copies it into the tar stream and hands
// it over; the hasher hashes it and frees it. One goroutine keeps each
// file's bytes in order, and a few buffers bound the memory (hasherBuffers
// × hasherBufferSize). Measured on the 150 MB bench tree: hashing in line
// on the reading goroutine made it the bottleneck (it fed the compressing
// workers slower than they worked).
type fileHasher struct {
	files []File // SHA256 set by the hasher; read only after wait
	free  chan []byte
	work  chan hashJob
	done  chan struct{}
	once  sync.Once
}

type hashJob struct {
	b   []byte // a buffer of the current file, or nil
	end bool   // file i is complete
	i   int
}

const (
	hasherBuffers    = 4
	hasherBufferSize = 512 << 10
)

func newFileHasher(files []File) *fileHasher {
	fh := &fileHasher{
		files: files,
		free:  make(chan []byte, hasherBuffers),
		work:  make(chan hashJob, hasherBuffers+1),
		done:  make(chan struct{}),
	}
	for range hasherBuffers {
		fh.free <- make([]byte, hasherBufferSize)
	}
	go fh.run()
	return fh
}

func (fh *fileHasher) run() {
	defer close(fh.done)
	h := sha256.New()
	var sum [sha256.Size]byte
	for j := range fh.work {
		switch {
		case j.end:
			fh.files[j.i].SHA256 = hex.EncodeToString(h.Sum(sum[:0]))
			h.Reset()
		default:
			h.Write(j.b)
			fh.free <- j.b[:cap(j.b)]
		}
	}
}

// buffer returns a free buffer, waiting for the hasher to free one.
func (fh *fileHasher) buffer() []byte { return <-fh.free }

// add hands over a buffer (of the current file) from buffer.
func (fh *fileHasher) add(b []byte) { fh.work <- hashJob{b: b} }

// end marks the current file, file i, complete.
func (fh *fileHasher) end(i int) { fh.work <- hashJob{end: true, i: i} }

// wait stops the hasher once it has hashed everything handed over.
func (fh *fileHasher) wait() {
	fh.once.Do(func() {
		close(fh.work)
		<-fh.done
	})
}

// chromeVersion reads "Last Version" at the profile root; "" if absent or odd.
func chromeVersion(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "Last Version"))
	if err != nil || len(b) > 64 {
		return ""
	}
	v := strings.TrimSpace(string(b))
	for _, r := range v {
		if !unicode.IsPrint(r) {
			return ""
		}
	}
	return v
}

// writeFailed reports a failure to write the archive. The frame writer's
// errors already carry their codes (a cancelled or timed-out snapshot, a
// failing output stream) and pass through as they are.
func writeFailed(err error) error {
	var e *errcode.Error
	if errors.As(err, &e) {
		return err
	}
	return internal(err, "writing archive")
}

// unpackedBound is at least the size of the tar stream Create writes for m
// with a manifest entry of manifestLen bytes: every entry's data, padded to
// 512 bytes, its header, and a PAX header with its path and link, plus the
// manifest and digest entries and the two zero blocks that end the stream.
func unpackedBound(m *Manifest, manifestLen int) int64 {
	// A header, a PAX header, the padding of the PAX records and of the
	// data; the records themselves hold the path and the link, and a few
	// fields of under 40 bytes each.
	const perEntry = 4*512 + 256
	n := int64(manifestLen) + maxDigestBytes + 2*(perEntry+2*int64(len(ManifestPath))) + 1024
	for i := range m.Files {
		f := &m.Files[i]
		n += perEntry + 2*int64(len(f.Path)+len(f.Link)) + f.Size
	}
	return n
}

// SizeText is n bytes in GiB, MiB or KiB, one decimal (a small limit read
// "0.0 MiB").
func SizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}
