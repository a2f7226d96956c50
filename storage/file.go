package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"director/errcode"
)

// fileStore keeps objects as files under dir: key "a/b.tar.zst" is the file
// dir/a/b.tar.zst. Folders are 0700 and files 0600 (archives hold live
// credentials). All access goes through os.Root, so a symlink planted in the
// folder cannot make the store read or write outside it.
type fileStore struct {
	dir string // absolute, cleaned
	// real is dir with the symlinks of its longest existing prefix
	// resolved: two spellings of one folder (a home reached through a
	// symlink) are one store in the catalog.
	real string
	// netFS is the type of the network file system holding the folder
	// (nfs4, cifs, fuse.sshfs…), "" for a local one: see Remote; netMount
	// is its mount point.
	netFS, netMount string
}

const tempPrefix = ".director-put-"

func openFile(rawURL, rest string) (Store, error) {
	p := rest
	if p == "" {
		return nil, badURL(rawURL, "empty path")
	}
	if fileCredentialsEnd(p) >= 0 {
		// Before anything quotes the path: it would show the password.
		return nil, badURL(rawURL, "a file:// URL takes no user or password").WithHint("use file:///abs/path")
	}
	if rest, ok := strings.CutPrefix(p, "localhost/"); ok {
		p = "/" + rest // RFC 8089: file://localhost/path is /path
	}
	if strings.ContainsAny(p, "?#") {
		return nil, badURL(rawURL, "file:// URLs take no query or fragment")
	}
	abs, err := filepath.Abs(filepath.FromSlash(p))
	if err != nil {
		return nil, badURL(rawURL, "%v", err)
	}
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		return nil, errcode.New(errcode.InvalidInput, "store path %s is not a folder", abs).WithHint("point --store at a folder, e.g. file://%s", filepath.Join(filepath.Dir(abs), "snapshots"))
	}
	return newFileStore(abs), nil
}

// OpenDir opens the folder dir as a file store, as Open does a file:// URL
// naming it, but from its path: any name works, also one holding "?", "#"
// or "%" (a file:// URL takes no query or fragment, and its path is taken
// as written). The default store, <home>/snapshots, is opened so, so that a
// home of any name works.
func OpenDir(dir string) (Store, error) {
	if dir == "" {
		return nil, errcode.New(errcode.InvalidInput, "empty store folder").WithHint("give the store folder's path")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.InvalidInput, "store folder %s", dir)
	}
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		return nil, errcode.New(errcode.InvalidInput, "store path %s is not a folder", abs).WithHint("move %s away, or give another store with --store", abs)
	}
	return newFileStore(abs), nil
}

// newFileStore is the store of folder abs (absolute, cleaned).
func newFileStore(abs string) *fileStore {
	s := &fileStore{dir: abs, real: resolvePath(abs)}
	s.netMount, s.netFS = networkMount(abs)
	return s
}

func (s *fileStore) String() string { return "file://" + filepath.ToSlash(s.dir) }

// CatalogID names the store in the catalog by its folder with symlinks
// resolved, so that rows do not depend on the spelling of the path; with
// "?", "#" and "%" escaped when the folder's path holds "?" or "#" (only
// OpenDir opens such a folder), so that the catalog does not read a part of
// the path as a query (a home named /srv/d?token=1 would lose "token=1/…"
// as a secret-looking parameter, and share /srv/d's name).
func (s *fileStore) CatalogID() string {
	p := filepath.ToSlash(s.real)
	if !strings.ContainsAny(p, "?#") {
		return "file://" + p
	}
	return strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace("file://" + p)
}

