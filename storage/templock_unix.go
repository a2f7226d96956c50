//go:build unix

package storage

import (
	"os"
	"syscall"
)

// lockTemp takes an exclusive flock on a Put's temporary file without
// waiting. A Put holds it while it writes; the kernel drops it when the
// process dies, so a sweeper that gets it knows the file is abandoned.
func lockTemp(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
