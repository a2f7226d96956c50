package workflows

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/gofrs/flock"
)

// An incognito run's profile is a fresh directory that the run removes when
// it ends. It holds what the run logged in with (cookies under the fixed
// v10 key, as good as plaintext), so a run that cannot remove it (killed,
// or a second Ctrl-C, which quits at once) must not leave it for good. The
// run holds a flock on a file in the directory for its whole life: the
// kernel releases it when the process dies, however it dies, and the next
// run that finds such a directory whose lock it can take removes it. A pid
// would be reused, and would not say which machine or namespace it was of.

const (
	incognitoPrefix = "director-incognito-"
	incognitoLock   = ".director-run.lock"
)

// incognitoDir is an incognito run's profile directory, locked while the
// run lives.
type incognitoDir struct {
	path string
	lock *flock.Flock
}

// newIncognitoDir creates a profile directory under base (0700) and locks
// it, after removing those of runs that ended without removing theirs.
func newIncognitoDir(base string, log *slog.Logger) (*incognitoDir, error) {
	sweepIncognito(base, log)
	dir, err := os.MkdirTemp(base, incognitoPrefix)
	if err != nil {
		return nil, err
	}
	// Locked under another name, then renamed: the lock file a sweep
	// finds is always locked while its run lives (flock creates the file
	// before it locks it, and a sweep between the two would take it).
	tmp := filepath.Join(dir, incognitoLock+".new")
	fl := flock.New(tmp, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	ok, err := fl.TryLock()
	if err == nil && ok {
		err = os.Rename(tmp, filepath.Join(dir, incognitoLock))
	}
	if err != nil || !ok {
		_ = fl.Unlock()
		_ = os.RemoveAll(dir)
		return nil, errors.Join(errors.New("cannot lock the incognito profile directory"), err)
	}
	return &incognitoDir{path: dir, lock: fl}, nil
}

// remove removes the directory, then lets its lock go.
func (d *incognitoDir) remove() error {
	err := os.RemoveAll(d.path)
	_ = d.lock.Unlock()
	return err
}

// sweepIncognito removes the incognito profile directories under base whose
// run is gone: those whose lock it can take. One without a lock file is a
// run between creating it and locking it, or of an older director: it is
// left alone.
func sweepIncognito(base string, log *slog.Logger) {
	dirs, err := filepath.Glob(filepath.Join(base, incognitoPrefix+"*"))
	if err != nil {
		return
	}
	for _, dir := range dirs {
		lockPath := filepath.Join(dir, incognitoLock)
		if _, err := os.Lstat(lockPath); err != nil {
			continue
		}
		fl := flock.New(lockPath, flock.SetFlag(os.O_RDWR))
		ok, err := fl.TryLock()
		if err != nil || !ok {
			continue // a run that lives, or a file not ours to open
		}
		if err := os.RemoveAll(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			log.Warn("cannot remove the profile an incognito run left", "dir", dir, "err", err)
		} else {
			log.Info("removed the profile an incognito run left", "dir", dir)
		}
		_ = fl.Unlock()
	}
}