// SameStore reports whether id, a file store's catalog name as an older
// director or another spelling of a path recorded it, names this store's
// folder: its path as given, or another path whose symlinks lead to the
// same folder. A path on a network mount is not read (a hung server would
// hang every command that asks): such a name matches only as spelled.
func (s *fileStore) SameStore(id string) bool {
	p, ok := strings.CutPrefix(id, "file://")
	if !ok || id == s.CatalogID() {
		return false
	}
	if id == (&fileStore{dir: s.dir, real: s.dir}).CatalogID() {
		return true // this store's own path, as given
	}
	p = filepath.FromSlash(p)
	if !filepath.IsAbs(p) || strings.ContainsAny(p, "?#%") {
		return false // escaped names (see CatalogID) match only as spelled
	}
	mountinfo := readMountinfo()
	onNetwork := func(path string) bool { _, t := networkMountIn(mountinfo, path); return t != "" }
	return resolveWith(filepath.Clean(p), onNetwork) == s.real
}

// resolvePath is p (absolute) with every symlink on it followed, also one
// whose target does not exist (realpath -m): the folder's name stays the
// same whether a disk behind a link is mounted or not. Components past the
// first that does not exist are kept as they are.
func resolvePath(p string) string { return resolveWith(p, nil) }

// resolveWith is resolvePath that reads nothing at a path stop says to
// stop at: it then returns p as given.
func resolveWith(p string, stop func(string) bool) string {
	parts := strings.Split(filepath.Clean(p), string(filepath.Separator))
	cur := string(filepath.Separator)
	for hops := 0; len(parts) > 0; {
		c := parts[0]
		parts = parts[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		if stop != nil && stop(next) {
			return filepath.Clean(p)
		}
		fi, err := os.Lstat(next)
		if err != nil {
			// Not there: the rest cannot hold a link.
			return filepath.Join(append([]string{next}, parts...)...)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		target, err := os.Readlink(next)
		if hops++; err != nil || hops > 40 {
			return filepath.Clean(p) // a loop: keep the path as given
		}
		if filepath.IsAbs(target) {
			cur = string(filepath.Separator)
		}
		parts = append(strings.Split(target, string(filepath.Separator)), parts...)
	}
	return cur
}

// root opens the store folder; with create it makes it first (0700).
// Without create a missing folder is reported as (nil, nil).
func (s *fileStore) root(create bool) (*os.Root, error) {
	if create {
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			return nil, s.localErr("create the store folder", err)
		}
	}
	r, err := os.OpenRoot(s.dir)
	if err != nil {
		if !create && errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, s.localErr("open the store folder", err)
	}
	return r, nil
}

func (s *fileStore) localErr(what string, err error) error {
	hint := "check that " + s.dir + " is a writable folder with free space"
	if errors.Is(err, fs.ErrPermission) {
		hint = "check the permissions of " + s.dir
	}
	return fail(s, what, ProblemLocal, false, hint, err)
}

func (s *fileStore) Put(ctx context.Context, key string, r io.Reader, size int64) (err error) {
	if err := ValidateKey(key); err != nil {
		return err
	}
	what := fmt.Sprintf("put %q", key)
	if err := ctxErr(ctx, s, what); err != nil {
		return err
	}
	root, err := s.root(true)
	if err != nil {
		return err
	}
	defer root.Close()
	if _, err := root.Lstat(key); err == nil {
		return exists(s, key)
	}
	dir := path.Dir(key)
	tmp := path.Join(dir, tempPrefix+randomHex(8)+".tmp")
	sweepTemps(root, dir, false)
	var f *os.File
	for try := 0; ; try++ {
		f, err = createTemp(root, dir, tmp)
		if err == nil {
			break
		}
		// Where the store cannot be locked, a concurrent Delete may remove
		// the folder it just emptied.
		if !errors.Is(err, fs.ErrNotExist) || try == 2 {
			return s.localErr(what, err)
		}
	}
	defer func() {
		root.Remove(tmp) // after a successful Link this removes the temp name only
		f.Close()
	}()

	body := newBody(ctxReader{ctx, r}, size)
	if _, err := io.Copy(f, body); err != nil {
		if cerr := ctxErr(ctx, s, what); cerr != nil {
			return cerr
		}
		if berr := body.bodyFailure(s, key); berr != nil {
			return berr
		}
		return s.localErr(what, err)
	}
	if err := f.Sync(); err != nil {
		return s.localErr(what, err)
	}
	if err := ctxErr(ctx, s, what); err != nil {
		return err
	}
	// f stays open, and so locked, until the file has its name: a sweep
	// would take a closed temporary file for abandoned. Its data is synced,
	// so closing it later can lose nothing.
	// Link, unlike rename, fails when the key exists: two writers can never
	// replace each other's object.
	if err := root.Link(tmp, key); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return exists(s, key)
		}
		return s.localErr(what, err)
	}
	if d, err := root.Open(dir); err == nil {
		serr := d.Sync()
		d.Close()
		if serr != nil {
			return s.localErr(what, serr)
		}
	}
	return nil
}

