//go:build unix

package storage

import (
	"errors"
	"os"
	"syscall"
)

// lockTemp takes an exclusive flock on a Put's temporary file without
// waiting. A Put holds it while it writes; the kernel drops it when the
// process dies, so a sweeper that gets it knows the file is abandoned.
func lockTemp(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// lockDir takes a flock on the folder d (the store's), waiting for it:
// shared while a Put makes its folder and creates and locks its temporary
// file, exclusive while a sweep looks at the temporary files and removes
// emptied folders. So a sweep that holds it never sees a file whose Put has
// not locked it yet, nor removes a folder a Put has just made. Both hold it
// for a few system calls; closing d releases it.
func lockDir(d *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(d.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
