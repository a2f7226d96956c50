//go:build !linux

package snapshot

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

var errExchangeUnsupported = errors.New("atomic exchange unsupported")

func exchange(a, b string) error { return errExchangeUnsupported }

// syncTree fsyncs every file and directory under dir.
func syncTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Sync()
	})
}