func (s *fileStore) Get(ctx context.Context, key string) (io.ReadCloser, Object, error) {
	if err := ValidateKey(key); err != nil {
		return nil, Object{}, err
	}
	if err := ctxErr(ctx, s, fmt.Sprintf("get %q", key)); err != nil {
		return nil, Object{}, err
	}
	root, err := s.root(false)
	if err != nil || root == nil {
		if err == nil {
			err = notFound(s, key)
		}
		return nil, Object{}, err
	}
	defer root.Close()
	f, err := root.Open(key)
	if err != nil {
		return nil, Object{}, s.openErr(key, err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			return nil, Object{}, notFound(s, key)
		}
		return nil, Object{}, s.localErr(fmt.Sprintf("get %q", key), err)
	}
	return f, Object{Key: key, Size: fi.Size(), Modified: fi.ModTime().UTC()}, nil
}

func (s *fileStore) openErr(key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) || isNotDir(err) {
		return notFound(s, key)
	}
	return s.localErr(fmt.Sprintf("get %q", key), err)
}

func isNotDir(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "not a directory")
}

func (s *fileStore) Stat(ctx context.Context, key string) (Object, error) {
	if err := ValidateKey(key); err != nil {
		return Object{}, err
	}
	if err := ctxErr(ctx, s, fmt.Sprintf("stat %q", key)); err != nil {
		return Object{}, err
	}
	root, err := s.root(false)
	if err != nil || root == nil {
		if err == nil {
			err = notFound(s, key)
		}
		return Object{}, err
	}
	defer root.Close()
	fi, err := root.Stat(key)
	if err != nil {
		return Object{}, s.openErr(key, err)
	}
	if !fi.Mode().IsRegular() {
		return Object{}, notFound(s, key)
	}
	return Object{Key: key, Size: fi.Size(), Modified: fi.ModTime().UTC()}, nil
}

func (s *fileStore) List(ctx context.Context, prefix string) ([]Object, error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, err
	}
	root, err := s.root(false)
	if err != nil || root == nil {
		return []Object{}, err
	}
	defer root.Close()
	start := "."
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		start = prefix[:i]
	}
	objs := []Object{}
	err = fs.WalkDir(root.FS(), start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
				return fs.SkipDir
			}
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if d.IsDir() {
			// Skip folders that cannot hold a match.
			if p != "." && !strings.HasPrefix(p+"/", prefix) && !strings.HasPrefix(prefix, p+"/") {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(p, prefix) || strings.HasPrefix(path.Base(p), tempPrefix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // deleted while we walked
			}
			return err
		}
		objs = append(objs, Object{Key: p, Size: fi.Size(), Modified: fi.ModTime().UTC()})
		return nil
	})
	if err != nil {
		if cerr := ctxErr(ctx, s, fmt.Sprintf("list %q", prefix)); cerr != nil {
			return nil, cerr
		}
		return nil, s.localErr(fmt.Sprintf("list %q", prefix), err)
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].Key < objs[j].Key })
	return objs, nil
}

