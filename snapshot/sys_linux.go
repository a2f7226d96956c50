package snapshot

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

var errExchangeUnsupported = errors.New("atomic exchange unsupported")

// exchange swaps two directories atomically (renameat2 RENAME_EXCHANGE).
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return errExchangeUnsupported
	}
	if err != nil {
		return &os.LinkError{Op: "renameat2", Old: a, New: b, Err: err}
	}
	return nil
}

// syncTree makes the tree at dir durable with one syncfs(2) of its
// filesystem: far cheaper than an fsync per file and directory, and it
// covers both data and metadata.
func syncTree(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return &os.PathError{Op: "syncfs", Path: dir, Err: err}
	}
	return nil
}
