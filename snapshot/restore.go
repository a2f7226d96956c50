package snapshot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"director/errcode"
)

// RestoreOptions configures Restore.
type RestoreOptions struct {
	ExtractOptions
	// BeforeSwap, if set, runs after the archive has been extracted and
	// checked against its manifest, and before it is synced to disk and
	// swapped in. An error aborts the restore and leaves the old profile
	// untouched: the caller checks the outer archive's hash here (the stream
	// has been read to its end), or the Chrome version.
	BeforeSwap func(m *Manifest) error
	// Status, if set, is told what Restore does once the archive has been
	// read and BeforeSwap has accepted it, since a progress bar of the
	// download then stands at its end: "syncing to disk", and "removing the
	// old profile" after the swap. Both take seconds for a large profile. A
	// restore that BeforeSwap refuses reports no phase.
	Status func(phase string)
}

func (o RestoreOptions) status(phase string) {
	if o.Status != nil {
		o.Status(phase)
	}
}

// Restore extracts the archive read from r into a fresh sibling directory of
// profileDir (".<name>.restore-*") through os.Root, rejecting anything
// unsafe, checks every entry against the manifest, syncs it to disk, and then
// swaps it with profileDir, which need not exist. Directories are created
// 0700 and files 0600. On any error the temporary directory is removed and
// profileDir is left as it was; nothing is written outside the temporary
// directory before the swap.
func Restore(ctx context.Context, r io.Reader, profileDir string, opts RestoreOptions) (_ *Manifest, err error) {
	defer func() { err = diskFull(err, filepath.Dir(filepath.Clean(profileDir))) }()
	profileDir, err = filepath.Abs(profileDir)
	if err != nil {
		return nil, internal(err, "resolving %s", profileDir)
	}
	parent, name := filepath.Split(profileDir)
	if fi, err := os.Lstat(profileDir); err == nil && !fi.IsDir() {
		return nil, errcode.New(errcode.InvalidInput, "%s exists and is not a directory", profileDir).
			WithHint("move it away, or restore into another profile")
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, internal(err, "checking %s", profileDir)
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, internal(err, "creating %s", parent)
	}
	tmp, err := os.MkdirTemp(parent, "."+name+".restore-")
	if err != nil {
		return nil, internal(err, "creating a temporary directory beside %s", profileDir)
	}
	swapped := false
	defer func() {
		if !swapped {
			RemoveTree(tmp)
		}
	}()
	root, err := os.OpenRoot(tmp)
	if err != nil {
		return nil, internal(err, "opening %s", tmp)
	}
	out := newWriterSink(root, restoreWriters)
	m, err := readArchive(ctx, r, opts.ExtractOptions, out)
	// Always wait for the writers, even after a failure: the deferred
	// RemoveAll must not race a writer still creating files in tmp.
	if werr := out.wait(); err == nil {
		err = werr
	}
	root.Close()
	if err != nil {
		return nil, err
	}
	// The caller's checks come before the sync, so that a restore they
	// refuse never said it was syncing (and does not wait for it).
	if opts.BeforeSwap != nil {
		if err := opts.BeforeSwap(m); err != nil {
			return nil, err
		}
	}
	opts.status("syncing to disk")
	if err := syncTree(tmp); err != nil {
		return nil, internal(err, "syncing the restored profile to disk")
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxErr(err, "restore")
	}
	old, err := swapDirs(tmp, profileDir)
	if err != nil {
		return nil, internal(err, "swapping the restored profile into %s", profileDir)
	}
	swapped = true
	if err := syncDir(parent); err != nil {
		return m, nil // the swap happened; only its durability is in doubt
	}
	if old != "" {
		// A failure leaves it to the next locked call's sweep (Leftovers).
		opts.status("removing the old profile")
		RemoveTree(old)
	}
	return m, nil
}

// swapDirs puts the directory tmp at dst. If dst existed, the old tree ends up
// at the returned path, for the caller to remove.
func swapDirs(tmp, dst string) (old string, err error) {
	if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
		return "", os.Rename(tmp, dst)
	}
	// Atomic where the system can: dst is never missing, not even for a moment.
	if err := exchange(tmp, dst); err == nil {
		return tmp, nil
	} else if !errors.Is(err, errExchangeUnsupported) {
		return "", err
	}
	old = filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".old-"+randomSuffix())
	if err := os.Rename(dst, old); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dst); err != nil {
		if rerr := os.Rename(old, dst); rerr != nil {
			return "", errors.Join(err, rerr)
		}
		return "", err
	}
	return old, nil
}

func randomSuffix() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
