package testenv

import (
	"os"
	"strconv"
	"syscall"
	"testing"
)

// SmallDisk mounts a tmpfs of size bytes on a new temporary directory and
// returns it, so that a test can fill a real file system (ENOSPC); the
// cleanup unmounts it. Mounting needs root (CAP_SYS_ADMIN): without it the
// test is skipped, under CI too, since no package installs that.
func SmallDisk(t testing.TB, size int64) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "director-small-disk-")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.FormatInt(size, 10)+",mode=0700"); err != nil {
		os.Remove(dir)
		t.Skipf("cannot mount a small tmpfs to fill (%v): run as root to test a full disk", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
			return
		}
		os.Remove(dir)
	})
	return dir
}
