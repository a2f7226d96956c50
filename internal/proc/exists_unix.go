//go:build unix

package proc

import (
	"errors"
	"syscall"
)

// exists reports whether pid exists: signal 0 checks it without sending
// anything; EPERM means it exists under another user.
func exists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
