package snapshot

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

// Leftovers returns the trees a Restore into profileDir leaves beside it when
// it is killed: ".<name>.restore-<digits>", the tree being extracted, and
// ".<name>.old-<12 hex digits>", the previous tree after a swap by two renames.
// Both hold a profile's data, cookies included. Only a caller that holds the
// profile's lock, so that no Restore of it is running, may remove them.
func Leftovers(profileDir string) ([]string, error) {
	parent, name := filepath.Split(filepath.Clean(profileDir))
	re := regexp.MustCompile(`^\.` + regexp.QuoteMeta(name) + `\.(restore-[0-9]+|old-[0-9a-f]{12})$`)
	entries, err := os.ReadDir(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && re.MatchString(e.Name()) {
			out = append(out, filepath.Join(parent, e.Name()))
		}
	}
	return out, nil
}

// RemoveTree removes the tree at p as os.RemoveAll does, and also when some
// of its directories lack write or search permission for their owner (a
// profile's subdirectory made 0500 by hand): it gives the directories it
// owns 0700 and tries again.
func RemoveTree(p string) error {
	err := os.RemoveAll(p)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(q, 0o700)
		}
		return nil
	})
	return os.RemoveAll(p)
}
