package snapshot

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
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
	// Concurrency bounds the hashing workers and the compressing workers
	// (one zstd frame each at a time); 0 means GOMAXPROCS.
	Concurrency int
}

// testHookAfterScan runs between the hashing and the archiving pass in tests.
var testHookAfterScan func()

// fileState is what Create remembers of a file between the hashing pass and
// the archiving pass, to notice a file that changed in between.
type fileState struct {
	size  int64
	stamp statStamp
}

// Create walks the profile tree at dir and writes a zstd-compressed tar
// stream to w. Its first entry is ManifestPath, listing every other entry
// with its size and sha256, so a hashing pass over the files (in parallel)
// precedes the archiving pass; a file that changes between the two passes
// fails the snapshot (profile_in_use). The returned manifest has ArchiveKey,
// ArchiveSize and ArchiveSHA256 empty: the caller measures its output stream.
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
	if testHookAfterScan != nil {
		testHookAfterScan()
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
	mjson, err := json.Marshal(m)
	if err != nil {
		return nil, internal(err, "encoding manifest")
	}

	fw, err := newFrameWriter(ctx, w, zstd.EncoderLevelFromZstd(level), frameChunk, conc)
	if err != nil {
		return nil, err
	}
	defer fw.abort()
	if err := writeTar(ctx, dir, fw, m, mjson, states); err != nil {
		return nil, err
	}
	if err := fw.Close(); err != nil {
		return nil, err
	}
	return m, nil
}

// scanTree lists the entries to archive, parents before children, and hashes
// every regular file with conc workers that start while the walk goes on.
// With includes it descends into excluded directories to find re-included
// paths, and lists their excluded ancestors too.
func scanTree(ctx context.Context, dir string, sel *selector, descendExcluded bool, conc int) ([]File, []fileState, error) {
	type job struct {
		i     int
		file  File // Path in; Size, Mode, SHA256 out
		state fileState
		err   error
	}
	var jobs []*job
	next := make(chan *job, 64)
	var wg sync.WaitGroup
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256<<10)
			h := sha256.New()
			for j := range next {
				if err := ctx.Err(); err != nil {
					j.err = ctxErr(err, "snapshot")
					continue
				}
				j.err = hashFile(dir, &j.file, &j.state, h, buf)
			}
		}()
	}
	var files []File
	listed := map[string]bool{}
	var addParents func(rel string) error
	addParents = func(rel string) error {
		d := path.Dir(rel)
		if d == "." || listed[d] {
			return nil
		}
		if err := addParents(d); err != nil {
			return err
		}
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(d)))
		if err != nil {
			return internal(err, "reading profile")
		}
		listed[d] = true
		files = append(files, File{Path: d, Type: TypeDir, Mode: uint32(fi.Mode().Perm())})
		return nil
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return internal(err, "reading profile")
		}
		if err := ctx.Err(); err != nil {
			return ctxErr(err, "snapshot")
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return internal(err, "reading profile")
		}
		rel = filepath.ToSlash(rel)
		if sel.never(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if sel.excluded(rel) {
			if d.IsDir() && !descendExcluded {
				return filepath.SkipDir
			}
			return nil
		}
		var f File
		switch t := d.Type(); {
		case t.IsDir():
			f.Type = TypeDir
		case t.IsRegular():
			f.Type = TypeFile
		case t&fs.ModeSymlink != 0:
			f.Type = TypeSymlink
			if f.Link, err = os.Readlink(p); err != nil {
				return internal(err, "reading symlink")
			}
		default:
			return nil // sockets, fifos, devices: nothing a profile needs
		}
		if err := addParents(rel); err != nil {
			return err
		}
		f.Path = rel
		if f.Type != TypeFile { // a file's mode and size come from the hashing pass's fstat
			fi, err := d.Info()
			if err != nil {
				return internal(err, "reading profile")
			}
			f.Mode = uint32(fi.Mode().Perm())
		}
		if f.Type == TypeDir {
			listed[rel] = true
		}
		if f.Type == TypeFile {
			j := &job{i: len(files), file: f}
			jobs = append(jobs, j)
			next <- j
		}
		files = append(files, f)
		return nil
	})
	close(next)
	wg.Wait()
	if err != nil {
		return nil, nil, err
	}
	states := make([]fileState, len(files))
	for _, j := range jobs {
		if j.err != nil {
			return nil, nil, j.err
		}
		files[j.i], states[j.i] = j.file, j.state
	}
	return files, states, nil
}

func hashFile(dir string, f *File, st *fileState, h hashWriter, buf []byte) error {
	fh, err := openListed(dir, f.Path)
	if err != nil {
		return changedOr(err, f.Path)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return internal(err, "reading %s", f.Path)
	}
	h.Reset()
	// A plain read loop: io.CopyBuffer would take *os.File's WriteTo and
	// read through a fresh 32 KiB buffer of its own for every file.
	var n int64
	for {
		k, err := fh.Read(buf)
		h.Write(buf[:k])
		n += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			return internal(err, "reading %s", f.Path)
		}
	}
	if n != fi.Size() {
		return changed(f.Path)
	}
	f.Size, f.Mode = n, uint32(fi.Mode().Perm())
	f.SHA256 = hex.EncodeToString(h.Sum(nil))
	st.size, st.stamp = n, stampOf(fi)
	return nil
}

type hashWriter interface {
	io.Writer
	Reset()
	Sum([]byte) []byte
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

// writeTar writes the manifest entry and then every listed entry.
func writeTar(ctx context.Context, dir string, w io.Writer, m *Manifest, mjson []byte, states []fileState) error {
	tw := tar.NewWriter(w)
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: ManifestPath, Mode: 0o600, Size: int64(len(mjson)), ModTime: m.CreatedAt.Truncate(time.Second), Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return writeFailed(err)
	}
	if _, err := tw.Write(mjson); err != nil {
		return writeFailed(err)
	}
	buf := make([]byte, 1<<20)
	for i := range m.Files {
		if err := ctx.Err(); err != nil {
			return ctxErr(err, "snapshot")
		}
		f := &m.Files[i]
		hdr := &tar.Header{Name: f.Path, Mode: int64(f.Mode), ModTime: m.CreatedAt.Truncate(time.Second)}
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
		if err := copyFile(dir, tw, hdr, f, states[i], buf); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return writeFailed(err)
	}
	return nil
}

// copyFile archives one regular file, failing if it is not the file the
// hashing pass saw: not the same size, or touched since.
func copyFile(dir string, tw *tar.Writer, hdr *tar.Header, f *File, st fileState, buf []byte) error {
	fh, err := openListed(dir, f.Path)
	if err != nil {
		return changedOr(err, f.Path)
	}
	defer fh.Close()
	if err := tw.WriteHeader(hdr); err != nil {
		return writeFailed(err)
	}
	n, err := io.CopyBuffer(tw, io.LimitReader(fh, f.Size), buf)
	if err != nil {
		if errors.Is(err, tar.ErrWriteTooLong) {
			return changed(f.Path)
		}
		return writeFailed(err)
	}
	if n != f.Size {
		return changed(f.Path)
	}
	// One fstat after the copy catches a change at any time since the
	// hashing pass: any write moves the ctime.
	fi, err := fh.Stat()
	if err != nil {
		return internal(err, "reading %s", f.Path)
	}
	if fi.Size() != st.size || stampOf(fi) != st.stamp {
		return changed(f.Path)
	}
	return nil
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
