//go:build !unix

package launcher

import "os"

// processAlive reports whether pid is a live process on this host. Outside
// unix it can only tell whether the pid can be found, which errs on the side
// of "in use".
func processAlive(pid int, _ int64) (bool, string) {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false, "is not running"
	}
	_ = p.Release()
	return true, ""
}
