//go:build !unix

package storage

import (
	"errors"
	"os"
)

var errNoLocks = errors.New("file locks are not supported on this system")

// lockTemp is unsupported here: without it no temporary file is ever taken
// for abandoned, so none is swept.
func lockTemp(*os.File) error { return errNoLocks }

// lockDir is unsupported here; sweeps then wait tempGrace.
func lockDir(*os.File, bool) error { return errNoLocks }
