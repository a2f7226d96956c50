//go:build !unix

package storage

import (
	"errors"
	"os"
)

// lockTemp is unsupported here: without it no temporary file is ever taken
// for abandoned, so none is swept.
func lockTemp(*os.File) error { return errors.New("file locks are not supported on this system") }