func (s *fileStore) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := ctxErr(ctx, s, fmt.Sprintf("delete %q", key)); err != nil {
		return err
	}
	root, err := s.root(false)
	if err != nil || root == nil {
		return err
	}
	defer root.Close()
	fi, err := root.Lstat(key)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
			return nil
		}
		return s.localErr(fmt.Sprintf("delete %q", key), err)
	}
	if fi.IsDir() {
		return nil // a folder is not an object
	}
	if err := root.Remove(key); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return s.localErr(fmt.Sprintf("delete %q", key), err)
	}
	// Also drops folders left empty, so probes and pruned profiles leave
	// no litter.
	sweepTemps(root, path.Dir(key), true)
	return nil
}

// Sweep removes what Puts killed midway left in the folder that prefix
// names ("work/"): their temporary files, which List never shows, and then
// the folder if that leaves it empty. It implements Sweeper.
func (s *fileStore) Sweep(ctx context.Context, prefix string) error {
	dir, ok := strings.CutSuffix(prefix, "/")
	if !ok {
		return badKey(prefix, "a folder prefix ends with a slash")
	}
	if err := ValidateKey(dir); err != nil {
		return err
	}
	if err := ctxErr(ctx, s, fmt.Sprintf("sweep %q", prefix)); err != nil {
		return err
	}
	root, err := s.root(false)
	if err != nil || root == nil {
		return err
	}
	defer root.Close()
	sweepTemps(root, dir, true)
	return nil
}

// createTemp creates dir and a Put's temporary file tmp in it, and locks the
// file (lockTemp), which tells sweepers it is live. It does so under a
// shared lock on the store's folder (lockDir), so that no sweep sees the
// file unlocked, nor removes dir as empty in between.
func createTemp(root *os.Root, dir, tmp string) (*os.File, error) {
	if d, err := root.Open("."); err == nil {
		_ = lockDir(d, false) // best effort: sweeps then fall back to tempGrace
		defer d.Close()
	}
	if err := root.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	_ = lockTemp(f)
	return f, nil
}

// tempGrace is how old a temporary file must be before a sweep that could
// not lock the store (a file system without flock) looks at it: a Put that
// has just created its file may not hold its lock yet.
const tempGrace = time.Minute

// sweepTemps removes the temporary files of Puts into dir that died midway
// (kill -9, a crash): Put removes its own on every error it lives through,
// but a killed one leaves up to a whole archive behind, invisible to List and
// so to every delete. A file is taken for abandoned when no Put holds its
// lock (lockTemp). The sweep holds the store's lock (lockDir) so that a Put's
// file is never seen between its creation and its lock, or, where it cannot
// be locked, leaves files younger than tempGrace alone. With pruneEmpty it
// then removes dir and its parents while they are empty, still under the
// lock, so that no Put loses the folder it has just made. Best effort:
// errors leave the file for the next sweep.
func sweepTemps(root *os.Root, dir string, pruneEmpty bool) {
	d, err := root.Open(".")
	if err != nil {
		return
	}
	defer d.Close()
	grace := time.Duration(0)
	if lockDir(d, true) != nil {
		grace = tempGrace
	}
	removeAbandoned(root, dir, grace)
	for ; pruneEmpty && dir != "."; dir = path.Dir(dir) {
		if root.Remove(dir) != nil { // fails on a folder that is not empty
			break
		}
	}
}

// removeAbandoned removes the temporary files in dir that are at least
// grace old and whose lock no Put holds.
func removeAbandoned(root *os.Root, dir string, grace time.Duration) {
	entries, err := fs.ReadDir(root.FS(), dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(name, tempPrefix) || !strings.HasSuffix(name, ".tmp") {
			continue
		}
		if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < grace {
			continue
		}
		p := path.Join(dir, name)
		f, err := root.OpenFile(p, os.O_RDONLY, 0)
		if err != nil {
			continue
		}
		if lockTemp(f) == nil {
			_ = root.Remove(p)
		}
		f.Close()
	}
}

// ctxReader fails reads once ctx is done, so a Put copying from a slow or
// endless source stops when cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
