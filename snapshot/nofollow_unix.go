//go:build linux || darwin || freebsd

package snapshot

import (
	"errors"
	"syscall"
)

// openNoFollow makes the open of a file to archive fail on a symlink: the
// walk saw a regular file there, and a symlink swapped in since must not
// make the snapshot read (and archive under the profile's name) whatever it
// points to.
const openNoFollow = syscall.O_NOFOLLOW

// isSymlinkLoop reports the error an openNoFollow open gives on a symlink.
func isSymlinkLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }
